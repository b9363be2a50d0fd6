"""The jobs the store keeps in memory: those waiting (pending, held) and those whose run may
still hold resources. One copy of each (a job requeued while its last run still stops is both
waiting and holding: the same Job in both views), so that what any reader sees of a job is what
its row says; and the sorted indexes that let a listing read a page without sorting, or even
looking at, the rest of the queue.

`gq ls` prints one line per job, but one line per array: its elements' states counted here as
they change (`lines`, `array_states`). Each index is kept per user too: one user's listing costs
the same whoever else has 100,000 jobs waiting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from sortedcontainers import SortedList

from gq.model import ACTIVE_STATES, WAITING_STATES, Job, JobState

ANYONE = None  # the key of the indexes over every user's jobs
# The containers a job in memory holds that are most often empty: one empty list or dict
# for all of them instead of one each (a few hundred bytes a waiting job; issue #38). The
# jobs in memory are not to be mutated, these least of all: a change replaces the field.
_EMPTY_LISTS = ("command", "gpu_ids", "failure_evidence", "frozen_cards")
_EMPTY_DICTS = ("deps", "env")
_EMPTY_LIST: list = []
_EMPTY_DICT: dict = {}


class Resident:
    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}  # the one copy of each job in memory
        self.waiting: dict[int, None] = {}  # ids of the pending and held ones, in arrival order
        self.holding: dict[int, None] = {}  # ids of those whose run may hold resources
        self.waiting_of: Counter[int] = Counter()  # uid -> waiting jobs
        # Listed jobs (active, not moved to a peer), by id; and the listing's lines: a job
        # that is no array element, or an array (by its id) with a listed element.
        self._listed: dict[str | None, SortedList] = {}
        self._lines: dict[str | None, SortedList] = {}
        self.array_states: dict[int, Counter[str]] = {}  # array id -> its listed elements' states
        # What reads cost (tests): ids handed out by listed() and lines(), and the jobs and rows
        # the store's reads hand out (queue(), holding_jobs(), jobs(), listing()...).
        self.read = 0
        # For the metrics (gq/daemon/metrics.py), kept as jobs come and go, so that reading
        # them costs nothing that grows with the queue: jobs by (state, tier), and the pending
        # ones of each tier by (submitted_at, id), the oldest first.
        self.by_state: Counter[tuple[str, str]] = Counter()
        self.pending_by_tier: dict[str, SortedList] = {}

    def __contains__(self, job_id: int) -> bool:
        return job_id in self.jobs

    def get(self, job_id: int) -> Job | None:
        return self.jobs.get(job_id)

    def put(self, job: Job, holding: bool) -> None:
        """The job as it is now (replacing any earlier copy); held only while it waits or may
        hold resources."""
        self.drop(job.id)
        waiting = job.state in WAITING_STATES
        if not (waiting or holding):
            return
        for name in _EMPTY_LISTS:
            if not getattr(job, name):
                setattr(job, name, _EMPTY_LIST)
        for name in _EMPTY_DICTS:
            if not getattr(job, name):
                setattr(job, name, _EMPTY_DICT)
        self.jobs[job.id] = job
        self._count(job, add=True)
        if waiting:
            self.waiting[job.id] = None
            self.waiting_of[job.uid] += 1
        if holding:
            self.holding[job.id] = None
        if _listed(job):
            self._index(job, add=True)

    def drop(self, job_id: int) -> Job | None:
        job = self.jobs.pop(job_id, None)
        if job is None:
            return None
        if self.waiting.pop(job_id, 0) is None:
            self.waiting_of[job.uid] -= 1
            if not self.waiting_of[job.uid]:
                del self.waiting_of[job.uid]
        self.holding.pop(job_id, None)
        self._count(job, add=False)
        if _listed(job):
            self._index(job, add=False)
        return job

    def _count(self, job: Job, add: bool) -> None:
        key = (str(job.state), str(job.priority))
        self.by_state[key] += 1 if add else -1
        if not self.by_state[key]:
            del self.by_state[key]
        if job.state == JobState.PENDING:
            tier = self.pending_by_tier.setdefault(key[1], SortedList())
            if add:
                tier.add((job.submitted_at, job.id))
            else:
                tier.discard((job.submitted_at, job.id))

    def oldest_pending(self) -> dict[str, float]:
        """The submit time of each tier's oldest pending job (tiers with none left out)."""
        return {tier: jobs[0][0] for tier, jobs in self.pending_by_tier.items() if jobs}

    def _index(self, job: Job, add: bool) -> None:
        line = job.id if job.array is None else job.array.id
        counts = None
        if job.array is not None:  # (setdefault would build a Counter each time: 30 us)
            counts = self.array_states.get(line)
            if counts is None:
                counts = self.array_states[line] = Counter()
        # A line comes with an array's first listed element and goes with its last.
        first_or_last = counts is None or (not counts if add else (
            len(counts) == 1 and 1 in counts.values()))
        for who in (ANYONE, job.user):
            listed = self._listed.get(who)
            if listed is None:
                listed = self._listed[who] = SortedList()
                self._lines[who] = SortedList()
            lines = self._lines[who]
            if add:
                listed.add(job.id)
                if first_or_last:
                    lines.add(line)
                continue
            listed.remove(job.id)
            if first_or_last:
                lines.remove(line)
            if not listed:
                del self._listed[who], self._lines[who]
        if counts is not None:
            state = str(job.state)
            counts[state] += 1 if add else -1
            if not counts[state]:
                del counts[state]
            if not counts:
                del self.array_states[line]

    def listed(self, user: str | None = ANYONE, after: int | None = None) -> Iterator[int]:
        """The ids of the listed jobs (active, not moved to a peer), of `user` or anyone's,
        from the one after `after`, in order: read lazily, a page costs the page."""
        return self._counted(_from(self._listed.get(user), after))

    def listed_between(self, user: str | None, first: int, last: int) -> Iterator[int]:
        """The ids of the listed jobs from `first` to `last` (an array's elements), lazily."""
        ids = self._listed.get(user)
        return self._counted(ids.irange(first, last) if ids else iter(()))

    def lines(self, user: str | None = ANYONE, after: int | None = None) -> Iterator[int]:
        """The listing's lines from the one after `after`: ids of listed jobs that are no
        array element, and of arrays with a listed element."""
        return self._counted(_from(self._lines.get(user), after))

    def listing_lines(self, user: str | None = ANYONE) -> SortedList:
        """The sorted ids of the listing's lines (see lines()), to read ranges of: not to
        be changed."""
        return self._lines.get(user) or SortedList()

    def _counted(self, ids: Iterator[int]) -> Iterator[int]:
        for job_id in ids:
            self.read += 1
            yield job_id

    def listed_count(self, user: str | None = ANYONE) -> int:
        return len(self._listed.get(user, ()))

    def nth_listed(self, user: str | None, n: int) -> int | None:
        """The id of the n-th listed job (of `user`, or anyone's), by id; None when there
        are no more than n."""
        listed = self._listed.get(user, ())
        return listed[n - 1] if len(listed) > n else None


def _listed(job: Job) -> bool:
    """Active, or stopping (its run not gone: listed as active ones are), and not moved."""
    return (job.state in ACTIVE_STATES or job.is_stopping) and job.moved_to is None


def _from(ids: SortedList | None, after: int | None) -> Iterator[int]:
    if not ids:
        return iter(())
    return ids.irange(minimum=after, inclusive=(False, False)) if after is not None \
        else iter(ids)
