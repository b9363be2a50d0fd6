"""What one submit may cost: how many jobs it queues, how many bytes it stores, and how many
jobs its user may have waiting ([daemon] max_submit_jobs, max_submit_bytes,
max_waiting_per_user). Checked before anything is written; a refusal says which limit and what
to do, and nothing is queued."""

from __future__ import annotations

import json

from gq.config import AccessConfig
from gq.model import Job
from gq.protocol import BadInput, GqError
from gq.units import format_size

ROW_BYTES = 400  # a job's row and its first event, less its command and environment


def stored_bytes(job: Job, elements: list | None) -> int:
    """About what the submit adds to the database. An array stores its environment, and a
    command its elements share, once (Store.insert_array)."""
    shared = (len(json.dumps(job.env)) + len(json.dumps(job.command)) + len(job.cwd)
              + len(job.notify.command or "" if job.notify else ""))
    if not elements:
        return shared + ROW_BYTES
    own = sum(ROW_BYTES + len(json.dumps(e.params))
              + (len(json.dumps(e.command)) if e.command != job.command else 0)
              for e in elements)
    return shared + own


def check_submit(access: AccessConfig, job: Job, elements: list | None,
                 waiting: int) -> None:
    """Refuse a submit beyond the limits; `waiting`: the caller's pending and held jobs."""
    count = len(elements) if elements else 1
    if count > access.max_submit_jobs:
        raise BadInput(f"{count} jobs in one submit: this host takes at most "
                       f"{access.max_submit_jobs} ([daemon] max_submit_jobs); submit the "
                       "array in parts, e.g. --array 0-"
                       f"{access.max_submit_jobs - 1} and --array {access.max_submit_jobs}-...")
    size = stored_bytes(job, elements)
    if size > access.max_submit_bytes:
        raise BadInput(f"this submit would store {format_size(size)}: at most "
                       f"{format_size(access.max_submit_bytes)} in one submit ([daemon] "
                       "max_submit_bytes); pass less environment (--env, or a smaller shell "
                       "environment) or fewer jobs at once")
    if waiting + count > access.max_waiting_per_user:
        raise GqError(f"{job.user} has {waiting} jobs waiting; {count} more would pass the "
                      f"{access.max_waiting_per_user} one user may have waiting ([daemon] "
                      "max_waiting_per_user): submit them once some have started, or cancel "
                      "some (gq cancel)")
