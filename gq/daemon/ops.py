"""Request handlers: one function per protocol operation, acting through the Daemon."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from gq import __version__
from gq.daemon import arrays
from gq.daemon.complete import op_complete  # noqa: F401 (an operation: see OPS)
from gq.config_show import effective
from gq.daemon.authz import require_owner
from gq.daemon.core import Daemon
from gq.daemon.diskfull import TRUNCATED
from gq.daemon.identity import NoAccount, identity_of
from gq.daemon.mem_history import LEARNED, apply_mem_history
from gq.daemon.notify import check_notify
from gq.daemon.runtimes import prediction_json
from gq.daemon.reservations import op_reservations, op_reserve, op_unreserve  # noqa: F401
from gq.daemon.explain import explain, op_why  # noqa: F401 (an operation: see OPS)
from gq.daemon.reload import op_reload  # noqa: F401 (an operation: see OPS)
from gq.daemon.listing import expected_start, op_clean, op_list, start_basis  # noqa: F401
from gq.daemon.startable import op_wait, refuse_never  # noqa: F401
from gq.daemon.submission import Caller, HostLimits, build_job, check_key
from gq.daemon.submit_limits import check_submit
from gq.daemon.update import op_update  # noqa: F401 (an operation: see OPS)
from gq.daemon.telemetry_ops import (  # noqa: F401 (operations: see OPS)
    op_fairshare, op_offenders, op_samples, op_stats, processes_json, usage_json,
)
from gq.daemon.views import gpu_json, job_json
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState, Reason
from gq.peers.ops import (  # noqa: F401 (operations: see OPS)
    op_estimate, op_log, op_peer_add, op_peer_check, op_peer_rm, op_peers,
)
from gq.protocol import VERSION, BadInput, GqError
from gq.units import format_duration


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
    if not (text.isascii() and text.isdigit()):
        raise BadInput(f"{flag} {text[:100]!r}: expected a job id (a number, or @ for your "
                       "last job)")
    job_id = arrays.job_number(text)
    if job_id is None or not daemon.store.existing_ids([job_id]):
        raise BadInput(f"{flag} {text[:100]}: no such job")
    if not daemon.authority.sees_all(caller):  # [access] queue = "own": others' are hidden
        if not daemon.authority.may_see(caller, daemon.store.get_job(job_id)):
            raise BadInput(f"{flag} {job_id}: no such job of yours")
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
    # Light (no command, directory or environment), waiting ones from memory: all a change of
    # state needs, and cheap for a 10,000-element array.
    found = daemon.store.light_jobs(selected)
    return [found[i] for i in selected]


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
        "uid": caller.uid,
        "system": daemon.layout.system,
        "socket": str(daemon.layout.socket),
        "warnings": daemon.warnings,  # found at start: the queue went backwards
    }


def op_config(daemon: Daemon, caller: Caller, args: dict) -> dict:
    """The effective settings and where each came from (`gq config show`)."""
    return {"file": str(daemon.layout.config), "read": daemon.config.path is not None,
            "socket": str(daemon.layout.socket), "settings": effective(daemon.config)}


def host_limits(daemon: Daemon) -> HostLimits:
    return HostLimits(
        name=daemon.hostname,
        cpus=daemon.config.host_cpus,
        ram=daemon.config.host_ram,
        card_memory=tuple(g.memory_total for g in daemon.cards),
        preemptible_tiers=daemon.config.preemption.preemptible,
        grace=daemon.config.preemption.grace,
        pools=daemon.config.pools,
        card_ids=tuple(g.index for g in daemon.cards),
    )


def op_submit(daemon: Daemon, caller: Caller, args: dict) -> dict:
    # The client's key (and a peer's, forwarding a submit): the same key again is the same
    # submit, answered with the job the first attempt queued.
    key = check_key(args)
    if key is not None and (queued := daemon.store.job_for_key(caller.uid, key)) is not None:
        daemon.store.needs_sync()  # the first attempt's answer may still wait for the disk
        return _submitted(daemon, queued)
    if daemon.layout.system:  # the job will run as the caller: they must have an account
        try:
            identity_of(caller.uid)
        except NoAccount as e:
            raise GqError(f"{e}: jobs run as their submitter") from None
    limits = host_limits(daemon)
    args, notes = apply_mem_history(daemon.store, args, limits.card_memory,
                                    daemon.config.learn_mem)
    resolve = lambda t, f: resolve_id(daemon, caller, t, f)  # noqa: E731
    args = arrays.expand_dependencies(daemon.store, args, resolve)
    job = build_job(args, caller, limits, resolve, daemon.clock())
    never = refuse_never(daemon, job)
    if never is not None:
        raise BadInput(f"-p {job.priority} -g {job.gpus}: {never}")
    job.notify = check_notify(args, daemon.config.notify)
    parts = arrays.elements(args, job.command)
    check_submit(daemon.config.access, job, parts and parts[0],
                 daemon.store.waiting_count(caller.uid))
    with daemon.store.synced_later():  # answered once on disk: gq/daemon/group_commit.py
        if parts is not None:
            job.id = arrays.insert_elements(daemon.store, job, *parts, key=key)[0]
        else:
            job.id = daemon.store.insert_job(job, job.submitted_at, key)
    for note in notes:
        if note.startswith(LEARNED):  # what gq stats counts as a learned request
            daemon.store.note(job.id, job.submitted_at, note)
    daemon.request_pass()
    if parts is None:  # the row is what was just written from `job`: not read back
        return {**job_json(job), "notes": notes}
    return {**_submitted(daemon, job.id), "notes": notes}


def _submitted(daemon: Daemon, job_id: int) -> dict:
    job = daemon.store.get_job(job_id)
    if job.array is None:
        return job_json(job)
    return {**job_json(job), "array_jobs": daemon.store.array_members(job.array.id)}


def op_show(daemon: Daemon, caller: Caller, args: dict) -> dict:
    job_id = resolve_id(daemon, caller, args.get("id", ""))
    daemon.explain_now()  # the reasons as of now, if the queue changed since they were given
    job = daemon.store.get_job(job_id)
    out = job_json(job)
    out["why"] = explain(daemon, job)
    out["expected_start"] = expected_start(daemon, job.id)
    out["expected_start_basis"] = start_basis(daemon, job.id)
    out["prediction"] = (prediction_json(daemon.run_times.predict(job, daemon.clock()))
                         if job.state in ACTIVE_STATES else None)
    out["offences"] = [  # what it is an offender for now (gq offenders has the history)
        {"kind": row["kind"], "evidence": row["evidence"],
         "suggestion": row["figures"].get("suggestion", ""), "action": row["action"]}
        for row in daemon.open_offences.values() if row["job_id"] == job.id]
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
    out["processes"] = processes_json(daemon, job)
    out["account"] = daemon.config.accounts.members.get(job.user)  # None: in no account
    out["stdout"] = str(daemon.layout.stdout(job_id, job.user))
    out["stderr"] = str(daemon.layout.stderr(job_id, job.user))
    out["checkpoint_dir"] = str(daemon.layout.checkpoint_dir(job_id, job.user))
    out["events"] = [
        {k: e[k] for k in ("at", "old_state", "new_state", "reason", "detail")}
        for e in daemon.store.events(job_id)
    ]
    out["output_truncated"] = any(e["detail"] == TRUNCATED for e in out["events"])
    if job.array is not None:  # `gq logs ARRAY` reads each element's
        out["array_jobs"] = daemon.store.array_members(job.array.id)
    if daemon.authority.may_act(caller, job):  # the environment is the owner's (and admins')
        out["env"] = job.env
        out["notify"] = job.notify and {"command": job.notify.command, "mail": job.notify.mail}
    return out


def op_cancel(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    results = []
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    require_owner(daemon, caller, jobs, "cancel")
    reason = f"cancelled by {caller.user}"
    waiting, running = [], []
    for job in jobs:
        if job.state in ENDED_STATES:
            results.append(arrays.result(job, False, f"already {job.state}", from_array))
            continue
        (running if job.state in (JobState.RUNNING, JobState.PREEMPTING) else waiting).append(job)
        results.append(arrays.result(job, True, "cancelled", from_array))
    # One statement for all waiting ones: a 10,000-element array is one commit, not 10,000.
    daemon.store.end_waiting(waiting, JobState.CANCELLED, daemon.clock(), reason)
    for job in running:
        daemon.stop(job, JobState.CANCELLED, reason)
    daemon.notify_many([job.id for job in waiting])
    daemon.request_pass()
    return results


def op_hold(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _hold)


def op_release(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _release)


def op_requeue(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _requeue)


def _each(daemon: Daemon, caller: Caller, args: dict, action, verb: str | None = None
          ) -> list[dict]:
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    require_owner(daemon, caller, jobs, verb or action.__name__.strip("_"))
    results = []
    with daemon.store.atomic():  # one commit for all of them
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
            started_at=None, ended_at=None, exit_code=None, gpu_ids=[], failure=None,
            failure_evidence=[],
        )
        return True, "requeued"
    return False, f"is {job.state}; nothing to requeue"


def op_gpus(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    holding = daemon.store.holding_jobs()
    hide = not daemon.authority.sees_all(caller)  # others' jobs: how much, not whose
    out = []
    pools = daemon.config.pools.for_cards([g.index for g in daemon.cards]).cards
    pool_of = {g.index: ",".join(sorted(n for n, cards in pools.items() if g.index in cards))
               or None for g in daemon.cards}  # a card may be in several pools
    for card in daemon.cards:
        used = _held_by_jobs(daemon, card)
        on_card = [
            {"id": j.id, "user": j.user, "name": j.name, "mem": j.mem or card.memory_total,
             "whole_card": j.mem is None, "state": str(j.state),
             "used": None if used is None else used.get(j.id, 0)}
            if not (hide and j.uid != caller.uid) else
            {"id": None, "user": None, "name": None, "mem": j.mem or card.memory_total,
             "whole_card": j.mem is None, "state": str(j.state),
             "used": None if used is None else used.get(j.id, 0)}
            for j in holding
            if card.index in j.gpu_ids
        ]
        out.append(gpu_json(card, on_card, daemon.external.get(card.index)))
        out[-1]["pool"] = pool_of.get(card.index)  # None: no pools configured
    return out


def _held_by_jobs(daemon: Daemon, card) -> dict[int, int | None] | None:
    """Bytes each job's processes hold on the card (None: the card's process list, or that
    job's memory on it, cannot be read). Only the process tree proves a job's memory."""
    if card.processes is None:
        return None
    used: dict[int, int | None] = {}
    for proc in card.processes:
        owner = daemon.owners.get(proc.pid)
        if owner is None or not owner.alive or owner.by_environment or owner.job_id is None:
            continue
        before = used.get(owner.job_id, 0)
        used[owner.job_id] = (None if before is None or proc.used_memory is None
                              else before + proc.used_memory)
    return used


def op_shutdown(daemon: Daemon, caller: Caller, args: dict) -> dict:
    if caller.uid not in (0, os.getuid()):
        raise GqError("only root can stop the system daemon" if daemon.layout.system
                      else "only the daemon's owner can stop it")
    asyncio.get_running_loop().call_soon(daemon.loop_stop.set)
    running = len(daemon.shims) + len(daemon.unadopted)
    return {"stopping": True, "running_jobs": running}


OPS = {
    name[3:]: fn for name, fn in dict(globals()).items() if name.startswith("op_") and callable(fn)
}
