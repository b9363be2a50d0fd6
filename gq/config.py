"""The daemon's settings: $GQ_HOME/config.toml, with defaults for everything."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gq.protocol import GqError
from gq.units import parse_duration, parse_size


@dataclass
class Config:
    host_cpus: int
    host_ram: int | None
    kill_wait: float = 30.0  # seconds between SIGTERM and SIGKILL on cancel, as Slurm's KillWait
    tick: float = 1.0  # seconds between the daemon's housekeeping rounds


def _host_ram() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def load_config(path: Path) -> Config:
    config = Config(host_cpus=os.cpu_count() or 1, host_ram=_host_ram())
    if not path.exists():
        return config
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise GqError(f"{path}: {e}") from None
    try:
        host = data.get("host", {})
        if "cpus" in host:
            config.host_cpus = int(host["cpus"])
            if config.host_cpus < 1:
                raise ValueError("[host] cpus must be at least 1")
        if "ram" in host:
            config.host_ram = parse_size(str(host["ram"]))
        daemon = data.get("daemon", {})
        if "kill_wait" in daemon:
            config.kill_wait = parse_duration(str(daemon["kill_wait"]))
        if "tick" in daemon:
            config.tick = parse_duration(str(daemon["tick"]))
    except (ValueError, TypeError) as e:
        raise GqError(f"{path}: {e}") from None
    return config
