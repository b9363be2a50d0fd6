"""The rules that end or requeue a run, as plain functions of jobs and the time: the daemon
applies what they decide (gq/daemon/ending.py); tests/unit/test_limits.py tests them alone.

- a running job past its --time is stopped as `timeout`, or, if it was interactive in a pool
  whose interactive runs go on as batch work (`past_limit = "requeue"`), requeued as batch work;
- a run stopped by preemption or `gq requeue` is queued again, or held once it has been
  preempted more than [preemption] max_requeues times (gq/policy/preemption.py:
  requeue_or_hold, which `gq sim` applies too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from gq.config.governance import PoolsConfig
from gq.model import Job, JobState
from gq.units import format_duration


@dataclass(frozen=True)
class Stop:
    """Stop job `job_id`, going to `state`, with `reason` and these store `fields`."""

    job_id: int
    state: JobState
    reason: str
    fields: dict[str, Any] = field(default_factory=dict)


def time_limit_stops(jobs: Iterable[Job], now: float, pools: PoolsConfig) -> list[Stop]:
    out = []
    for job in jobs:
        if job.state != JobState.RUNNING or not job.time_limit or job.started_at is None:
            continue
        if now - job.started_at < job.time_limit:
            continue
        limit = format_duration(job.time_limit)
        pool = pools.get(job.pool) if job.interactive else None
        # An attached job (gq run) ends at its limit: its caller is waiting on it, not a queue.
        if pool is not None and pool.past_limit == "requeue" and job.attach is None:
            # Interactive no more: it goes on as batch work in the default pool.
            out.append(Stop(job.id, JobState.PREEMPTING, f"interactive time limit {limit} "
                            "reached: requeued as batch work",
                            dict(interactive=0, pool=None, time_limit=None)))
        else:
            out.append(Stop(job.id, JobState.TIMEOUT, f"time limit {limit} reached"))
    return out
