"""The daemon's settings: $GQ_HOME/config.toml (a system daemon's: /etc/gq/config.toml), with
defaults for everything.

A bad value or an unknown setting is refused when the daemon starts, naming the setting and its
line. `gq config show` prints the effective values and where each came from (gq/config/show.py).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gq.config.governance import PoolsConfig, parse_accounts, parse_pools
from gq.config.lab_rules import check_pool_cards
from gq.config.lines import line_of, setting_lines
from gq.config.metrics import METRICS_KEYS, MetricsConfig, parse_metrics
from gq.config.telemetry import (
    OFFENDER_KEYS, TELEMETRY_KEYS, OffendersConfig, TelemetryConfig, parse_offenders,
    parse_telemetry,
)
from gq.model import PREEMPT_MODES
from gq.policy import FairShareConfig, Limits, UserLimits
from gq.policy.accounts import Accounts
from gq.protocol import MAX_LINE, GqError
from gq.sbatch.compat import SlurmCompat, parse_compat
from gq.units import parse_duration, parse_size


_TIERS = ("high", "normal", "low")


@dataclass(frozen=True)
class PreemptionConfig:
    """[preemption]: who may be stopped for higher-tier work, and how gently."""

    exempt: float = 600.0  # a run cannot be preempted in its first seconds, so nothing thrashes
    grace: float = 60.0  # default seconds between the checkpoint signal and SIGKILL
    max_requeues: int = 5  # preemptions of one job before it is held instead of requeued
    preemptible: frozenset[str] = frozenset({"low"})  # tiers preemptible unless told otherwise
    # Freezing (docs/preemption.md#freezing): each tier's --preempt-mode default; the host
    # memory frozen jobs may hold, as bytes or as a share of [host] ram; how long the driver's
    # lock may wait for a job's submitted GPU work before the freeze takes the signal path.
    modes: dict[str, str] = field(default_factory=lambda: dict.fromkeys(_TIERS, "signal"))
    freeze_ram: int | None = None  # bytes; None: freeze_ram_share of the host's memory
    freeze_ram_share: float = 0.25
    lock_timeout: float = 10.0

    def freeze_ram_bytes(self, host_ram: int | None) -> int:
        if self.freeze_ram is not None:
            return self.freeze_ram
        return int(self.freeze_ram_share * host_ram) if host_ram else 0


@dataclass
class NotifyConfig:
    on_finish: str | None = None  # a shell command the daemon runs when any job ends
    timeout: float = 60.0  # a notification still running after this long is killed
    sendmail: str | None = None  # for --mail; None: look for sendmail on PATH and in /usr/sbin


@dataclass(frozen=True)
class AccessConfig:
    """[access], and the connection limits of [daemon]: who may do what, and how much."""

    admins: str = "gq-admin"  # a group whose members act on every job, as root does
    queue: str = "all"  # "all": everyone sees every job; "own": users see only theirs
    max_connections: int = 64  # connections one user may hold open (root: no cap)
    max_request: int = MAX_LINE  # bytes in one request line
    idle_timeout: float = 300.0  # a connection that sends no request for this long is closed
    max_submit_jobs: int = 10_000  # jobs (array elements) one submit may queue
    max_submit_bytes: int = 16 << 20  # bytes one submit may add to the database
    max_waiting_per_user: int = 100_000  # pending and held jobs one user may have


@dataclass
class PeersConfig:
    """[peers] (docs/peers.md): how the daemon watches and talks to its peers."""

    check_every: float = 10.0  # seconds between health checks of each peer
    connect_timeout: float = 10.0  # for an SSH connection and a channel
    timeout: float = 30.0  # for an answer to one request (waits excepted)
    list_timeout: float = 5.0  # for a peer's part of `gq ls --all-hosts`, `gq gpus --all-hosts`
    backoff_max: float = 60.0  # reconnects to a down peer back off up to this
    submit_retry: float = 20.0  # a forwarded submit retries this long before it waits here
    all_hosts: bool = False  # `gq ls` and `gq gpus` show every host without --all-hosts


@dataclass(frozen=True)
class BackupConfig:
    """[backup]: rotating copies of gq.db (docs/reliability.md)."""

    every: float = 3600.0  # while the queue changes, a backup at least this often
    jobs: int = 1000  # or sooner, once this many jobs were queued since the last one
    keep: int = 5  # how many backups to keep, newest first


@dataclass
class Config:
    host_cpus: int
    host_ram: int | None
    kill_wait: float = 30.0  # seconds between SIGTERM and SIGKILL on cancel, as Slurm's KillWait
    # [host] cgroups: "auto" (the system daemon's delegated cgroup), "off", or the directory of
    # a cgroup v2 hierarchy under which each job gets its own (gq/daemon/cgroups.py).
    cgroups: str = "auto"
    max_procs_per_job: int | None = None  # each job's cgroup's pids.max; None: no bound
    # Seconds a job's process may take to reach its command (its directory, its exec) before
    # its run fails: a directory on a hung mount would hold its cards for good.
    start_timeout: float = 60.0
    tick: float = 1.0  # seconds between the daemon's housekeeping rounds
    show_ended: float = 24 * 3600.0  # how long `gq ls` keeps listing a job after it ended
    default_time: float = 24 * 3600.0  # how long a job without --time is assumed to run
    default_time_by_tier: dict[str, float] = field(default_factory=dict)
    reservations: int = 8  # how many waiting jobs get a reservation that backfill respects
    # A slice joins a shared card only if the learned SM utilisations there sum to at most this
    share_util_max: float | None = 100.0  # None: memory alone (a replay without utilisation)
    learn_mem: bool = False  # a GPU job without --mem gets --mem auto once it has history
    fairshare: FairShareConfig = field(default_factory=FairShareConfig)
    limits: Limits = field(default_factory=Limits)
    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    offenders: OffendersConfig = field(default_factory=OffendersConfig)
    peers: PeersConfig = field(default_factory=PeersConfig)
    access: AccessConfig = field(default_factory=AccessConfig)
    path: str | None = None  # the file read, if there was one
    sources: dict[str, str] = field(default_factory=dict)  # "daemon.tick" -> "FILE:LINE"
    backup: BackupConfig = field(default_factory=BackupConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)  # /metrics (config/metrics.py)
    slurm_compat: SlurmCompat = field(default_factory=SlurmCompat)  # read by gq submit
    pools: PoolsConfig = field(default_factory=PoolsConfig)
    accounts: Accounts = field(default_factory=Accounts)


_KNOWN = {
    "host": {"cpus", "ram", "cgroups", "max_procs_per_job"},
    "daemon": {"kill_wait", "start_timeout", "tick", "max_connections_per_user", "max_request", "idle_timeout",
               "max_submit_jobs", "max_submit_bytes", "max_waiting_per_user", "show_ended"},
    "scheduler": {"default_time", "reservations", "half_life", "age_cap", "weight_fairshare",
                  "weight_age", "weight_short", "share_util_max", "learn_mem"},
    "limits": {"max_running_gpus", "max_pending_jobs", "high_share", "users"},
    "preemption": {"exempt", "grace", "max_requeues", "preemptible", "mode", "freeze_ram",
                   "lock_timeout"},
    "notify": {"on_finish", "timeout", "sendmail"},
    "telemetry": TELEMETRY_KEYS,
    "offenders": OFFENDER_KEYS,
    "peers": {"check_every", "connect_timeout", "timeout", "list_timeout", "backoff_max",
              "submit_retry", "all_hosts"},
    "access": {"admins", "queue"},
    "backup": {"every", "jobs", "keep"},
    "metrics": METRICS_KEYS,
    "slurm_compat": {"default_gpus", "partitions", "qos"},  # read by gq submit (gq/sbatch)
}
_LIMIT_KEYS = _KNOWN["limits"] - {"users"}


def _cgroups(value: Any) -> str:
    if value in ("auto", "off") or (isinstance(value, str) and value.startswith("/")):
        return value
    raise ValueError(f"[host] cgroups = {value!r}: expected \"auto\", \"off\" or the absolute "
                     "path of a directory in a cgroup v2 hierarchy")


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


def apply_scheduler(config: Config, sched: dict, limits: dict) -> None:
    """[scheduler] and [limits] onto `config`; also read by `gq sim --config` (gq/sim/lab.py),
    so that a replay runs with a lab's own settings."""
    unknown = sorted({f"[scheduler] {k}" for k in sched if k not in _KNOWN["scheduler"]}
                     | {f"[limits] {k}" for k in limits if k not in _KNOWN["limits"]})
    if unknown:
        raise ValueError(f"unknown setting {', '.join(unknown)}")
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
    if "share_util_max" in sched:
        config.share_util_max = _number("[scheduler] share_util_max", sched["share_util_max"],
                                        1, 10000)
    if "learn_mem" in sched:
        if not isinstance(sched["learn_mem"], bool):
            raise ValueError(f"[scheduler] learn_mem = {sched['learn_mem']!r}: expected true or "
                             "false")
        config.learn_mem = sched["learn_mem"]
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


