"""Submits for another host (`--host NAME|any`): sent to the peer with an idempotency key, or,
when no peer that could take the job answers, queued here at reason PeerDown and sent later.

Exactly once: the key goes with every try, and the peer's daemon answers a key it has seen
with the job it made, so a connection cut after the peer accepted a submit never makes a
second job. A job waiting here is pinned to the peer it was first tried on, since only that
peer can know whether it already has it."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any

from gq.daemon.context import Context
from gq.daemon.enqueue import op_submit
from gq.daemon.peers.placement import LOCAL, choose
from gq.daemon.submission import HostLimits, build_job
from gq.daemon.views import job_json
from gq.model import DepKind, JobState, Reason
from gq.protocol import BadInput, GqError
from gq.remote.spec import Unreachable

log = logging.getLogger("gq.daemon")
ANY = "any"
_ANYWHERE = HostLimits(name="", cpus=1 << 30, ram=None, card_memory=(1 << 62,) * 1024)


def remote(job: dict[str, Any], peer: str) -> dict[str, Any]:
    """A job as a peer answered it, named as this host names it: `peer:id`."""
    out = {**job, "id": f"{peer}:{job['id']}", "host": peer}
    array = out.get("array")
    if isinstance(array, dict):  # a job's
        out["array"] = {**array, "id": f"{peer}:{array['id']}"}
    elif array is not None:  # an answer to cancel, hold...: the array's id
        out["array"] = f"{peer}:{array}"
    if out.get("array_jobs"):
        out["array_jobs"] = [f"{peer}:{i}" for i in out["array_jobs"]]
    return out


def check_may_forward(caller) -> None:
    """A peer sees this daemon's SSH login as the caller: only the daemon's own user (or root)
    may act through it, or another local user could act as that login there."""
    if caller.uid not in (os.getuid(), 0):
        raise GqError("peers act as this daemon's SSH login; only its owner can send requests "
                      "that change anything there")


def pin_dependencies(daemon: Context, args: dict[str, Any], target: str) -> tuple[str, dict]:
    """Dependencies are on jobs of the host that runs the job: `--after gpu2:12` sends it to
    gpu2; a plain id is this host's, so `--host any` with one stays here."""
    out, hosts = dict(args), set()
    for kind in DepKind:
        ids = args.get(str(kind))
        if not isinstance(ids, list):
            continue
        stripped = []
        for text in map(str, ids):
            host, sep, rest = text.rpartition(":")
            hosts.add(host if sep and host not in (daemon.hostname, "local") else LOCAL)
            stripped.append(rest if sep else text)
        out[str(kind)] = stripped
    if not hosts:
        return target, out
    if len(hosts) > 1:
        raise BadInput("dependencies on jobs of different hosts: a job runs on one host and "
                       "waits for jobs of that host only")
    (host,) = hosts
    if target not in (ANY, host) and not (host == LOCAL and target == daemon.hostname):
        where = host or daemon.hostname
        raise BadInput(f"--host {target}: its dependencies are jobs of {where}, where it must "
                       "run")
    return host, out


async def submit(daemon: Context, caller, args: dict[str, Any], target: str) -> dict[str, Any]:
    check_may_forward(caller)
    target, args = pin_dependencies(daemon, {k: v for k, v in args.items() if k != "host"},
                                    target)
    if target != LOCAL and target != ANY:
        daemon.peers.state(target)  # a known peer, or BadInput
    _refuse_for_one_host(daemon, args, target)
    if target == LOCAL:
        return op_submit(daemon, caller, args)
    # The idempotency key of gq/cli/client.py's submits: the peer answers a key it has seen
    # (from the same login) with the job it already queued.
    args.setdefault("idempotency_key", uuid.uuid4().hex)
    if target == ANY:
        best, refused, unreachable = await choose(daemon, caller, args)
        if best == LOCAL:
            return op_submit(daemon, caller, args)
        if best is None:
            if not unreachable:
                raise BadInput("no host can run this job: " + "; ".join(
                    f"{name}: {why}" for name, why in refused.items()))
            return queue_here(daemon, caller, args, ANY, "no peer that might run it answers")
        target = best
    if not daemon.peers.may_try(target):
        return queue_here(daemon, caller, args, target, daemon.peers.state(target).down_message())
    try:
        job = await send(daemon, target, args, daemon.peers.config.submit_retry)
    except GqError as e:
        if not _unreachable(e):
            raise
        return queue_here(daemon, caller, args, target, e.message)
    return remote(job, target)


