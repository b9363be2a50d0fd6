"""The effective settings, as `gq config show` prints them, and the line each came from."""

from __future__ import annotations

from typing import Any, Callable

from gq.config.settings import _KNOWN, Config
from gq.config.telemetry import _RULE_KEYS, JOB_KINDS, TIERS, OffenderRules


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _size(n: int) -> str:
    for unit, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def _or_none(fmt: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else fmt(v)


# (section, key) -> how to read its effective value from a Config, as TOML would write it.
_GETTERS: dict[tuple[str, str], Callable[[Config], Any]] = {
    ("host", "cpus"): lambda c: c.host_cpus,
    ("host", "ram"): lambda c: _or_none(_size)(c.host_ram),
    ("host", "cgroups"): lambda c: c.cgroups,
    ("host", "max_procs_per_job"): lambda c: c.max_procs_per_job,
    ("daemon", "kill_wait"): lambda c: _duration(c.kill_wait),
    ("daemon", "start_timeout"): lambda c: _duration(c.start_timeout),
    ("daemon", "tick"): lambda c: _duration(c.tick),
    ("daemon", "max_connections_per_user"): lambda c: c.access.max_connections,
    ("daemon", "max_request"): lambda c: _size(c.access.max_request),
    ("daemon", "idle_timeout"): lambda c: _duration(c.access.idle_timeout),
    ("daemon", "max_submit_jobs"): lambda c: c.access.max_submit_jobs,
    ("daemon", "max_submit_bytes"): lambda c: _size(c.access.max_submit_bytes),
    ("daemon", "max_waiting_per_user"): lambda c: c.access.max_waiting_per_user,
    ("daemon", "show_ended"): lambda c: _duration(c.show_ended),
    ("scheduler", "default_time"): lambda c: {
        "": _duration(c.default_time),
        **{t: _duration(v) for t, v in sorted(c.default_time_by_tier.items())}},
    ("scheduler", "reservations"): lambda c: c.reservations,
    ("scheduler", "share_util_max"): lambda c: c.share_util_max,
    ("scheduler", "learn_mem"): lambda c: c.learn_mem,
    ("scheduler", "half_life"): lambda c: _duration(c.fairshare.half_life),
    ("scheduler", "age_cap"): lambda c: _duration(c.fairshare.age_cap),
    ("scheduler", "weight_fairshare"): lambda c: c.fairshare.weight_fairshare,
    ("scheduler", "weight_age"): lambda c: c.fairshare.weight_age,
    ("scheduler", "weight_short"): lambda c: c.fairshare.weight_short,
    ("limits", "max_running_gpus"): lambda c: c.limits.default.max_running_gpus,
    ("limits", "max_pending_jobs"): lambda c: c.limits.default.max_pending_jobs,
    ("limits", "high_share"): lambda c: c.limits.default.high_share,
    ("limits", "users"): lambda c: {
        name: {"max_running_gpus": u.max_running_gpus, "max_pending_jobs": u.max_pending_jobs,
               "high_share": u.high_share}
        for name, u in sorted(c.limits.users.items())},
    ("preemption", "exempt"): lambda c: _duration(c.preemption.exempt),
    ("preemption", "grace"): lambda c: _duration(c.preemption.grace),
    ("preemption", "max_requeues"): lambda c: c.preemption.max_requeues,
    ("preemption", "preemptible"): lambda c: sorted(c.preemption.preemptible),
    ("preemption", "mode"): lambda c: dict(c.preemption.modes),
    ("preemption", "freeze_ram"): lambda c: (
        _size(c.preemption.freeze_ram) if c.preemption.freeze_ram is not None
        else f"{c.preemption.freeze_ram_share * 100:g}%"),
    ("preemption", "lock_timeout"): lambda c: _duration(c.preemption.lock_timeout),
    ("notify", "on_finish"): lambda c: c.notify.on_finish,
    ("notify", "timeout"): lambda c: _duration(c.notify.timeout),
    ("notify", "sendmail"): lambda c: c.notify.sendmail,
    ("access", "admins"): lambda c: c.access.admins,
    ("access", "queue"): lambda c: c.access.queue,
    ("backup", "every"): lambda c: _duration(c.backup.every),
    ("backup", "jobs"): lambda c: c.backup.jobs,
    ("backup", "keep"): lambda c: c.backup.keep,
    ("slurm_compat", "default_gpus"): lambda c: c.slurm_compat.default_gpus,
    ("slurm_compat", "partitions"): lambda c: dict(sorted(c.slurm_compat.partitions.items()))
                                       or None,
    ("slurm_compat", "qos"): lambda c: dict(sorted(c.slurm_compat.qos.items())) or None,
    ("metrics", "listen"): lambda c: c.metrics.listen,
    ("metrics", "public"): lambda c: c.metrics.public,
    ("telemetry", "interval"): lambda c: _duration(c.telemetry.interval),
    ("telemetry", "raw_retention"): lambda c: _duration(c.telemetry.raw_retention),
    ("telemetry", "rollup_retention"): lambda c: _duration(c.telemetry.rollup_retention),
    ("offenders", "notify"): lambda c: c.offenders.notify,
    ("offenders", "zombie_after"): lambda c: _duration(c.offenders.zombie_after),
    ("offenders", "stray_after"): lambda c: _duration(c.offenders.stray_after),
    **{("offenders", k): (lambda c, k=k: _rule(c.offenders.default, k))
       for k in (*_RULE_KEYS, "zombie", "stray")},
    **{("offenders", t): (lambda c, t=t: _rules(c.offenders, t)) for t in TIERS},
    **{("peers", k): (lambda c, k=k: _peer_setting(c, k)) for k in
       ("check_every", "connect_timeout", "timeout", "list_timeout", "backoff_max",
        "submit_retry", "all_hosts")},
}
def _rule(rules: OffenderRules, key: str) -> Any:
    """One setting of [offenders] (or of a tier's table) as the file writes it."""
    if key in JOB_KINDS or key in ("zombie", "stray"):
        return str(rules.action(key))
    value = getattr(rules, key)
    return _duration(value) if key.endswith(("_window", "_after")) else value


def _rules(offenders, tier: str) -> dict[str, Any] | None:
    """A tier's own table ([offenders.low]): only what differs from [offenders]."""
    rules = offenders.tiers.get(tier)
    if rules is None:
        return None  # no table: the tier follows [offenders]
    return {k: _rule(rules, k) for k in sorted(_RULE_KEYS)
            if _rule(rules, k) != _rule(offenders.default, k)}


def _peer_setting(config: Config, key: str) -> Any:
    value = getattr(config.peers, key)
    return value if isinstance(value, bool) else _duration(value)


_MACHINE = {("host", "cpus"), ("host", "ram")}  # defaults read from this machine


def effective(config: Config) -> list[dict[str, Any]]:
    """Every setting with its value and source: "FILE:LINE", "default", "this machine" or "as
    [limits]". Nested ones (default_time by tier, each user's limits) come a row each."""
    rows = []
    for section, keys in _KNOWN.items():
        for key in sorted(keys):
            getter = _GETTERS.get((section, key))
            value = getter(config) if getter else None
            for name, v in _flatten(key, value):
                where = config.sources.get(f"{section}.{name}")
                if key == "mode" and where is None:  # mode = "auto", or an inline table
                    where = config.sources.get(f"{section}.{key}")
                if key == "default_time" and config.default_time_by_tier:
                    # the file's default_time is the table of tiers (an inline one, unlined)
                    tiers = config.sources.get(f"{section}.{key}")
                    where = (None if name == key
                             else config.sources.get(f"{section}.{name}", tiers))
                if where is None and getter is None:
                    where = "not shown by this version of gq config show"
                elif where is None and name.startswith("users."):
                    where = "as [limits]"
                elif where is None:
                    where = "this machine" if (section, key) in _MACHINE else "default"
                rows.append({"section": section, "key": name, "value": v, "source": where})
    return rows + _governance(config)


def _governance(config: Config) -> list[dict[str, Any]]:
    """[pools.NAME] and [accounts.NAME], a row per setting, defaults included."""
    tables: list[tuple[str, dict[str, Any]]] = []
    for pool in config.pools.pools.values():
        tables.append((f"pools.{pool.name}", {
            "cards": sorted(pool.cards), "max_time": _or_none(_duration)(pool.max_time),
            "default": pool.default, "interactive": pool.interactive,
            "past_limit": pool.past_limit}))
    accounts = config.accounts
    names = set(accounts.members.values()) | set(accounts.shares) | set(accounts.limits)
    for name in sorted(names):
        limits = accounts.limits.get(name)
        tables.append((f"accounts.{name}", {
            "users": sorted(u for u, a in accounts.members.items() if a == name),
            "share": accounts.share(name),
            "max_running_gpus": limits.max_running_gpus if limits else None,
            "max_share": limits.max_share if limits else None}))
    return [{"section": section, "key": key, "value": value,
             "source": config.sources.get(f"{section}.{key}", "default")}
            for section, values in tables for key, value in values.items()]


def _flatten(key: str, value: Any) -> list[tuple[str, Any]]:
    if key == "default_time":  # one row for the default, one per tier set
        return [("default_time" if t == "" else f"default_time.{t}", v)
                for t, v in value.items()]
    if key == "users":
        return [(f"users.{name}.{k}", v) for name, table in value.items()
                for k, v in table.items()]
    if isinstance(value, dict):  # a table of its own: [offenders.low]
        return [(f"{key}.{k}", v) for k, v in value.items()]
    return [(key, value)]
