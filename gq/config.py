"""The daemon's settings: $GQ_HOME/config.toml, with defaults for everything.

A bad value or an unknown setting is refused when the daemon starts, naming the setting.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gq.config_governance import PoolsConfig, parse_accounts, parse_pools
from gq.config_telemetry import (
    OFFENDER_KEYS, TELEMETRY_KEYS, OffendersConfig, TelemetryConfig, parse_offenders,
    parse_telemetry,
)
from gq.policy import FairShareConfig, Limits, UserLimits
from gq.policy.accounts import Accounts
from gq.protocol import GqError
from gq.units import parse_duration, parse_size


@dataclass(frozen=True)
class PreemptionConfig:
    """[preemption]: who may be stopped for higher-tier work, and how gently."""

    exempt: float = 600.0  # a run cannot be preempted in its first seconds, so nothing thrashes
    grace: float = 60.0  # default seconds between the checkpoint signal and SIGKILL
    max_requeues: int = 5  # preemptions of one job before it is held instead of requeued
    preemptible: frozenset[str] = frozenset({"low"})  # tiers preemptible unless told otherwise


@dataclass
class NotifyConfig:
    on_finish: str | None = None  # a shell command the daemon runs when any job ends
    timeout: float = 60.0  # a notification still running after this long is killed
    sendmail: str | None = None  # for --mail; None: look for sendmail on PATH and in /usr/sbin


@dataclass
class Config:
    host_cpus: int
    host_ram: int | None
    kill_wait: float = 30.0  # seconds between SIGTERM and SIGKILL on cancel, as Slurm's KillWait
    tick: float = 1.0  # seconds between the daemon's housekeeping rounds
    default_time: float = 24 * 3600.0  # how long a job without --time is assumed to run
    default_time_by_tier: dict[str, float] = field(default_factory=dict)
    reservations: int = 8  # how many waiting jobs get a reservation that backfill respects
    fairshare: FairShareConfig = field(default_factory=FairShareConfig)
    limits: Limits = field(default_factory=Limits)
    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    offenders: OffendersConfig = field(default_factory=OffendersConfig)
    pools: PoolsConfig = field(default_factory=PoolsConfig)
    accounts: Accounts = field(default_factory=Accounts)


_KNOWN = {
    "host": {"cpus", "ram"},
    "daemon": {"kill_wait", "tick"},
    "scheduler": {"default_time", "reservations", "half_life", "age_cap", "weight_fairshare",
                  "weight_age", "weight_short"},
    "limits": {"max_running_gpus", "max_pending_jobs", "high_share", "users"},
    "preemption": {"exempt", "grace", "max_requeues", "preemptible"},
    "notify": {"on_finish", "timeout", "sendmail"},
    "telemetry": TELEMETRY_KEYS,
    "offenders": OFFENDER_KEYS,
}
_TIERS = ("high", "normal", "low")
_LIMIT_KEYS = _KNOWN["limits"] - {"users"}


def _whole(where: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where} = {value!r}: expected a whole number, {minimum} or more")
    return value


def _number(where: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{where} = {value!r}: expected a number from {low:g} to {high:g}")
    return float(value)


def _duration(where: str, value: Any, allow_zero: bool = False) -> float:
    try:
        return parse_duration(str(value), allow_zero)
    except ValueError as e:
        raise ValueError(f"{where} = {e}") from None


def _user_limits(where: str, table: dict, base: UserLimits) -> UserLimits:
    unknown = set(table) - _LIMIT_KEYS
    if unknown:
        raise ValueError(f"unknown setting {where} {', '.join(sorted(unknown))}")
    return UserLimits(
        max_running_gpus=(_whole(f"{where} max_running_gpus", table["max_running_gpus"], 0)
                          if "max_running_gpus" in table else base.max_running_gpus),
        max_pending_jobs=(_whole(f"{where} max_pending_jobs", table["max_pending_jobs"], 0)
                          if "max_pending_jobs" in table else base.max_pending_jobs),
        high_share=(_number(f"{where} high_share", table["high_share"], 0.0, 1.0)
                    if "high_share" in table else base.high_share),
    )


def _apply(config: Config, data: dict) -> None:
    data = dict(data)
    if "pools" in data:
        config.pools = parse_pools(data.pop("pools"))
    if "accounts" in data:
        config.accounts = parse_accounts(data.pop("accounts"))
    unknown = {f"[{s}]" for s in data if s not in _KNOWN}
    for section, table in data.items():
        if section in _KNOWN:
            unknown |= {f"[{section}] {k}" for k in table if k not in _KNOWN[section]}
    if unknown:
        raise ValueError(f"unknown setting {', '.join(sorted(unknown))}")
    host, daemon = data.get("host", {}), data.get("daemon", {})
    sched, limits = data.get("scheduler", {}), data.get("limits", {})
    if "cpus" in host:
        config.host_cpus = _whole("[host] cpus", host["cpus"], 1)
    if "ram" in host:
        config.host_ram = parse_size(str(host["ram"]))
    if "kill_wait" in daemon:
        config.kill_wait = _duration("[daemon] kill_wait", daemon["kill_wait"])
    if "tick" in daemon:
        config.tick = _duration("[daemon] tick", daemon["tick"])
    if isinstance(sched.get("default_time"), dict):  # per tier: {high = "4h", low = "3d"}
        for tier, value in sched["default_time"].items():
            if tier not in _TIERS:
                raise ValueError(f"[scheduler] default_time.{tier}: expected high, normal or low")
            config.default_time_by_tier[tier] = _duration(f"[scheduler] default_time.{tier}",
                                                          value)
    elif "default_time" in sched:
        config.default_time = _duration("[scheduler] default_time", sched["default_time"])
    if "reservations" in sched:
        config.reservations = _whole("[scheduler] reservations", sched["reservations"], 0)
    fs = config.fairshare
    config.fairshare = FairShareConfig(
        half_life=(_duration("[scheduler] half_life", sched["half_life"])
                   if "half_life" in sched else fs.half_life),
        age_cap=(_duration("[scheduler] age_cap", sched["age_cap"])
                 if "age_cap" in sched else fs.age_cap),
        weight_fairshare=(_number("[scheduler] weight_fairshare", sched["weight_fairshare"], 0,
                                  1e6) if "weight_fairshare" in sched else fs.weight_fairshare),
        weight_age=(_number("[scheduler] weight_age", sched["weight_age"], 0, 1e6)
                    if "weight_age" in sched else fs.weight_age),
        weight_short=(_number("[scheduler] weight_short", sched["weight_short"], 0, 1e6)
                      if "weight_short" in sched else fs.weight_short),
    )
    default = _user_limits("[limits]", {k: v for k, v in limits.items() if k != "users"},
                           UserLimits())
    users = {
        name: _user_limits(f"[limits.users.{name}]", table, default)
        for name, table in limits.get("users", {}).items()
    }
    config.limits = Limits(default=default, users=users)
    if "preemption" in data:
        config.preemption = _preemption(data["preemption"], config.preemption)
    config.notify = _notify(data.get("notify", {}))
    if "telemetry" in data:
        config.telemetry = parse_telemetry(data["telemetry"], config.telemetry)
    if "offenders" in data:
        config.offenders = parse_offenders(data["offenders"], config.offenders)


def _preemption(table: dict, base: PreemptionConfig) -> PreemptionConfig:
    tiers = table.get("preemptible", sorted(base.preemptible))
    if not isinstance(tiers, list) or any(t not in _TIERS for t in tiers):
        raise ValueError(f"[preemption] preemptible = {tiers!r}: expected a list of tiers, "
                         'e.g. ["low"] or ["normal", "low"]')
    return PreemptionConfig(
        exempt=(_duration("[preemption] exempt", table["exempt"], allow_zero=True)
                if "exempt" in table else base.exempt),
        grace=(_duration("[preemption] grace", table["grace"], allow_zero=True)
               if "grace" in table else base.grace),
        max_requeues=(_whole("[preemption] max_requeues", table["max_requeues"], 0)
                      if "max_requeues" in table else base.max_requeues),
        preemptible=frozenset(tiers),
    )


def _notify(table: dict) -> NotifyConfig:
    out = NotifyConfig()
    for key in ("on_finish", "sendmail"):
        if key in table:
            if not isinstance(table[key], str) or not table[key].strip():
                raise ValueError(f"[notify] {key} = {table[key]!r}: expected a command")
            setattr(out, key, table[key])
    if "timeout" in table:
        out.timeout = _duration("[notify] timeout", table["timeout"])
    return out


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
        _apply(config, tomllib.loads(path.read_text()))
    except tomllib.TOMLDecodeError as e:
        raise GqError(f"{path}: {e}") from None
    except (ValueError, TypeError, AttributeError) as e:
        raise GqError(f"{path}: {e}") from None
    return config