def apply_file(config: Config, data: dict) -> None:
    """A parsed config.toml onto `config`, checked as the daemon checks it at start; also read
    by `gq sim --config` (gq/sim/lab.py), so that a replay runs with the daemon's whole file."""
    _apply(config, data)


def _apply(config: Config, data: dict) -> None:
    data = dict(data)
    for section, table in data.items():
        if not isinstance(table, dict):
            raise ValueError(f"[{section}]: expected a table")
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
    if "cgroups" in host:
        config.cgroups = _cgroups(host["cgroups"])
    if "max_procs_per_job" in host:
        config.max_procs_per_job = _whole("[host] max_procs_per_job",
                                          host["max_procs_per_job"], 1)
    if "kill_wait" in daemon:
        config.kill_wait = _duration("[daemon] kill_wait", daemon["kill_wait"])
    if "start_timeout" in daemon:
        config.start_timeout = _duration("[daemon] start_timeout", daemon["start_timeout"])
    if "tick" in daemon:
        config.tick = _duration("[daemon] tick", daemon["tick"])
    if "show_ended" in daemon:
        config.show_ended = _duration("[daemon] show_ended", daemon["show_ended"], allow_zero=True)
    apply_scheduler(config, sched, limits)
    if "preemption" in data:
        config.preemption = _preemption(data["preemption"], config.preemption)
    config.notify = _notify(data.get("notify", {}))
    if "telemetry" in data:
        config.telemetry = parse_telemetry(data["telemetry"], config.telemetry)
    if "offenders" in data:
        config.offenders = parse_offenders(data["offenders"], config.offenders)
    config.peers = _peers(data.get("peers", {}))
    config.access = _access(data.get("access", {}), daemon)
    if "backup" in data:
        config.backup = _backup(data["backup"])
    if "metrics" in data:
        config.metrics = parse_metrics(data["metrics"])
    if "slurm_compat" in data:  # gq submit reads it; checked here with the rest of the file
        config.slurm_compat = parse_compat(data["slurm_compat"])