def _refuse_for_one_host(daemon: Context, args: dict[str, Any], target: str) -> None:
    """A script's #SBATCH line that one host cannot honour (`--nodes=2`), which the CLI let
    through for a peer: only a Slurm peer takes it."""
    script = args.get("sbatch_script")
    if not isinstance(script, dict) or not script.get("refused"):
        return
    state = daemon.peers.states.get(target) if target not in (LOCAL, ANY) else None
    if state is None or state.spec.kind != "slurm":
        raise BadInput(str(script["refused"])[:500])


def _unreachable(e: GqError) -> bool:
    return isinstance(e, Unreachable)


async def send(daemon: Context, name: str, args: dict[str, Any], within: float) -> dict[str, Any]:
    """The peer's answer to the submit, sent again with the same key after a cut connection,
    until `within` seconds have passed."""

    deadline, delay = time.monotonic() + within, 0.1
    while True:
        try:
            return await daemon.peers.call(name, "submit", args, force=True)
        except Unreachable:
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(2 * delay, 2.0)


def queue_here(daemon: Context, caller, args: dict[str, Any], target: str,
               why: str = "no peer answers") -> dict[str, Any]:
    """Queue the job here at reason PeerDown, to be sent to `target` when it answers. Checked
    as far as this host can (the peer checks its resources and --cwd when it gets it)."""
    if args.get("array") or args.get("sweep"):
        raise GqError(f"{why}; an array or sweep does not wait here for a peer: submit it "
                      "again once one is up (gq peers check)")
    local = {k: v for k, v in args.items() if k not in set(DepKind)}
    now = daemon.clock()
    job = build_job(local, caller, _ANYWHERE, lambda t, f: 0, now, cwd_here=False)
    job.host, job.forward, job.forward_args = target, target, args
    if job.state == JobState.PENDING:
        job.reason = Reason.PEER_DOWN
    job.id = daemon.store.insert_job(job, now)
    daemon.store.note(job.id, now, f"waits for {'a peer' if target == ANY else target} to "
                                   "answer, to be sent there")
    return job_json(daemon.store.get_job(job.id))


async def forward_waiting(daemon: Context) -> None:
    """Send the jobs waiting here for a peer to one that answers (the monitor calls this)."""
    peers = daemon.peers
    for stub in [j for j in daemon.store.queue() if j.forward and j.state == JobState.PENDING]:
        target = stub.forward
        job = daemon.store.get_job(stub.id)
        args = {**job.forward_args, "hold": False}  # it is pending: released if it was held
        caller = _Owner(job.uid, job.user)
        if target == ANY:
            target, refused, _ = await choose(daemon, caller, args, with_local=False)
            if target is None:
                continue
            daemon.store.update(stub.id, forward=target)  # pinned: see the module's doc
        elif target not in peers.states or not peers.may_try(target):
            continue
        try:
            answer = await send(daemon, target, args, peers.config.connect_timeout)
        except GqError as e:
            if not _unreachable(e):
                _refused(daemon, stub.id, e.message)
            continue
        await _moved(daemon, stub.id, target, answer)


class _Owner:
    def __init__(self, uid: int, user: str):
        self.uid, self.user = uid, user


def _refused(daemon: Context, job_id: int, message: str) -> None:
    now = daemon.clock()
    daemon.store.transition(job_id, JobState.FAILED, now, reason=f"refused: {message}",
                            ended_at=now)
    daemon.notify(job_id)


async def _moved(daemon: Context, job_id: int, peer: str, answer: dict[str, Any]) -> None:
    ref = f"{peer}:{answer['id']}"
    current = daemon.store.get_job(job_id)
    if current.state == JobState.CANCELLED:  # cancelled here while it was being sent
        await daemon.peers.call(peer, "cancel", {"ids": [str(answer["id"])]})
        return
    now = daemon.clock()
    daemon.store.transition(job_id, JobState.CANCELLED, now, reason=f"moved to {ref}",
                            detail=f"sent to {peer}, where it is job {answer['id']}",
                            ended_at=now, moved_to=ref)
    log.info("job %s sent to %s as %s", job_id, peer, ref)
    daemon.wake_waiters([job_id])  # `gq wait` follows it there (route.py)
