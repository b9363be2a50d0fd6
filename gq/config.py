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
    default_time: float = 24 * 3600.0  # how long a job without --time is assumed to run
    reservations: int = 8  # how many waiting jobs get a reservation that backfill respects


_KNOWN = {
    "host": {"cpus", "ram"},
    "daemon": {"kill_wait", "tick"},
    "scheduler": {"default_time", "reservations"},
}


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
            if not isinstance(host["cpus"], int) or host["cpus"] < 1:
                raise ValueError(
                    f"[host] cpus = {host['cpus']!r}: expected a whole number, 1 or more"
                )
            config.host_cpus = host["cpus"]
        if "ram" in host:
            config.host_ram = parse_size(str(host["ram"]))
        daemon = data.get("daemon", {})
        if "kill_wait" in daemon:
            config.kill_wait = parse_duration(str(daemon["kill_wait"]))
        if "tick" in daemon:
            config.tick = parse_duration(str(daemon["tick"]))
        scheduler = data.get("scheduler", {})
        if "default_time" in scheduler:
            config.default_time = parse_duration(str(scheduler["default_time"]))
        if "reservations" in scheduler:
            n = scheduler["reservations"]
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"[scheduler] reservations = {n!r}: expected a whole number")
            config.reservations = n
        tables = (("host", host), ("daemon", daemon), ("scheduler", scheduler))
        unknown = {f"[{s}] {k}" for s, table in tables for k in table if k not in _KNOWN[s]}
        unknown |= {f"[{s}]" for s in data if s not in _KNOWN}
        if unknown:
            raise ValueError(f"unknown setting {', '.join(sorted(unknown))}")
    except (ValueError, TypeError) as e:
        raise GqError(f"{path}: {e}") from None
    return config