def _preemption(table: dict, base: PreemptionConfig) -> PreemptionConfig:
    tiers = table.get("preemptible", sorted(base.preemptible))
    if not isinstance(tiers, list) or any(t not in _TIERS for t in tiers):
        raise ValueError(f"[preemption] preemptible = {tiers!r}: expected a list of tiers, "
                         'e.g. ["low"] or ["normal", "low"]')
    ram, share = base.freeze_ram, base.freeze_ram_share
    if "freeze_ram" in table:
        ram, share = _freeze_ram(table["freeze_ram"])
    return PreemptionConfig(
        modes=_modes(table["mode"], base.modes) if "mode" in table else base.modes,
        freeze_ram=ram, freeze_ram_share=share,
        lock_timeout=(_duration("[preemption] lock_timeout", table["lock_timeout"])
                      if "lock_timeout" in table else base.lock_timeout),
        exempt=(_duration("[preemption] exempt", table["exempt"], allow_zero=True)
                if "exempt" in table else base.exempt),
        grace=(_duration("[preemption] grace", table["grace"], allow_zero=True)
               if "grace" in table else base.grace),
        max_requeues=(_whole("[preemption] max_requeues", table["max_requeues"], 0)
                      if "max_requeues" in table else base.max_requeues),
        preemptible=frozenset(tiers),
    )


def _modes(value: Any, base: dict[str, str]) -> dict[str, str]:
    """mode = "auto" (every tier), or a table of tiers: {low = "auto", normal = "freeze"}."""
    expected = " | ".join(PREEMPT_MODES)
    if isinstance(value, str) and value in PREEMPT_MODES:
        value = dict.fromkeys(_TIERS, value)
    if not isinstance(value, dict):
        raise ValueError(f"[preemption] mode = {value!r}: expected {expected}, or a table of "
                         'tiers such as {low = "auto"}')
    out = dict(base)
    for tier, mode in value.items():
        if tier not in _TIERS:
            raise ValueError(f"[preemption] mode: {tier}: expected high, normal or low")
        if mode not in PREEMPT_MODES:
            raise ValueError(f"[preemption] mode: {tier} = {mode!r}: expected {expected}")
        out[tier] = mode
    return out


