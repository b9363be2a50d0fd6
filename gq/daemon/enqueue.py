"""`submit`: a request checked and queued (an array's elements in one transaction)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gq.daemon import arrays
from gq.daemon.identity import NoAccount, identity_of
from gq.daemon.lookup import host_limits, resolve_id
from gq.daemon.mem_history import LEARNED, apply_mem_history
from gq.daemon.notify import check_notify
from gq.daemon.startable import refuse_submit
from gq.daemon.submission import Caller, build_job, check_key
from gq.daemon.submit_limits import check_submit
from gq.daemon.views import job_json
from gq.protocol import BadInput, GqError

if TYPE_CHECKING:
    from gq.daemon.context import Context


def op_submit(daemon: Context, caller: Caller, args: dict) -> dict:
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
    never = refuse_submit(daemon, job)
    if never is not None:
        raise BadInput(never)
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
    daemon.passes.request_pass()
    if parts is None:  # the row is what was just written from `job`: not read back
        return {**job_json(job), "notes": notes}
    return {**_submitted(daemon, job.id), "notes": notes}


def _submitted(daemon: Context, job_id: int) -> dict:
    job = daemon.store.get_job(job_id)
    if job.array is None:
        return job_json(job)
    return {**job_json(job), "array_jobs": daemon.store.array_members(job.array.id)}
