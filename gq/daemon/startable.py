"""Whether a waiting job can ever start: refusing one that never could, and `gq wait`, which
ends when a job has ended or can no longer start without someone acting."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from gq.daemon.lookup import load_jobs
from gq.daemon.submission import Caller
from gq.daemon.views import job_json
from gq.model import ENDED_STATES, Job, JobState, Reason
from gq.policy.quotas import never_start_refusal, submit_refusal
from gq.policy.quotas import never_starts as quota_never_starts
from gq.protocol import BadInput

if TYPE_CHECKING:
    from gq.daemon.context import Context


def never_starts(daemon: Context, job: Job) -> tuple[str, bool] | None:
    """Which limit keeps `job` from ever starting here, and whether a lower tier would let it
    start; None if it can start once the cards are free (gq.policy.quotas)."""
    return quota_never_starts(job, daemon.config.limits, len(daemon.cards),
                              daemon.config.accounts)


def refuse_never(daemon: Context, job: Job) -> str | None:
    """The one line that refuses a job that could never start; None if it can."""
    return never_start_refusal(job, daemon.config.limits, len(daemon.cards),
                               daemon.config.accounts)


def refuse_submit(daemon: Context, job: Job) -> str | None:
    """The line with which submit refuses it (and `gq sim` drops it); None if it can start."""
    return submit_refusal(job, daemon.config.limits, len(daemon.cards), daemon.config.accounts)


async def op_wait(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    """Until each job has ended, or can no longer start without someone acting (its dependency
    failed, or a limit it can never meet), or `timeout` seconds have passed."""

    jobs = load_jobs(daemon, caller, args.get("ids"))
    timeout = args.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout < 0):
        raise BadInput(f"--timeout {timeout!r}: expected a duration like 10m")
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    for job in jobs:
        ended = None  # told when the job ends (core.wake_waiters); asked for only if need be
        while True:
            cached = daemon.store.cached_job(job.id)  # waiting or holding: from memory
            if cached is None and daemon.store.state(job.id) in ENDED_STATES:
                break
            if stuck(daemon, cached or daemon.store.light_jobs([job.id])[job.id]):
                break
            left = 1.0 if deadline is None else min(1.0, deadline - loop.time())
            if left <= 0:
                break
            if ended is None or ended.done():
                ended = daemon.wait_for_end(job.id)
            # A stuck job is not an event: look again each second.
            await asyncio.wait({ended}, timeout=left)
    # As they are now, read at once (the command and directory too, not the environment).
    now = daemon.store.jobs_by_id([job.id for job in jobs], env=False)
    return [{**job_json(now[j.id]), "never_starts": stuck(daemon, now[j.id])} for j in jobs]


def stuck(daemon: Context, job: Job) -> bool:
    """A waiting job that no pass will start until someone acts: `gq release`, `gq update`,
    `gq cancel`, or a change of the limits."""
    if job.state != JobState.PENDING:
        return False
    if job.reason == Reason.DEPENDENCY_NEVER_SATISFIED:
        return True
    return job.reason == Reason.QUOTA_LIMIT and never_starts(daemon, job) is not None
