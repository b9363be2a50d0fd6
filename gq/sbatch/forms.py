"""sbatch's value forms: times (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`,
`UNLIMITED`), memory sizes (a bare number is megabytes) and GPU requests (`gpu[:TYPE]:N`)."""

from __future__ import annotations

import re

NO_LIMIT = ("0", "unlimited", "infinite")
_TIME_FORMS = "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
_MEM = re.compile(r"(\d+(?:\.\d+)?)([KMGT]?)B?", re.IGNORECASE | re.ASCII)
_MB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def slurm_time(text: str) -> float | None:
    """Seconds of a Slurm time limit; None for none (0, UNLIMITED, INFINITE)."""
    s = text.strip()
    if s.lower() in NO_LIMIT:
        return None
    days, dash, rest = s.partition("-")
    if not dash:
        days, rest = "", s
    parts = rest.split(":")
    if not all(p.isascii() and p.isdigit() for p in parts) or len(parts) > 3 or (
            dash and not (days.isascii() and days.isdigit())):
        raise ValueError(f"{text!r}: expected a time like {_TIME_FORMS}")
    numbers = [int(p) for p in parts]
    if dash:  # D-HH, D-HH:MM, D-HH:MM:SS
        numbers += [0] * (3 - len(numbers))
        hours, minutes, seconds = numbers
    elif len(numbers) == 1:  # MM
        hours, minutes, seconds = 0, numbers[0], 0
    elif len(numbers) == 2:  # MM:SS
        hours, (minutes, seconds) = 0, numbers
    else:
        hours, minutes, seconds = numbers
    total = ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds
    if total == 0:
        return None
    return float(total)


def slurm_mem(text: str) -> int | None:
    """Bytes of a Slurm memory size (`16G`, `4000` = MB); None for `0` (all of it)."""
    m = _MEM.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r}: expected a size like 16G or 4000 (megabytes)")
    megabytes = float(m.group(1)) * _MB[(m.group(2) or "M").upper()]
    if megabytes == 0:
        return None
    return int(megabytes * (1 << 20))


def gpu_request(text: str, gres: bool) -> tuple[str | None, int]:
    """(type, count) of `gpu:a100:2` (--gres) or `a100:2` / `2` (--gpus)."""
    parts = text.strip().split(":")
    if gres:
        if parts[0] != "gpu":
            raise ValueError(f"{text!r}: gq knows only the gpu resource (gpu[:TYPE]:N)")
        parts = parts[1:] or ["1"]
    if len(parts) == 1 and not parts[0].isdigit():
        parts = [parts[0], "1"]  # gpu:a100 is one of them
    if len(parts) > 2 or not (parts[-1].isascii() and parts[-1].isdigit()):
        raise ValueError(f"{text!r}: expected {'gpu[:TYPE]:N' if gres else '[TYPE:]N'}")
    return (parts[0] if len(parts) == 2 else None), int(parts[-1])
