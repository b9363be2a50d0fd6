"""The default `gq ls` by lines (`list` with `lines: true`): one row a job, but one an array
or sweep, and of the caller's recently ended jobs the last few and a count of the others; and
`--array ID`, one array's elements. What a page costs is bounded by the page (issue #38).

An array's line is its first listed element's row, with (in `lines`) its listed elements
counted by state, counted in memory as they change (gq/store/resident.py), the cards of its
first running elements and the reasons of its first waiting ones (at most SAMPLE elements
read); how its other elements ended comes in `arrays`, as for any page.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any

from gq.daemon.context import Context
from gq.model import JobState

SAMPLE = 50  # elements of an array read for its line's cards and reasons
RECENT = 10  # recently ended jobs listed; the others are counted
COUNTED = 1000  # recently ended jobs counted at most (beyond: "1,000+")
_RUNNING = frozenset({JobState.RUNNING, JobState.PREEMPTING, JobState.FROZEN})
_WAITING = frozenset({JobState.PENDING, JobState.HELD})


def lines_page(daemon: Context, user: str | None, columns: list[str], after: int | None,
               page: int, job_field) -> tuple[list[list], bool, dict[str, dict], set[int]]:
    """Up to `page` lines from the one after `after`: their rows, whether more follow, each
    array line's counts, cards and reasons, and the arrays some of whose elements are not
    listed (ended, or another user's): only theirs are worth an outcomes query, which reads
    every element of an array."""
    resident = daemon.store.resident
    ids = list(islice(resident.lines(user, after), page + 1))
    more, ids = len(ids) > page, ids[:page]
    rows, lines, partial = [], {}, set()
    for line in ids:
        states = resident.array_states.get(line)
        if states is None:
            job = resident.jobs[line]
        else:
            size = daemon.store.light_jobs([line])[line].array.size  # its first element's
            elements = _first_listed(daemon, user, line, SAMPLE, size)
            if sum(states.values()) < size:
                partial.add(line)
            job = elements[0]
            lines[str(line)] = {
                "states": dict(states), "span": _span(daemon, line, size),
                "gpus": sorted({i for e in elements if e.state in _RUNNING for i in e.gpu_ids}),
                "reasons": sorted({e.reason for e in elements
                                   if e.state in _WAITING and e.reason})}
        rows.append([job_field(job, c) for c in columns])
    return rows, more, lines, partial


def _span(daemon: Context, array_id: int, size: int) -> list:
    """[first index, last index, whether every index between is an element]: of its first and
    last elements (its ids are consecutive), two jobs read at most."""
    ends = daemon.store.light_jobs([array_id, array_id + size - 1])
    first, last = (ends[i].array.index if i in ends else None
                   for i in (array_id, array_id + size - 1))
    return [first, last, first is not None and last is not None and last - first + 1 == size]


def _first_listed(daemon: Context, user: str | None, array_id: int, n: int, size: int) -> list:
    """The first `n` listed elements of the array (its elements' ids follow its id)."""
    resident = daemon.store.resident
    last = array_id + size - 1
    return [resident.jobs[i] for i in islice(resident.listed_between(user, array_id, last), n)]


def recent_summary(daemon: Context, user: str, since: float, columns: list[str]
                   ) -> tuple[list[list], dict[str, Any]]:
    """The user's last RECENT jobs to have ended since `since` (rows of the columns, by id),
    and how many others did, by state (at most COUNTED counted: `counted_all` says whether
    that is all of them)."""
    store = daemon.store
    rows = store.recently_ended(columns, user, since, RECENT)
    if "gpu_ids" in columns:
        at = columns.index("gpu_ids")
        rows = [[*r[:at], json.loads(r[at]), *r[at + 1:]] for r in rows]
    rows = sorted((list(r) for r in rows), key=lambda r: r[0])
    others, counted_all = store.ended_since_by_state(user, since, skip=RECENT, limit=COUNTED)
    return rows, {"by_state": others, "counted_all": counted_all, "since": int(since)}


def array_ids(daemon: Context, array_id: int) -> tuple[int, int] | None:
    """The first and last ids of the array with this id (its elements' ids are consecutive);
    None when it is no array."""
    job = daemon.store.light_jobs([array_id]).get(array_id)
    if job is None or job.array is None or job.array.id != array_id:
        return None
    return array_id, array_id + job.array.size - 1

