"""Request handlers: one function per protocol operation, acting through the Daemon."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from gq import __version__
from gq.daemon import arrays
from gq.daemon.complete import op_complete  # noqa: F401 (an operation: see OPS)
from gq.daemon.core import Daemon
from gq.daemon.mem_history import apply_mem_history
from gq.daemon.notify import check_notify
from gq.daemon.submission import Caller, HostLimits, build_job
from gq.daemon.reservations import op_reservations, op_reserve, op_unreserve  # noqa: F401
from gq.daemon.telemetry_ops import op_offenders, op_samples, op_stats, usage_json  # noqa: F401
from gq.daemon.views import gpu_json, job_json, why_sentence
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState, Reason
from gq.protocol import VERSION, BadInput, GqError
from gq.units import format_duration, iso


def resolve_id(daemon: Daemon, caller: Caller, text: str, flag: str = "job id") -> int:
    """'12' or '@' (the caller's last job) -> an existing job id."""
    text = str(text).strip()
    if text == "@":
        last = daemon.store.last_job_id(caller.user)
        if last is None:
            raise BadInput(f"{flag} @: you have no jobs yet")
        array = daemon.store.get_job(last).array
        return last if array is None else array.id  # @ is the last submit: all of an array
    element = arrays.parse_element(text)
    if element is not None:
        job_id = daemon.store.array_element(*element)
        if job_id is None:
            raise BadInput(f"{flag} {text}: no element {element[1]} in an array {element[0]}")
        return job_id
    if not text.isdigit():
        raise BadInput(f"{flag} {text!r}: expected a job id (a number, or @ for your last job)")
    job_id = int(text)
    if not daemon.store.existing_ids([job_id]):
        raise BadInput(f"{flag} {job_id}: no such job")
    return job_id


def load_jobs(daemon: Daemon, caller: Caller, ids: Any,
              from_array: set[int] | None = None) -> list[Job]:
    """The jobs named, an array id standing for all its elements; `from_array` collects the
    ids of those named only through their array."""
    if not isinstance(ids, list) or not ids:
        raise BadInput("no job id given")
    resolved = [(str(i).strip(), resolve_id(daemon, caller, i)) for i in ids]
    selected, whole = arrays.select(daemon.store, resolved)
    if from_array is not None:
        from_array |= whole
    return [daemon.store.get_job(i) for i in selected]


def check_owner(job: Job, caller: Caller) -> None:
    if caller.uid not in (job.uid, 0, os.getuid()):
        raise GqError(f"job {job.id} belongs to {job.user}; you can only act on your own jobs")


def op_ping(daemon: Daemon, caller: Caller, args: dict) -> dict:
    return {
        "version": __version__,
        "protocol": VERSION,
        "host": daemon.hostname,
        "pid": os.getpid(),
        "home": str(daemon.layout.home),
        "backend": daemon.backend.kind,
        "gpus": len(daemon.cards),
        "user": caller.user,
    }


def op_submit(daemon: Daemon, caller: Caller, args: dict) -> dict:
    limits = HostLimits(
        name=daemon.hostname,
        cpus=daemon.config.host_cpus,
        ram=daemon.config.host_ram,
        card_memory=tuple(g.memory_total for g in daemon.cards),
        preemptible_tiers=daemon.config.preemption.preemptible,
        grace=daemon.config.preemption.grace,
        pools=daemon.config.pools,
        card_ids=tuple(g.index for g in daemon.cards),
    )
    args, notes = apply_mem_history(daemon.store, args, limits.card_memory)
    resolve = lambda t, f: resolve_id(daemon, caller, t, f)  # noqa: E731
    args = arrays.expand_dependencies(daemon.store, args, resolve)
    job = build_job(args, caller, limits, resolve, daemon.clock())
    job.notify = check_notify(args, daemon.config.notify)
    parts = arrays.elements(args, job.command)
    if parts is not None:
        ids = arrays.insert_elements(daemon.store, job, *parts)
        daemon.request_pass()
        return {**job_json(daemon.store.get_job(ids[0])), "array_jobs": ids, "notes": notes}
    job.id = daemon.store.insert_job(job, job.submitted_at)
    daemon.request_pass()
    return {**job_json(daemon.store.get_job(job.id)), "notes": notes}


def op_list(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    states = None
    if args.get("states"):
        try:
            states = [JobState(s) for s in args["states"]]
        except ValueError:
            names = ", ".join(s.value for s in JobState)
            raise BadInput(f"--state: expected one of {names}") from None
    elif not args.get("all"):
        states = ACTIVE_STATES
    jobs = daemon.store.jobs(states=states, user=args.get("user") or None)
    return [{**job_json(j), "expected_start": _expected_start(daemon, j.id)} for j in jobs]


def _expected_start(daemon: Daemon, job_id: int) -> str | None:
    forecast = daemon.forecasts.get(job_id)
    return iso(forecast.start) if forecast else None


def op_show(daemon: Daemon, caller: Caller, args: dict) -> dict:
    job_id = resolve_id(daemon, caller, args.get("id", ""))
    job = daemon.store.get_job(job_id)
    out = job_json(job)
    forecast = daemon.forecasts.get(job.id)
    out["why"] = why_sentence(job, daemon.shortfalls.get(job.id), forecast,
                              daemon.config.preemption.max_requeues)
    out["expected_start"] = _expected_start(daemon, job.id)
    score = daemon.scores.get(job.id) if job.state in (JobState.PENDING, JobState.HELD) else None
    out["score"] = None if score is None else {
        "total": round(score.total, 4),
        "fairshare": round(score.fairshare, 4),
        "age": round(score.age, 4),
        "short": round(score.short, 4),
        "usage_card_hours": round(score.usage / 3600, 3),
        "weights": {"fairshare": daemon.config.fairshare.weight_fairshare,
                    "age": daemon.config.fairshare.weight_age,
                    "short": daemon.config.fairshare.weight_short},
    }
    out["usage"] = usage_json(daemon, job)
    out["account"] = daemon.config.accounts.members.get(job.user)  # None: in no account
    out["stdout"] = str(daemon.layout.stdout(job_id))
    out["stderr"] = str(daemon.layout.stderr(job_id))
    out["checkpoint_dir"] = str(daemon.layout.checkpoint_dir(job_id))
    out["events"] = [
        {k: e[k] for k in ("at", "old_state", "new_state", "reason", "detail")}
        for e in daemon.store.events(job_id)
    ]
    if caller.uid in (job.uid, 0):  # another user's environment is theirs alone
        out["env"] = job.env
        out["notify"] = job.notify and {"command": job.notify.command, "mail": job.notify.mail}
    return out


def op_why(daemon: Daemon, caller: Caller, args: dict) -> dict:
    job = daemon.store.get_job(resolve_id(daemon, caller, args.get("id", "")))
    forecast = daemon.forecasts.get(job.id)
    why = why_sentence(job, daemon.shortfalls.get(job.id), forecast,
                       daemon.config.preemption.max_requeues)
    return {"id": job.id, "state": str(job.state), "reason": job.reason, "why": why,
            "expected_start": iso(forecast.start) if forecast else None}


def op_cancel(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    results = []
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    for job in jobs:
        check_owner(job, caller)
    for job in jobs:
        now = daemon.clock()
        if job.state in ENDED_STATES:
            results.append(arrays.result(job, False, f"already {job.state}", from_array))
            continue
        reason = f"cancelled by {caller.user}"
        if job.state in (JobState.RUNNING, JobState.PREEMPTING):
            daemon.stop(job, JobState.CANCELLED, reason)
        else:
            daemon.store.transition(job.id, JobState.CANCELLED, now, reason=reason, ended_at=now)
            daemon.notify(job.id)
        results.append(arrays.result(job, True, "cancelled", from_array))
    daemon.request_pass()
    return results


def op_hold(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _hold)


def op_release(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _release)


def op_requeue(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _requeue)


def _each(daemon: Daemon, caller: Caller, args: dict, action) -> list[dict]:
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    for job in jobs:
        check_owner(job, caller)
    results = []
    for job in jobs:
        ok, message = action(daemon, caller, job)
        results.append(arrays.result(job, ok, message, from_array))
    daemon.request_pass()
    return results


def _hold(daemon: Daemon, caller: Caller, job: Job) -> tuple[bool, str]:
    if job.state == JobState.HELD:
        return True, "already held"
    if job.state != JobState.PENDING:
        return False, f"is {job.state}; only pending jobs can be held"
    daemon.store.transition(job.id, JobState.HELD, daemon.clock(), reason=Reason.HELD,
                            detail=f"held by {caller.user}")
    return True, "held"


def _release(daemon: Daemon, caller: Caller, job: Job) -> tuple[bool, str]:
    now = daemon.clock()
    if job.state == JobState.HELD:
        daemon.store.transition(job.id, JobState.PENDING, now, detail=f"released by {caller.user}")
        return True, "released"
    if job.state == JobState.PENDING and job.reason == Reason.DEPENDENCY_NEVER_SATISFIED:
        daemon.store.update(job.id, deps={}, reason=None)
        daemon.store.note(job.id, now, f"dependencies dropped by {caller.user}")
        return True, "released: its unmet dependencies were dropped"
    return False, f"is {job.state}, not held"


def _requeue(daemon: Daemon, caller: Caller, job: Job) -> tuple[bool, str]:
    now = daemon.clock()
    detail = f"requeued by {caller.user}"
    if job.state == JobState.RUNNING:
        daemon.stop(job, JobState.PREEMPTING, detail)
        grace = format_duration(daemon.grace_of(job))
        return True, (f"sent {job.signal}; requeued once it exits (SIGKILL if it still runs "
                      f"after {grace})")
    if job.state in ENDED_STATES:
        daemon.store.transition(
            job.id, JobState.PENDING, now, detail=detail, restarts=job.restarts + 1,
            started_at=None, ended_at=None, exit_code=None, gpu_ids=[],
        )
        return True, "requeued"
    return False, f"is {job.state}; nothing to requeue"


async def op_wait(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    jobs = load_jobs(daemon, caller, args.get("ids"))
    for job in jobs:
        while True:
            current = daemon.store.get_job(job.id)
            if current.state in ENDED_STATES and not daemon.store.is_holding(job.id):
                break
            await daemon.wait_for_end(job.id)
    return [job_json(daemon.store.get_job(job.id)) for job in jobs]


def op_gpus(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    holding = daemon.store.holding_jobs()
    out = []
    for card in daemon.cards:
        on_card = [
            {"id": j.id, "user": j.user, "name": j.name, "mem": j.mem or card.memory_total,
             "whole_card": j.mem is None, "state": str(j.state)}
            for j in holding
            if card.index in j.gpu_ids
        ]
        out.append(gpu_json(card, on_card, daemon.external.get(card.index)))
    return out


def op_shutdown(daemon: Daemon, caller: Caller, args: dict) -> dict:
    if caller.uid not in (0, os.getuid()):
        raise GqError("only the daemon's owner can stop it")
    asyncio.get_running_loop().call_soon(daemon.loop_stop.set)
    running = len(daemon.shims) + len(daemon.unadopted)
    return {"stopping": True, "running_jobs": running}


OPS = {
    name[3:]: fn for name, fn in dict(globals()).items() if name.startswith("op_") and callable(fn)
}
