"""Request handlers: one function per protocol operation (gq/protocol/ops.py), acting through
the Daemon; `HANDLERS` names each one."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

from gq import __version__
from gq.config.show import effective
from gq.daemon.slurm_env import sbatch_files
from gq.daemon import arrays
from gq.daemon.authz import require_owner
from gq.daemon.complete import op_complete
from gq.daemon.context import Context
from gq.daemon.diskfull import TRUNCATED
from gq.daemon.enqueue import op_submit
from gq.daemon.explain import explain, op_why
from gq.daemon.gpus_op import op_gpus
from gq.daemon.listing import expected_start, op_clean, op_list, start_basis
from gq.daemon.lookup import load_jobs, resolve_id
from gq.daemon.peers.ops import (
    op_estimate, op_log, op_peer_add, op_peer_check, op_peer_rm, op_peers,
)
from gq.daemon.reload import op_reload
from gq.daemon.reservations import op_reservations, op_reserve, op_unreserve
from gq.daemon.runtimes import prediction_json
from gq.daemon.sim_register import op_sim_register
from gq.daemon.startable import op_wait
from gq.daemon.submission import Caller
from gq.daemon.telemetry_ops import (
    op_fairshare, op_offenders, op_samples, op_stats, processes_json, usage_json,
)
from gq.daemon.top import op_top
from gq.daemon.update import op_update
from gq.daemon.views import job_json, largest_card
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState, Reason
from gq.protocol import VERSION, GqError
from gq.protocol.ops import Op
from gq.units import format_duration


def op_ping(daemon: Context, caller: Caller, args: dict) -> dict:
    return {
        "version": __version__,
        "protocol": VERSION,
        "host": daemon.hostname,
        "pid": os.getpid(),
        "home": str(daemon.layout.home),
        "backend": daemon.backend.kind,
        "gpus": len(daemon.cards),
        "largest_card": largest_card(daemon.cards),  # bytes; `gq triage` checks advice by it
        "user": caller.user,
        "uid": caller.uid,
        "system": daemon.layout.system,
        "socket": str(daemon.layout.socket),
        "warnings": daemon.warnings,  # found at start: the queue went backwards
    }


def op_config(daemon: Context, caller: Caller, args: dict) -> dict:
    """The effective settings and where each came from (`gq config show`)."""
    return {"file": str(daemon.layout.config), "read": daemon.config.path is not None,
            "socket": str(daemon.layout.socket), "settings": effective(daemon.config)}


def op_show(daemon: Context, caller: Caller, args: dict) -> dict:
    job_id = resolve_id(daemon, caller, args.get("id", ""))
    daemon.passes.explain_now()  # the reasons as of now, if the queue changed since they were given
    job = daemon.store.get_job(job_id)
    out = job_json(job, largest_card(daemon.cards))  # advice checked against the host
    if job.is_stopping:
        out["reason"] = daemon.stopping.describe(job)
    out["why"] = explain(daemon, job)
    out["expected_start"] = expected_start(daemon, job.id)
    out["expected_start_basis"] = start_basis(daemon, job.id)
    out["prediction"] = (prediction_json(daemon.run_times.predict(job, daemon.clock()))
                         if job.state in ACTIVE_STATES else None)
    out["offences"] = [  # what it is an offender for now (gq offenders has the history)
        {"kind": row["kind"], "evidence": row["evidence"],
         "suggestion": row["figures"].get("suggestion", ""), "action": row["action"]}
        for row in daemon.police.open_offences.values() if row["job_id"] == job.id]
    waiting = job.state in (JobState.PENDING, JobState.HELD)
    score = daemon.passes.scores.get(job.id) if waiting else None
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
    out["freeze"] = daemon.freezing.freeze_view(job)
    out["usage"] = usage_json(daemon, job)
    out["processes"] = processes_json(daemon, job)
    out["account"] = daemon.config.accounts.members.get(job.user)  # None: in no account
    named = sbatch_files(job)  # #SBATCH -o/-e
    out["stdout"] = named[0] if named else str(daemon.layout.stdout(job_id, job.user))
    out["stderr"] = named[1] if named else str(daemon.layout.stderr(job_id, job.user))
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


def op_cancel(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    results = []
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    require_owner(daemon, caller, jobs, "cancel")
    reason = f"cancelled by {caller.user}"
    waiting, running = [], []
    for job in jobs:
        if job.is_stopping:  # cancelled or timed out, its run not gone yet
            results.append(arrays.result(job, False, daemon.stopping.describe(job), from_array))
            continue
        if job.state in ENDED_STATES:
            results.append(arrays.result(job, False, f"already {job.state}", from_array))
            continue
        (running if job.state in (JobState.RUNNING, JobState.PREEMPTING, JobState.FROZEN)
         else waiting).append(job)
        results.append(arrays.result(job, True, "cancelled", from_array))
    # One statement for all waiting ones: a 10,000-element array is one commit, not 10,000.
    daemon.store.end_waiting(waiting, JobState.CANCELLED, daemon.clock(), reason)
    for job in running:
        daemon.stopping.stop(job, JobState.CANCELLED, reason)
    daemon.notify_many([job.id for job in waiting])
    daemon.passes.request_pass()
    return results


def op_hold(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _hold)


def op_release(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _release)


def op_requeue(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    return _each(daemon, caller, args, _requeue)


def _each(daemon: Context, caller: Caller, args: dict, action, verb: str | None = None
          ) -> list[dict]:
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    require_owner(daemon, caller, jobs, verb or action.__name__.strip("_"))
    results = []
    with daemon.store.atomic():  # one commit for all of them
        for job in jobs:
            ok, message = action(daemon, caller, job)
            results.append(arrays.result(job, ok, message, from_array))
    daemon.passes.request_pass()
    return results


def _hold(daemon: Context, caller: Caller, job: Job) -> tuple[bool, str]:
    if job.state == JobState.HELD:
        return True, "already held"
    if job.state != JobState.PENDING:
        return False, f"is {job.state}; only pending jobs can be held"
    daemon.store.transition(job.id, JobState.HELD, daemon.clock(), reason=Reason.HELD,
                            detail=f"held by {caller.user}")
    return True, "held"


def _release(daemon: Context, caller: Caller, job: Job) -> tuple[bool, str]:
    now = daemon.clock()
    if job.state == JobState.HELD:
        daemon.store.transition(job.id, JobState.PENDING, now, detail=f"released by {caller.user}")
        return True, "released"
    if job.state == JobState.PENDING and job.reason == Reason.DEPENDENCY_NEVER_SATISFIED:
        daemon.store.update(job.id, deps={}, reason=None)
        daemon.store.note(job.id, now, f"dependencies dropped by {caller.user}")
        return True, "released: its unmet dependencies were dropped"
    return False, f"is {job.state}, not held"


def _requeue(daemon: Context, caller: Caller, job: Job) -> tuple[bool, str]:
    now = daemon.clock()
    detail = f"requeued by {caller.user}"
    if job.state in (JobState.RUNNING, JobState.FROZEN):  # a frozen one: SIGCONT first
        daemon.stopping.stop(job, JobState.PREEMPTING, detail)
        grace = format_duration(daemon.stopping.grace_of(job))
        return True, (f"sent {job.signal}; requeued once it exits (SIGKILL if it still runs "
                      f"after {grace})")
    if job.state in ENDED_STATES and daemon.store.is_holding(job.id):
        # Its last run still stops: a new one would share its cards and run directory.
        return False, (f"is still stopping ({daemon.stopping.describe(job)}); requeue it "
                       "once it has ended")
    if job.state in ENDED_STATES:
        daemon.store.transition(
            job.id, JobState.PENDING, now, detail=detail, restarts=job.restarts + 1,
            started_at=None, ended_at=None, exit_code=None, gpu_ids=[], failure=None,
            failure_evidence=[],
        )
        return True, "requeued"
    return False, f"is {job.state}; nothing to requeue"


def op_shutdown(daemon: Context, caller: Caller, args: dict) -> dict:
    if caller.uid not in (0, os.getuid()):
        raise GqError("only root can stop the system daemon" if daemon.layout.system
                      else "only the daemon's owner can stop it")
    asyncio.get_running_loop().call_soon(daemon.loop_stop.set)
    running = len(daemon.runs.shims) + len(daemon.runs.unadopted)
    return {"stopping": True, "running_jobs": running}


# The one handler of each operation (gq/protocol/ops.py); tests check that every Op has one.
HANDLERS: dict[Op, Callable[..., Any]] = {
    Op.PING: op_ping,
    Op.CONFIG: op_config,
    Op.SUBMIT: op_submit,
    Op.LIST: op_list,
    Op.SHOW: op_show,
    Op.WHY: op_why,
    Op.LOG: op_log,
    Op.GPUS: op_gpus,
    Op.CANCEL: op_cancel,
    Op.HOLD: op_hold,
    Op.RELEASE: op_release,
    Op.REQUEUE: op_requeue,
    Op.UPDATE: op_update,
    Op.WAIT: op_wait,
    Op.CLEAN: op_clean,
    Op.COMPLETE: op_complete,
    Op.ESTIMATE: op_estimate,
    Op.OFFENDERS: op_offenders,
    Op.SAMPLES: op_samples,
    Op.STATS: op_stats,
    Op.FAIRSHARE: op_fairshare,
    Op.RESERVE: op_reserve,
    Op.UNRESERVE: op_unreserve,
    Op.RESERVATIONS: op_reservations,
    Op.PEERS: op_peers,
    Op.PEER_ADD: op_peer_add,
    Op.PEER_RM: op_peer_rm,
    Op.PEER_CHECK: op_peer_check,
    Op.RELOAD: op_reload,
    Op.SHUTDOWN: op_shutdown,
    Op.TOP: op_top,
    Op.SIM_REGISTER: op_sim_register,
}