def _freeze_ram(value: Any) -> tuple[int | None, float]:
    """freeze_ram = "64G" (bytes), or "25%" of the host's memory ([host] ram)."""
    text = str(value).strip()
    if text.endswith("%"):
        try:
            share = float(text[:-1]) / 100
        except ValueError:
            share = -1.0
        if not 0 <= share <= 1:
            raise ValueError(f"[preemption] freeze_ram = {value!r}: expected a size like 64G "
                             "or a share of the host's memory like 25%")
        return None, share
    try:
        return parse_size(text), 0.0
    except ValueError as e:
        raise ValueError(f"[preemption] freeze_ram = {e}; or a share like 25%") from None


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


def _peers(table: dict) -> PeersConfig:
    out = PeersConfig()
    for key in _KNOWN["peers"] - {"all_hosts"}:
        if key in table:
            setattr(out, key, _duration(f"[peers] {key}", table[key]))
    if "all_hosts" in table:
        if not isinstance(table["all_hosts"], bool):
            raise ValueError(f"[peers] all_hosts = {table['all_hosts']!r}: expected true or false")
        out.all_hosts = table["all_hosts"]
    return out
def _daemon_size(daemon: dict, key: str, default: int, low: int, high: int | None,
                 expected: str) -> int:
    """A size setting of [daemon], within [low, high]."""
    if key not in daemon:
        return default
    try:
        size = parse_size(str(daemon[key]))
    except ValueError as e:
        raise ValueError(f"[daemon] {key} = {e}") from None
    if size < low or (high is not None and size > high):
        raise ValueError(f"[daemon] {key} = {daemon[key]!r}: expected {expected}")
    return size


def _access(access: dict, daemon: dict) -> AccessConfig:
    base = AccessConfig()
    admins = access.get("admins", base.admins)
    if not isinstance(admins, str) or not admins or any(c.isspace() or c in ":,/" for c in admins):
        raise ValueError(f"[access] admins = {admins!r}: expected the name of a group")
    queue = access.get("queue", base.queue)
    if queue not in ("all", "own"):
        raise ValueError(f'[access] queue = {queue!r}: expected "all" (everyone sees every job) '
                         'or "own" (users see only their own; admins see all)')
    max_request = _daemon_size(daemon, "max_request", base.max_request, 64 << 10, 64 << 20,
                               "a size from 64K to 64M")
    max_submit_bytes = _daemon_size(daemon, "max_submit_bytes", base.max_submit_bytes, 64 << 10,
                                    None, "a size of 64K or more")
    counts = {key: (_whole(f"[daemon] {key}", daemon[key], 1) if key in daemon
                    else getattr(base, key))
              for key in ("max_submit_jobs", "max_waiting_per_user")}
    return AccessConfig(
        **counts,
        max_submit_bytes=max_submit_bytes,
        admins=admins,
        queue=queue,
        max_connections=(_whole("[daemon] max_connections_per_user",
                                daemon["max_connections_per_user"], 1)
                         if "max_connections_per_user" in daemon else base.max_connections),
        max_request=max_request,
        idle_timeout=(_duration("[daemon] idle_timeout", daemon["idle_timeout"])
                      if "idle_timeout" in daemon else base.idle_timeout),
    )


def _backup(table: dict) -> BackupConfig:
    base = BackupConfig()
    return BackupConfig(
        every=_duration("[backup] every", table["every"]) if "every" in table else base.every,
        jobs=_whole("[backup] jobs", table["jobs"], 1) if "jobs" in table else base.jobs,
        keep=_whole("[backup] keep", table["keep"], 1) if "keep" in table else base.keep,
    )


def _host_ram() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def check_cards(config: Config, cards: list[int]) -> None:
    """The pools of a loaded file against the host's cards (gq/config/lab_rules.py): the daemon checks
    this when it starts, and so does `gq config check`, naming the line."""
    try:
        check_pool_cards(config.pools, cards)
    except ValueError as e:
        line = None
        if config.path:
            line = line_of(str(e), setting_lines(Path(config.path).read_text()))
        raise GqError(f"{config.path}{f' line {line}' if line else ''}: {e}", 2) from None


def load_config(path: Path) -> Config:
    config = Config(host_cpus=os.cpu_count() or 1, host_ram=_host_ram())
    if not path.exists():
        return config
    text = path.read_text()
    try:
        _apply(config, tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:  # its message names the line already
        raise GqError(f"{path}: {e}") from None
    except (ValueError, TypeError, AttributeError) as e:
        line = line_of(str(e), setting_lines(text))
        raise GqError(f"{path}{f' line {line}' if line else ''}: {e}") from None
    config.path = str(path)
    config.sources = {key: f"{path}:{n}" for key, n in setting_lines(text).items()}
    return config
