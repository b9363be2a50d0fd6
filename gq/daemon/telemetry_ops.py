"""Request handlers for telemetry: offenders, sample history, the lab's stats, a job's usage."""

from __future__ import annotations

import json
from typing import Any

from gq.daemon.context import Context
from gq.daemon.lookup import resolve_id
from gq.daemon.runtimes import learned_mem_quality, prediction_quality
from gq.daemon.submission import Caller
from gq.model import Job
from gq.policy.accounts import share_report
from gq.protocol import BadInput
from gq.stats.lab import StatsInput, lab_stats, offence_json
from gq.units import iso, parse_iso

MAX_SPAN = 40 * 86400.0  # the longest history one request may ask for
RAW_UP_TO = 3600.0  # resolution "auto" gives raw samples up to this span, minutes beyond


def op_offenders(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    """The offences going on now, oldest first."""
    return [_with_due(daemon, offence_json(row)) for row in daemon.police.open_offences.values()]


def _with_due(daemon: Context, out: dict) -> dict:
    action = daemon.police.action_of(out["kind"], out["tier"])
    due = None
    if action.what in ("requeue", "cancel") and not out["acted"]:
        due = iso(parse_iso(out["since"]) + action.after)
    out["action_due_at"] = due
    return out


def _span(args: dict, key: str, default: float, limit: float) -> float:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= limit:
        raise BadInput(f"{key} {value!r}: expected seconds, more than 0 and at most {limit:g}")
    return float(value)


def op_samples(daemon: Context, caller: Caller, args: dict) -> dict[str, Any]:
    """History of one card, of every card, or of one job's cards (see docs/telemetry.md)."""
    span = _span(args, "since", 3600.0, MAX_SPAN)
    now = daemon.clock()
    since = now - span
    resolution = args.get("resolution", "auto")
    if resolution not in ("auto", "raw", "minute"):
        raise BadInput(f"resolution {resolution!r}: expected auto, raw or minute")
    if resolution == "auto":
        resolution = "raw" if span <= RAW_UP_TO else "minute"
    gpu, job = args.get("gpu"), args.get("job")
    if gpu is not None and (isinstance(gpu, bool) or not isinstance(gpu, int)
                            or not 0 <= gpu < 1 << 16):
        raise BadInput(f"gpu {gpu!r}: expected a card index")
    out = {"since": iso(since), "until": iso(now), "interval": daemon.config.telemetry.interval,
           "resolution": resolution, "gpu": gpu, "job": None}
    samples = daemon.store.samples
    if job is not None:
        out["job"] = job_id = resolve_id(daemon, caller, str(job))
        if resolution == "raw":
            points = samples.job_series(job_id, since)
        else:
            points = [_job_minute(r) for r in samples.job_minutes(since, job_id)]
        if gpu is not None:
            points = [p for p in points if p["card"] == gpu]
    elif resolution == "raw":
        points = samples.card_series(since, gpu)
    else:
        points = [_card_minute(r) for r in samples.card_minutes(since, gpu)]
    out["points"] = [{"at": _iso_ms(p.pop("at")), "gpu": p.pop("card"), **p} for p in points]
    return out


def _iso_ms(t: float) -> str:
    from datetime import datetime, timezone

    text = datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _mean(total: int, n: int) -> float | None:
    return round(total / n, 2) if n else None


def _bytes(mib: int | None) -> int | None:
    return None if mib is None else mib << 20


def _card_minute(r: dict) -> dict:
    return {"at": r["minute"] * 60.0, "card": r["card"],
            "utilization": _mean(r["util_sum"], r["util_n"]), "utilization_max": r["util_max"],
            "memory_used": _bytes(r["mem_avg"]), "memory_max": _bytes(r["mem_max"]),
            "external_used": _bytes(r["ext_max"]), "temperature": r["temp_max"],
            "power_w": r["power_avg"], "samples": r["n"]}


def _job_minute(r: dict) -> dict:
    return {"at": r["minute"] * 60.0, "card": r["card"],
            "utilization": _mean(r["util_sum"], r["util_n"]),
            "memory_used": _bytes(r["mem_max"]), "samples": r["n"]}


def op_stats(daemon: Context, caller: Caller, args: dict) -> dict[str, Any]:
    """The lab's figures over the last `since` seconds, or over [start, until) (epoch
    seconds: a month for `gq stats --month`)."""
    now = daemon.clock()
    if args.get("until") is not None:
        start, until = _bounds(args, now)
    else:
        until = now
        start = now - _span(args, "since", 7 * 86400.0, 400 * 86400.0)
    config = daemon.config
    inp = StatsInput(
        since=start, now=until, accounts=dict(config.accounts.members),
        card_totals={g.index: g.memory_total for g in daemon.cards},
        running=[j for j in daemon.store.holding_jobs() if j.started_at is not None],
        interval=max(config.telemetry.interval, config.tick),
        idle_util={t: config.offenders.rules(t).idle_util for t in ("high", "normal", "low")},
        pools=config.pools.for_cards([g.index for g in daemon.cards]).cards,
        default_pool=config.pools.default_name(),
    )

    return {"host": daemon.hostname, **lab_stats(daemon.store, inp),
            "predictions": prediction_quality(daemon.store.history, start, until),
            "learned_mem": learned_mem_quality(daemon.store.history, start, until)}


def _bounds(args: dict, now: float) -> tuple[float, float]:
    start, until = args.get("start"), args.get("until")
    for key, value in (("start", start), ("until", until)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadInput(f"{key} {value!r}: expected epoch seconds")
    if not start < until or until - start > 400 * 86400.0:
        raise BadInput("start and until: expected a period of up to 400 days, start first")
    return float(start), float(min(until, now))


def usage_json(daemon: Context, job: Job) -> dict[str, Any] | None:
    """What the job's current (or else last) run used of its cards, for `gq show`."""
    if daemon.store.is_holding(job.id):
        usage = daemon.telemetry.usage_of(job)
        mean = usage.util_mean
        return {"run": "current", "peak_mem_by_gpu": {str(k): v for k, v in
                                                     sorted(usage.peaks.items())},
                "util_mean": None if mean is None else round(mean, 1),
                "samples": usage.samples}
    row = daemon.store.history.last_run(job.id)
    if row is None:
        return None
    return {"run": "last", "peak_mem_by_gpu": json.loads(row["peaks"] or "{}"),
            "util_mean": row["util_mean"], "samples": None}


def op_fairshare(daemon: Context, caller: Caller, args: dict) -> dict[str, Any]:
    """`gq fairshare`: each account's and user's share, decayed usage and factor, as the
    scheduling pass uses them (gq/policy/accounts.py). With [access] queue = "own", a user who
    is not an admin sees the accounts' figures, and of the users only themself."""

    daemon.refresh_usage()  # at most once a minute, as for the scheduling pass
    rows = share_report(daemon.usage, daemon.config.accounts)
    if not daemon.authority.sees_all(caller):
        for row in rows:
            row["users"] = [u for u in row["users"] if u["user"] == caller.user]
    for row in rows:
        for item in (row, *row["users"]):
            item["usage_card_hours"] = round(item.pop("usage_card_seconds") / 3600, 3)
    return {"half_life": daemon.config.fairshare.half_life,
            "weight_fairshare": daemon.config.fairshare.weight_fairshare, "accounts": rows}


def processes_json(daemon: Context, job: Job) -> list[dict[str, Any]]:
    """The job's processes on its cards, as nvitop lists them: pid, card, memory (None:
    unknown) and command line; from the last card reading, for `gq show` and gq top."""
    if not daemon.store.is_holding(job.id):
        return []
    out = []
    for card in daemon.cards:
        for proc in card.processes or ():
            owner = daemon.reading.owners.get(proc.pid)
            if (owner is None or owner.job_id != job.id or not owner.alive
                    or owner.by_environment):  # as gq gpus counts them: its tree only
                continue
            out.append({"pid": proc.pid, "gpu": card.index, "used_memory": proc.used_memory,
                        "command": owner.command})
    return out
