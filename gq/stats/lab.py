"""The lab's numbers for a period: utilisation, allocation, waits, outcomes, GPU-hours, offenders.

`lab_stats` reads the store and returns plain JSON-ready data (docs/telemetry.md has the
schema); the CLI prints it as a table or as Prometheus text. Percentiles are nearest-rank.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gq.model import Job, Tier
from gq.policy.cardshare import card_share
from gq.stats.health import NO_ACCOUNT, health, percentile
from gq.store import Store
from gq.units import iso

HOUR = 3600.0


@dataclass(frozen=True)
class StatsInput:
    since: float
    now: float
    card_totals: dict[int, int]  # card index -> memory, for the share a slice holds
    running: list[Job]  # jobs holding cards now, counted up to `now`
    interval: float  # seconds one sample stands for
    idle_util: dict[str, float]  # tier -> the idle threshold, percent
    accounts: dict[str, str] = field(default_factory=dict)  # user -> account ([accounts])
    pools: dict[str, frozenset[int]] = field(default_factory=dict)  # [pools]: name -> cards
    default_pool: str | None = None  # where a job without --pool runs



def lab_stats(store: Store, inp: StatsInput) -> dict[str, Any]:
    began = store.history.first_activity()
    start = max(inp.since, began) if began is not None else inp.since
    start = min(start, inp.now)
    span = inp.now - start
    out: dict[str, Any] = {"since": iso(inp.since), "until": iso(inp.now),
                           "covered_from": iso(start), "period_seconds": round(span, 3),
                           "history_from": iso(began), "gpus": len(inp.card_totals)}
    out["utilization"] = _utilization(store, start, inp.now)
    gpu_seconds, by_account = _gpu_seconds(store, inp, start)
    capacity = len(inp.card_totals) * span
    used = sum(gpu_seconds.values())
    out["allocation"] = {
        "rate": round(used / capacity, 4) if capacity > 0 else None,
        "gpu_hours": round(used / HOUR, 3), "capacity_gpu_hours": round(capacity / HOUR, 3)}
    out["wait_seconds"], waits = _waits(store, start, inp.now)
    out["by_pool"] = _by_pool(store, inp, start, out["utilization"]["by_gpu"])
    out["jobs_by_state"] = store.history.ended_by_state(start, inp.now)
    runs = store.history.runs_between(start, inp.now)
    out["oom"] = sum(1 for r in runs if r["state"] == "oom" and r["ended_at"] < inp.now)
    out["failures"] = failures(r for r in runs if start <= r["ended_at"] < inp.now)
    out["gpu_hours_by_user"] = {u: round(s / HOUR, 3) for u, s in sorted(gpu_seconds.items())}
    out["gpu_hours_by_account"] = {a: round(s / HOUR, 3) for a, s in sorted(by_account.items())}
    out["idle_gpu_hours_by_user"] = {u: round(s / HOUR, 3)
                                     for u, s in sorted(_idle_seconds(store, inp, start).items())}
    offences = store.offences.since(start, inp.now)
    kinds: dict[str, int] = defaultdict(int)
    for o in offences:
        kinds[o["kind"]] += 1
    out["offenders"] = {"by_kind": dict(sorted(kinds.items())),
                        "list": [offence_json(o) for o in offences]}
    done = [r for r in runs if start <= r["ended_at"] < inp.now]
    out["health"] = health(out["utilization"]["mean"], waits, done)
    return out


def failures(runs) -> dict[str, Any]:
    """Failed runs by class (docs/triage.md), and by month (UTC), user and class."""
    by_class: dict[str, int] = defaultdict(int)
    by_month: dict[tuple[str, str, str], int] = defaultdict(int)
    for run in runs:
        if run.get("failure"):
            by_class[run["failure"]] += 1
            by_month[(iso(run["ended_at"])[:7], run["user"], run["failure"])] += 1
    return {"by_class": dict(sorted(by_class.items())),
            "by_month": [{"month": m, "user": u, "failure": f, "runs": n}
                         for (m, u, f), n in sorted(by_month.items())]}


def _utilization(store: Store, start: float, until: float) -> dict[str, Any]:
    total, known, samples = 0, 0, 0
    by_card: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    by_hour: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for row in store.samples.card_hours(start, until):
        total += row["util_sum"]
        known += row["util_n"]
        samples += row["n"]
        for bucket in (by_card[row["card"]], by_hour[row["hour"]]):
            bucket[0] += row["util_sum"]
            bucket[1] += row["util_n"]
    mean = lambda s, n: round(s / n, 2) if n else None  # noqa: E731
    return {
        "mean": mean(total, known),
        "by_gpu": {str(c): mean(*v) for c, v in sorted(by_card.items())},
        "by_hour": [{"hour": iso(h * HOUR), "mean": mean(*v)} for h, v in sorted(by_hour.items())],
        "samples": samples, "unknown_samples": samples - known,
    }


def _gpu_seconds(store: Store, inp: StatsInput, start: float
                 ) -> tuple[dict[str, float], dict[str, float]]:
    """Card-seconds each user, and each account, held in [start, now): ended runs (charged
    to the account they ran under), and the jobs running now."""
    held: dict[str, float] = defaultdict(float)
    by_account: dict[str, float] = defaultdict(float)
    for run in store.history.runs_between(start, inp.now):
        overlap = min(run["ended_at"], inp.now) - max(run["started_at"], start)
        if overlap > 0:
            held[run["user"]] += run["weight"] * overlap
            account = run.get("account") or inp.accounts.get(run["user"], NO_ACCOUNT)
            by_account[account] += run["weight"] * overlap
    for job in inp.running:
        if job.started_at is None:
            continue
        overlap = inp.now - max(job.started_at, start)
        if overlap > 0:
            weight = sum(card_share(job.mem, inp.card_totals.get(i))
                         for i in job.gpu_ids)
            held[job.user] += weight * overlap
            by_account[inp.accounts.get(job.user, NO_ACCOUNT)] += weight * overlap
    return held, by_account


def _waits(store: Store, start: float, now: float) -> tuple[dict[str, Any], list[float]]:
    """Waits by tier, and every wait (sorted), of the jobs that first started in the period."""
    waits: dict[str, list[float]] = {str(t): [] for t in Tier}
    for row in store.history.first_starts(start, now):
        waits.setdefault(row["priority"], []).append(max(0.0, row["first_start"]
                                                         - row["submitted_at"]))
    out = {tier: _wait_figures(values) for tier, values in waits.items()}
    return out, sorted(w for values in waits.values() for w in values)


def _wait_figures(values: list[float]) -> dict[str, Any]:
    values.sort()
    return {"jobs": len(values), "mean": round(sum(values) / len(values), 3) if values else None,
            "p50": percentile(values, 50), "p95": percentile(values, 95)}


def _by_pool(store: Store, inp: StatsInput, start: float, by_gpu: dict[str, float | None]
             ) -> dict[str, Any]:
    """Per pool ([pools.NAME]): its cards, their mean utilisation (over the cards with known
    samples), and the waits of its GPU jobs that first started in the period. {} without
    pools. A job is counted in the pool it is in now (a requeued interactive job, in the
    default pool)."""
    if not inp.pools:
        return {}
    waits: dict[str, list[float]] = {name: [] for name in inp.pools}
    for row in store.history.first_starts(start, inp.now):
        pool = row["pool"] or inp.default_pool
        if row["gpus"] > 0 and pool in waits:
            waits[pool].append(max(0.0, row["first_start"] - row["submitted_at"]))
    out = {}
    for name, cards in sorted(inp.pools.items()):
        known = [by_gpu[str(i)] for i in sorted(cards) if by_gpu.get(str(i)) is not None]
        out[name] = {"gpus": sorted(cards),
                     "utilization": round(sum(known) / len(known), 2) if known else None,
                     "waits": _wait_figures(waits[name])}
    return out


def _idle_seconds(store: Store, inp: StatsInput, start: float) -> dict[str, float]:
    """Card-seconds each user's jobs held while under their tier's idle threshold: a minute
    whose known samples average under it counts its samples, each `interval` seconds long."""
    rows = store.samples.idle_samples(start, inp.idle_util, inp.now)
    jobs = {j.id: j for j in store.jobs(ids={r["job_id"] for r in rows}, light=True)} if (
        rows) else {}
    idle: dict[str, float] = defaultdict(float)
    for row in rows:
        job = jobs[row["job_id"]]
        share = card_share(job.mem, inp.card_totals.get(row["card"]))
        idle[job.user] += row["n"] * inp.interval * share
    return idle


def offence_json(row: dict[str, Any]) -> dict[str, Any]:
    """An offence as `gq offenders --json` and `gq stats --json` show it."""
    row = {k: v for k, v in row.items() if k != "present_at"}
    figures = dict(row["figures"])
    suggestion = figures.pop("suggestion", None)
    gpus = figures.pop("gpus", [])
    tier = figures.pop("tier", None)
    return {
        "id": row["id"], "kind": row["kind"], "job_id": row["job_id"], "user": row["user"],
        "tier": tier, "pid": row["pid"], "gpus": gpus, "since": iso(row["first_seen"]),
        "last_seen": iso(row["last_seen"]), "ended_at": iso(row["ended_at"]),
        "evidence": row["evidence"], "suggestion": suggestion, "figures": figures,
        "action": row["action"], "notified_at": iso(row["notified_at"]),
        "acted": row["acted"], "acted_at": iso(row["acted_at"]),
    }
