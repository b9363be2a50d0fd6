"""[telemetry] and [offenders] of config.toml: how often cards are sampled, how long samples
are kept, and what makes a job or process an offender and what is done about it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gq.units import format_duration, parse_duration

KINDS = ("idle", "over_declared", "over_budget", "input_bound", "zombie", "stray")
# The kinds that have a job, and a tier.
JOB_KINDS = ("idle", "over_declared", "over_budget", "input_bound")
TIERS = ("high", "normal", "low")
ACTIONS = ("report", "notify", "requeue", "cancel")


@dataclass(frozen=True)
class TelemetryConfig:
    interval: float = 5.0  # seconds between samples; 0 = no sampling
    raw_retention: float = 86400.0
    rollup_retention: float = 30 * 86400.0


@dataclass(frozen=True)
class Action:
    """What to do with an offender: report it, run the notify command, or requeue or cancel
    its job once it has offended for `after` seconds."""

    what: str = "report"
    after: float = 0.0

    def __str__(self) -> str:
        if self.what in ("requeue", "cancel") and self.after:
            after = format_duration(self.after) if self.after >= 1 else f"{self.after:g}s"
            return f"{self.what} after {after}"
        return self.what


@dataclass(frozen=True)
class OffenderRules:
    """Thresholds and actions for the jobs of one tier."""

    idle_util: float = 20.0  # percent: under this mean utilisation...
    idle_window: float = 900.0  # ...over this many seconds, a job is idle
    over_declared_ratio: float = 0.5  # peak under this share of --mem...
    over_declared_after: float = 600.0  # ...after this long is over-declared
    over_budget_after: float = 30.0  # more than --mem for this long is over budget
    # Input-bound: mean card utilisation under input_bound_util over input_bound_window while
    # its processes keep input_bound_cpu of the cores it asked for busy (or its busiest
    # process that share of one core): it starves its cards of data.
    input_bound_util: float = 50.0
    input_bound_window: float = 600.0
    input_bound_cpu: float = 0.9
    actions: dict[str, Action] = field(default_factory=dict)

    def action(self, kind: str) -> Action:
        return self.actions.get(kind, Action())


@dataclass(frozen=True)
class OffendersConfig:
    default: OffenderRules = field(default_factory=OffenderRules)
    tiers: dict[str, OffenderRules] = field(default_factory=dict)
    zombie_after: float = 60.0  # memory of a dead process or an ended job, held this long
    stray_after: float = 60.0  # a process outside gq, on the cards this long
    notify: str | None = None  # shell command run for the notify action

    def rules(self, tier: str | None) -> OffenderRules:
        return self.tiers.get(tier or "", self.default)

    @property
    def longest_idle_window(self) -> float:
        """The longest window a judgement looks back over (idle, input-bound): what telemetry
        keeps in memory."""
        return max(max(r.idle_window, r.input_bound_window)
                   for r in (self.default, *self.tiers.values()))


_RULE_KEYS = {"idle_util", "idle_window", "over_declared_ratio", "over_declared_after",
              "over_budget_after", "input_bound_util", "input_bound_window", "input_bound_cpu",
              *JOB_KINDS}
OFFENDER_KEYS = _RULE_KEYS | {"zombie_after", "stray_after", "notify", "zombie", "stray",
                              *TIERS}
TELEMETRY_KEYS = {"interval", "raw_retention", "rollup_retention"}


def _duration(where: str, value: Any, allow_zero: bool = False) -> float:
    try:
        return parse_duration(str(value), allow_zero)
    except ValueError as e:
        raise ValueError(f"{where} = {e}") from None


def _number(where: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{where} = {value!r}: expected a number from {low:g} to {high:g}")
    return float(value)


def parse_action(where: str, text: Any, job_kind: bool) -> Action:
    """'report', 'notify', 'requeue', 'cancel after 2h' -> Action."""
    words = str(text).split()
    allowed = ACTIONS if job_kind else ("report", "notify")
    example = '"report", "notify", "requeue after 30m" or "cancel after 2h"' if job_kind else (
        '"report" or "notify" (it has no job to requeue or cancel)')
    if not words or words[0] not in allowed or len(words) not in (1, 3) or (
            len(words) == 3 and (words[1] != "after" or words[0] not in ("requeue", "cancel"))):
        raise ValueError(f"{where} = {text!r}: expected {example}")
    after = _duration(where, words[2], allow_zero=True) if len(words) == 3 else 0.0
    return Action(words[0], after)


def parse_telemetry(table: dict, base: TelemetryConfig) -> TelemetryConfig:
    unknown = set(table) - TELEMETRY_KEYS
    if unknown:
        raise ValueError(f"unknown setting {', '.join(f'[telemetry] {k}' for k in sorted(unknown))}")
    get = lambda key, default: (_duration(f"[telemetry] {key}", table[key],  # noqa: E731
                                          allow_zero=key == "interval")
                                if key in table else default)
    return TelemetryConfig(interval=get("interval", base.interval),
                           raw_retention=get("raw_retention", base.raw_retention),
                           rollup_retention=get("rollup_retention", base.rollup_retention))


def _rules(where: str, table: dict, base: OffenderRules) -> OffenderRules:
    def duration(key: str) -> float:
        return _duration(f"{where} {key}", table[key], allow_zero=True) if key in table else (
            getattr(base, key))

    actions = dict(base.actions)
    for kind in JOB_KINDS:
        if kind in table:
            actions[kind] = parse_action(f"{where} {kind}", table[kind], job_kind=True)
    return OffenderRules(
        idle_util=(_number(f"{where} idle_util", table["idle_util"], 0, 100)
                   if "idle_util" in table else base.idle_util),
        idle_window=duration("idle_window"),
        over_declared_ratio=(_number(f"{where} over_declared_ratio",
                                     table["over_declared_ratio"], 0, 1)
                             if "over_declared_ratio" in table else base.over_declared_ratio),
        over_declared_after=duration("over_declared_after"),
        over_budget_after=duration("over_budget_after"),
        input_bound_util=(_number(f"{where} input_bound_util", table["input_bound_util"], 0, 100)
                          if "input_bound_util" in table else base.input_bound_util),
        input_bound_window=duration("input_bound_window"),
        input_bound_cpu=(_number(f"{where} input_bound_cpu", table["input_bound_cpu"], 0.05, 1)
                         if "input_bound_cpu" in table else base.input_bound_cpu),
        actions=actions,
    )


def parse_offenders(table: dict, base: OffendersConfig) -> OffendersConfig:
    unknown = set(table) - OFFENDER_KEYS
    for tier in TIERS:
        if tier in table:
            if not isinstance(table[tier], dict):
                raise ValueError(f"[offenders] {tier}: expected a table, [offenders.{tier}]")
            unknown |= {f"{tier}.{k}" for k in set(table[tier]) - _RULE_KEYS}
    if unknown:
        raise ValueError("unknown setting "
                         + ", ".join(f"[offenders] {k}" for k in sorted(unknown)))
    top = {k: v for k, v in table.items() if k in _RULE_KEYS}
    default = _rules("[offenders]", top, base.default)
    tiers = {tier: _rules(f"[offenders.{tier}]", table[tier], default)
             for tier in TIERS if tier in table}
    for kind in ("zombie", "stray"):
        if kind in table:
            action = parse_action(f"[offenders] {kind}", table[kind], job_kind=False)
            default = replace(default, actions={**default.actions, kind: action})
    notify = table.get("notify", base.notify)
    if notify is not None and (not isinstance(notify, str) or not notify.strip()):
        raise ValueError(f"[offenders] notify = {notify!r}: expected a shell command")
    wants_notify = [f"{k} = \"{a}\"" for r in [default, *tiers.values()]
                    for k, a in r.actions.items() if a.what == "notify"]
    if wants_notify and notify is None:
        raise ValueError(f"[offenders] {wants_notify[0]} needs [offenders] notify, the command "
                         "to run")
    return OffendersConfig(
        default=default, tiers=tiers, notify=notify,
        zombie_after=(_duration("[offenders] zombie_after", table["zombie_after"], True)
                      if "zombie_after" in table else base.zombie_after),
        stray_after=(_duration("[offenders] stray_after", table["stray_after"], True)
                     if "stray_after" in table else base.stray_after),
    )
