"""Pick the card backend for this host: simulated cards, NVML, or none."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gq.gpu.base import CardBackend, NoCards

SIM_ENV = "GQ_SIM_GPUS"

__all__ = ["CardBackend", "NoCards", "open_backend", "SIM_ENV"]


def open_backend(home: Path, env: Mapping[str, str] | None = None) -> CardBackend:
    """The backend a daemon with state directory `home` should use.

    GQ_SIM_GPUS wins so that tests and demos behave the same on a machine that has real cards.
    pynvml and psutil are imported only here, inside the branch that needs them: the CLI imports
    this package on every command and must stay light.
    """
    env = os.environ if env is None else env
    spec = env.get(SIM_ENV, "").strip()
    if spec:
        return _open_sim(spec, home)
    return _open_nvml()


def _open_sim(spec: str, home: Path) -> CardBackend:
    from gq.gpu.sim import SimBackend, parse_sim_spec

    try:
        cards = parse_sim_spec(spec)
    except ValueError as e:
        raise ValueError(f"{SIM_ENV}={e}") from None
    return SimBackend(cards, state_dir=home / "sim")


def _open_nvml() -> CardBackend:
    from gq.gpu.nvml import NvmlBackend, NvmlUnavailable

    try:
        return NvmlBackend()
    except NvmlUnavailable as e:
        return NoCards(reason=str(e))
