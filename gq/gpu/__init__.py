"""Pick the card backend for this host: simulated cards, NVML, or none."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gq.gpu.base import CardBackend, NoCards

SIM_ENV = "GQ_SIM_GPUS"

__all__ = ["CardBackend", "NoCards", "open_backend", "SIM_ENV"]


# The layout of the simulated cards a daemon last ran with, in its home's sim/ directory: a
# daemon started later without GQ_SIM_GPUS (a fresh shell) keeps the same cards, so that jobs
# running on them are re-adopted onto cards that exist. GQ_SIM_GPUS=off forgets it.
SPEC_FILE = "spec"
OFF = ("off", "none")


def simulated(home: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether `open_backend(home, env)` gives simulated cards (it reads no card to say so)."""
    env = os.environ if env is None else env
    spec = env.get(SIM_ENV, "").strip()
    if spec.lower() in OFF:
        return False
    return bool(spec) or (home / "sim" / SPEC_FILE).is_file()


def open_backend(home: Path, env: Mapping[str, str] | None = None,
                 register_at: str | None = None) -> CardBackend:
    """The backend a daemon with state directory `home` should use.

    GQ_SIM_GPUS wins so that tests and demos behave the same on a machine that has real cards;
    without it, the simulated cards this home last had. `register_at`: a system daemon's
    socket, through which its jobs register on simulated cards. pynvml and psutil are imported
    only here, inside the branch that needs them: the CLI imports this package on every command
    and must stay light.
    """
    env = os.environ if env is None else env
    spec = env.get(SIM_ENV, "").strip()
    remembered = home / "sim" / SPEC_FILE
    if spec.lower() in OFF:
        remembered.unlink(missing_ok=True)
        return _open_nvml()
    if not spec and remembered.is_file():
        spec = remembered.read_text().strip()
    if spec:
        backend = _open_sim(spec, home, register_at)
        if not remembered.is_file() or remembered.read_text().strip() != spec:
            # Written only when it changed: a restart on a full disk must not need room.
            tmp = remembered.with_name(SPEC_FILE + ".tmp")
            tmp.write_text(spec + "\n")
            os.replace(tmp, remembered)
        return backend
    return _open_nvml()


def _open_sim(spec: str, home: Path, register_at: str | None = None) -> CardBackend:
    from gq.gpu.sim import SimBackend, parse_sim_spec

    try:
        cards = parse_sim_spec(spec)
    except ValueError as e:
        raise ValueError(f"{SIM_ENV}={e}") from None
    return SimBackend(cards, state_dir=home / "sim", register_at=register_at)


def _open_nvml() -> CardBackend:
    from gq.gpu.nvml import NvmlBackend, NvmlUnavailable

    try:
        return NvmlBackend()
    except NvmlUnavailable as e:
        return NoCards(reason=str(e))
