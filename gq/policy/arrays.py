"""The throttle of arrays (`--array 0-15%4`): how many elements of an array may run at once."""

from __future__ import annotations

from collections import Counter

from gq.model import Job, JobState, Reason


def hold_back_throttled(pending: list[Job], holding: list[Job]) -> tuple[list[Job], dict[int, str]]:
    """Split the queue into what a pass may consider and the elements held back by their
    array's limit, with their reason.

    Of each throttled array, the pending elements with the lowest indices go into the pass,
    as many as the limit leaves room for beside the elements holding resources (running, or
    stopping and not gone yet). The pass starts at most those, so the limit holds however
    many cards are free.
    """
    held_back = throttled(pending, holding)
    if not held_back:
        return pending, {}
    return [j for j in pending if j.id not in held_back], held_back


def throttled(waiting, holding: list[Job]) -> dict[int, str]:
    """The elements of `waiting` (any iterable of jobs: the limited ones suffice) held back by
    their array's limit, with their reason (see hold_back_throttled)."""
    limited = [j for j in waiting
               if j.array is not None and j.array.limit and j.state == JobState.PENDING]
    if not limited:
        return {}
    used = Counter(j.array.id for j in holding if j.array is not None and j.array.limit)
    held_back: dict[int, str] = {}
    for job in sorted(limited, key=lambda j: (j.array.id, j.array.index)):
        if used[job.array.id] < job.array.limit:
            used[job.array.id] += 1
        else:
            held_back[job.id] = Reason.ARRAY_LIMIT
    return held_back
