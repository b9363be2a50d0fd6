"""Parse and print sizes (20G) and durations (1d12h). Standard library only."""

from __future__ import annotations

import re

_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# ASCII digits only: to Python, "١٠" and "²" are digits too.
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE | re.ASCII)
_DUR_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DUR_PART = re.compile(r"(\d+(?:\.\d+)?)([dhms])", re.ASCII)


def parse_size(text: str) -> int:
    """'20G' -> bytes. Binary units (G = GiB), as nvidia-smi and Slurm use them."""
    m = _SIZE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r}: expected a size like 20G, 512M or 1.5T")
    value = float(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]
    if value < 1:
        raise ValueError(f"{text!r}: a size must be positive")
    return int(value)


def parse_mem(text: str) -> int:
    """A GPU memory size, which must say its unit: '20' is refused with the nearest reading
    ('did you mean 20G?'), since 20 bytes is never meant and --time 10 means minutes."""
    m = _SIZE_RE.fullmatch(text.strip())
    if m and float(m.group(1)) > 0 and not m.group(2) and not re.search(r"B\s*$", text.strip(), re.IGNORECASE):
        raise ValueError(f"{text.strip()!r}: a size needs a unit: did you mean "
                         f"{nearest_size(float(m.group(1)))}?")
    return parse_size(text)


def nearest_size(number: float) -> str:
    """What a unit-less memory figure most likely meant: gigabytes up to a few thousand,
    megabytes up to a few million, bytes beyond."""
    shown = f"{number:g}"
    if number < 4096:
        return f"{shown}G"
    if number < 4 << 20:
        return f"{shown}M"
    return format_size(int(number))


def parse_duration(text: str, allow_zero: bool = False) -> float:
    """'90m', '2h', '1d12h', '45s', '1:30:00', or plain minutes as in Slurm ('30')."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", s, re.ASCII):
        seconds = float(s) * 60
    elif re.fullmatch(r"\d+(:\d{1,2}){1,2}", s, re.ASCII):
        parts = [int(p) for p in s.split(":")]
        while len(parts) < 3:
            parts.insert(0, 0)
        seconds = float(parts[0] * 3600 + parts[1] * 60 + parts[2])
    else:
        parts = _DUR_PART.findall(s)
        if not parts or "".join(v + u for v, u in parts) != s:
            raise ValueError(f"{text!r}: expected a duration like 90m, 2h, 1d12h or 45s")
        seconds = sum(float(v) * _DUR_UNITS[u] for v, u in parts)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{text!r}: a duration must be positive")
    return seconds


# Signals a job cannot catch, or that stop it instead of asking it to save its work.
_UNCATCHABLE = {"SIGKILL", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGCHLD", "SIGCONT"}


def parse_signal(text: str) -> str:
    """'USR1', 'sigusr1', 'SIGTERM' or '10' -> the signal's name, 'SIGUSR1'."""
    import signal

    s = text.strip().upper()
    try:
        sig = signal.Signals(int(s)) if s.isascii() and s.isdigit() else signal.Signals[
            s if s.startswith("SIG") else "SIG" + s]
    except (KeyError, ValueError):
        raise ValueError(f"{text!r}: expected a signal name like USR1, TERM or INT") from None
    if sig.name in _UNCATCHABLE:
        raise ValueError(f"{text!r}: a job cannot catch {sig.name} to save its work; use USR1, "
                         "TERM or INT")
    return sig.name


def format_size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f}{unit}" if value >= 10 or value == int(value) else f"{value:.1f}{unit}"
    return f"{n}B"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if 0 <= s < 60:  # the common case of a long table, without the divisions
        return f"{s}s"
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h"
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


def format_measured(seconds: float | None) -> str:
    """A measured figure (a mean wait, an error): rounded to the second, where an elapsed
    time (format_duration) counts whole seconds as a clock does: 7.98 s is '8s', not '7s'."""
    return format_duration(None if seconds is None else round(seconds))


def iso(ts: float | None) -> str | None:
    """Epoch seconds -> '2026-11-29T16:32:35Z', the form every JSON time takes."""
    if ts is None:
        return None
    from datetime import datetime, timezone

    text = datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")
    return text.replace("+00:00", "Z")


def parse_iso(text: str | None) -> float | None:
    if text is None:
        return None
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
