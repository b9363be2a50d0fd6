"""The waiting jobs in scheduling order, kept sorted between passes when the caller can.

Scores are evaluated at `SchedulerInput.score_time`, the moment usage was last recalculated (as
Slurm recalculates priorities every PriorityCalcPeriod), so between two recalculations a job's
score does not change and the order only gains and loses jobs. A caller that keeps one
`PendingQueue` across passes (the daemon, the replay of `gq sim`) therefore pays for a sort once
per recalculation, and a pass that stops early reads only the head of the queue. A caller that
passes a plain list (the tests) gets the same order, sorted for that pass. A job added between
recalculations is scored by the first pass that reads the queue after it, with that pass's
input; one whose predicted run time changed is scored again once the caller says so (`rekey`).

The queue is kept as one sorted list per shape (what placement sees of a job), read merged: a
pass that knows a shape can no longer start anything (`ordered(dropped=...)`) reads none of its
jobs further down, so a long queue of jobs that wait for the same busy cards costs a pass no
more than a short one.

Within a tier the score decides, except for one job: the one that has waited longest (among
those that could run) comes first once it has waited longer than its own time limit. A score
that favours light users and short jobs must not let a stream of them overtake a job for ever,
and the first job of a tier is the first one backfill protects: no job waits much longer than
it asks to run before the queue makes room for it.

Jobs with dependencies are kept apart and sorted at each pass: their age counts from when their
dependencies ended, which can change between recalculations.

Interactive jobs (`--interactive`: short, with a time limit) form a lane of their own ahead of
every tier: they go ahead of batch work, and no reservation made for batch work delays them.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from gq.model import DepKind, Job
from gq.policy.accounts import share_factors
from gq.policy.fairshare import Score, age_factor, score, shortness, total

if TYPE_CHECKING:
    from gq.policy.types import SchedulerInput

Key = tuple  # (lane, -score, submitted_at, id): ascending is scheduling order

INTERACTIVE_LANE = -1  # ahead of the tiers' ranks (0 is high)


def shape(job: Job) -> tuple:
    """What a job asks for, as placement sees it: resources, pool and elastic range."""
    request = job.gpus, job.mem, job.cpus, job.ram, job.pool, job.gpus_max
    if job.pinned is not None:  # a thaw, on its own host of a cluster
        return (*request, job.avoid_gpus, job.pinned)
    return (*request, job.avoid_gpus) if job.avoid_gpus else request


def lane(job: Job) -> int:
    """Interactive jobs first, then the tiers, most urgent first."""
    return INTERACTIVE_LANE if job.interactive else job.priority.rank


def eligible_since(job: Job, inp: SchedulerInput) -> float:
    """When the job could first have run: its age does not grow while it waits on others."""
    if not job.deps:
        return job.submitted_at
    ends = [(o.started_at if kind == DepKind.AFTERSTART else o.ended_at)
            for kind, ids in job.deps.items() for i in ids if (o := inp.outcomes.get(i))]
    return max([job.submitted_at, *(t for t in ends if t is not None)])


class PendingQueue:
    """Pending and held jobs: add and remove as they come and go; `ordered` yields them in
    scheduling order. Also counts the shapes waiting, so that a pass can tell when nothing
    left could start."""

    def __init__(self, jobs: Iterable[Job] = ()):
        self.jobs: dict[int, Job] = {}
        self.shapes: dict[tuple, int] = {}
        # Per shape, the declared time limits waiting (sorted) and how many declare none.
        self._limits: dict[tuple, list[float]] = {}
        self._undeclared: dict[tuple, int] = {}
        # Jobs without dependencies, by key at _scored: a sorted list per shape.
        self._by_shape: dict[tuple, list[Key]] = {}
        self._keys: dict[int, Key] = {}
        self._unkeyed: set[int] = set()  # added or rekeyed since the last pass: keyed by the next
        self._with_deps: dict[int, Job] = {}
        self._by_age: dict[int, list[tuple[float, int]]] = {}  # lane -> (submitted, id)
        self._ranks: dict[int, int] = {}  # tier rank -> jobs waiting in it
        self.limited: dict[int, Job] = {}  # elements of arrays with a %N limit
        # Orders by a key fixed for each job while it waits (ordered_by): name -> (the key
        # function, the sorted (key, submitted_at, id), each job's entry).
        self._orders: dict[str, tuple[Callable[[Job], float], list, dict[int, tuple]]] = {}
        # What the keys were computed from: (score_time, fair-share settings, assumed limits),
        # and the usage (the caller replaces it when it recalculates, never edits it).
        self._scored: tuple | None = None
        self._usage: dict | None = None
        self._scores: dict[int, Score] = {}  # of jobs without dependencies, as they are read
        for job in jobs:
            self.add(job)

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs.values())

    def add(self, job: Job) -> None:
        self.jobs[job.id] = job
        s = shape(job)
        self.shapes[s] = self.shapes.get(s, 0) + 1
        if job.time_limit:
            insort(self._limits.setdefault(s, []), job.time_limit)
        else:
            self._undeclared[s] = self._undeclared.get(s, 0) + 1
        rank = job.priority.rank
        self._ranks[rank] = self._ranks.get(rank, 0) + 1
        for key, ordered, entries in self._orders.values():
            entry = entries[job.id] = (key(job), job.submitted_at, job.id)
            insort(ordered, entry)
        if job.array is not None and job.array.limit:
            self.limited[job.id] = job
        if job.deps:
            self._with_deps[job.id] = job
            return
        insort(self._by_age.setdefault(lane(job), []), (job.submitted_at, job.id))
        if self._scored is not None:
            self._unkeyed.add(job.id)

    def remove(self, job_id: int) -> Job:
        job = self.jobs.pop(job_id)
        s = shape(job)
        if self.shapes[s] == 1:
            del self.shapes[s]
        else:
            self.shapes[s] -= 1
        if job.time_limit:
            limits = self._limits[s]
            del limits[bisect_left(limits, job.time_limit)]
        else:
            self._undeclared[s] -= 1
        self._ranks[job.priority.rank] -= 1
        self.limited.pop(job_id, None)
        for _key, ordered, entries in self._orders.values():
            entry = entries.pop(job_id)
            del ordered[bisect_left(ordered, entry)]
        if self._with_deps.pop(job_id, None) is not None:
            return job
        by_age = self._by_age[lane(job)]
        del by_age[bisect_left(by_age, (job.submitted_at, job_id))]
        self._scores.pop(job_id, None)
        if job_id in self._unkeyed:
            self._unkeyed.discard(job_id)
        elif self._scored is not None:
            self._unsort(job_id, s)
        return job

    def rekey(self, job_id: int) -> None:
        """The job's predicted run time changed (SchedulerInput.predicted): score it again at
        the next pass. Usage, settings and time limits need no call: a change of those is seen
        by the queue itself, and re-sorts it whole."""
        job = self.jobs.get(job_id)
        if job is None or job.deps or self._scored is None or job_id in self._unkeyed:
            return
        self._unsort(job_id, shape(job))
        self._scores.pop(job_id, None)
        self._unkeyed.add(job_id)

    def _unsort(self, job_id: int, s: tuple) -> None:
        key = self._keys.pop(job_id)
        keys = self._by_shape[s]
        del keys[bisect_left(keys, key)]
        if not keys:
            del self._by_shape[s]

    def in_submit_order(self) -> Iterator[Job]:
        """Every job by (submit time, id), read lazily: what the baselines of gq/policy/
        baselines.py go by, without sorting the whole queue at each pass."""
        lanes = [iter(by_age) for by_age in self._by_age.values()]
        deps = sorted((j.submitted_at, j.id) for j in self._with_deps.values())
        for _at, job_id in heapq.merge(*lanes, deps):
            yield self.jobs[job_id]

    def ordered_by(self, name: str, key: Callable[[Job], float]) -> Iterator[Job]:
        """Every job by (key, submit time, id), smallest first, read lazily. `key` must not
        change while a job waits (a run time known or predicted at submission): the order is
        kept between passes, under `name`, and only gains and loses jobs."""
        if name not in self._orders:
            entries = {j.id: (key(j), j.submitted_at, j.id) for j in self.jobs.values()}
            self._orders[name] = (key, sorted(entries.values()), entries)
        for _k, _at, job_id in self._orders[name][1]:
            yield self.jobs[job_id]

    def tiers(self) -> set[int]:
        """The ranks of the tiers that have jobs waiting."""
        return {r for r, n in self._ranks.items() if n}

    def shortest_limit(self, request: tuple, inp: SchedulerInput) -> float:
        """The shortest run time planned (declared, predicted, or assumed for its tier) among
        the jobs of this shape: a bound below which no job of the shape is planned to run."""
        limits = self._limits.get(request)
        best = limits[0] if limits else math.inf
        if inp.predicted:
            best = min(best, self._shortest_predicted(request, inp))
        if self._undeclared.get(request):
            best = min(best, inp.default_limit, *inp.tier_limits.values())
        return best

    def _shortest_predicted(self, request: tuple, inp: SchedulerInput) -> float:
        """The shortest predicted run time among the jobs of this shape, once per pass (the
        predictions are the pass's: SchedulerInput.shape_bounds keeps it)."""
        memo = inp.shape_bounds
        found = memo.get(request)
        if found is None:
            predicted = inp.predicted
            found = min((predicted[k[-1]] for k in self._by_shape.get(request, ())
                         if k[-1] in predicted), default=math.inf)
            for job_id in self._unkeyed:  # not yet in _by_shape
                if job_id in predicted and shape(self.jobs[job_id]) == request:
                    found = min(found, predicted[job_id])
            for job in self._with_deps.values():
                if job.id in predicted and shape(job) == request:
                    found = min(found, predicted[job.id])
            memo[request] = found
        return found

    def ordered(self, inp: SchedulerInput, scores: dict[int, Score],
                could_run: Callable[[Job], bool], dropped: set[tuple] | None = None
                ) -> Iterator[Job]:
        """The jobs in scheduling order: lane first (interactive jobs, then each tier); within
        a lane, the job that has waited longest of those that `could_run` if it has waited
        longer than its time limit, then the others by score, highest first (fair share, age,
        length), then submit time. Fills `scores` as jobs are read. `dropped`: shapes the
        caller adds to while it reads; no job of those is yielded any more."""
        self._rescore_if_stale(inp)
        for job_id in self._unkeyed:
            job = self.jobs[job_id]
            key = self._keys[job_id] = self._key(job, inp)
            insort(self._by_shape.setdefault(shape(job), []), key)
        self._unkeyed.clear()
        runs = list(self._by_shape.items())
        if self._with_deps:  # sorted at each pass: their age depends on when deps ended
            extra: dict[tuple, list[Key]] = {}
            for job in self._with_deps.values():
                extra.setdefault(shape(job), []).append(self._key(job, inp))
            runs += [(s, sorted(keys)) for s, keys in extra.items()]
        tier, first = None, None
        for key in _merged(runs, dropped):
            if key[0] != tier:
                tier = key[0]
                first = self._overdue(tier, inp, could_run)
                if first is not None and not (dropped and shape(first) in dropped):
                    scores[first.id] = self._score(first, inp)
                    yield first
            job = self.jobs[key[-1]]
            if job is first:
                continue
            scores[job.id] = self._score(job, inp)
            yield job

    def _overdue(self, rank: int, inp: SchedulerInput,
                 could_run: Callable[[Job], bool]) -> Job | None:
        """The lane's job that became eligible first, among those that could run, if it has
        waited longer than its time limit."""
        best = None
        for _at, job_id in self._by_age.get(rank, ()):
            if could_run(job := self.jobs[job_id]):
                best = (job.submitted_at, job.id, job)
                break
        for job in self._with_deps.values():
            if lane(job) == rank and could_run(job):
                cand = (eligible_since(job, inp), job.id, job)
                if best is None or cand[:2] < best[:2]:
                    best = cand
        if best is None or inp.now - best[0] <= inp.limit_of(best[2]):
            return None
        return best[2]

    # ---- scores -------------------------------------------------------------------------

    def _rescore_if_stale(self, inp: SchedulerInput) -> None:
        stamp = (inp.scored_at, inp.fairshare, inp.default_limit,
                 tuple(sorted(inp.tier_limits.items())), inp.accounts)
        if stamp == self._scored and inp.usage is self._usage:
            return
        self._factors = share_factors(inp.usage, inp.accounts)
        self._scores = {}
        self._keys = {}
        by_shape: dict[tuple, list[Key]] = {}
        for job in self.jobs.values():
            if not job.deps:
                key = self._keys[job.id] = self._key(job, inp)
                by_shape.setdefault(shape(job), []).append(key)
        for keys in by_shape.values():
            keys.sort()
        self._by_shape, self._unkeyed = by_shape, set()
        self._scored, self._usage = stamp, inp.usage

    def _score(self, job: Job, inp: SchedulerInput) -> Score:
        known = self._scores.get(job.id)
        if known is not None:
            return known
        s = score(job, eligible_since(job, inp), inp.limit_of(job), self._factors.of(job.user),
                  inp.usage, inp.scored_at, inp.fairshare)
        if not job.deps:  # fixed until the next recalculation
            self._scores[job.id] = s
        return s

    def _key(self, job: Job, inp: SchedulerInput) -> Key:
        """What `_score` computes, without building a Score: this runs for every job waiting
        at every recalculation."""
        cfg = inp.fairshare
        t = total(self._factors.of(job.user),
                  age_factor(eligible_since(job, inp), inp.scored_at, cfg),
                  shortness(inp.limit_of(job), cfg), cfg)
        return lane(job), -t, job.submitted_at, job.id


class Dropped(set):
    """The shapes a pass reads no further jobs of (`ordered`); `revive` has it read a shape's
    jobs again, from where it stopped (a start may let a shape that waited start after all)."""

    def __init__(self) -> None:
        super().__init__()
        self.revived: list[tuple] = []

    def revive(self, shapes) -> None:
        shapes = [s for s in shapes if s in self]
        self.difference_update(shapes)
        self.revived.extend(shapes)


def _merged(runs: list[tuple[tuple, list[Key]]], dropped: set[tuple] | None) -> Iterator[Key]:
    """The keys of sorted runs (shape, keys) in one ascending order, leaving a run aside once
    its shape is in `dropped` (checked as each key comes up), and taking it up again where it
    was if the shape is revived (`Dropped.revive`)."""
    if len(runs) == 1 and not dropped:  # the common case of one shape: no heap
        s, keys = runs[0]
        for key in keys:
            if dropped and s in dropped:
                return  # nothing else is read, so nothing can revive it
            yield key
        return
    heap = [(keys[0], i, 0) for i, (_s, keys) in enumerate(runs) if keys]
    heapq.heapify(heap)
    aside: dict[tuple, list] = {}
    revived = getattr(dropped, "revived", None)
    last = None
    while True:
        if revived:
            for s in revived:
                for _key, i, at in aside.pop(s, ()):
                    # Its keys passed over while it was dropped stay unread: the pass has
                    # gone beyond them.
                    keys = runs[i][1]
                    at = at if last is None else bisect_right(keys, last, at)
                    if at < len(keys):
                        heapq.heappush(heap, (keys[at], i, at))
            revived.clear()
        if not heap:
            return
        key, i, at = heap[0]
        s, keys = runs[i]
        if dropped and s in dropped:
            aside.setdefault(s, []).append(heapq.heappop(heap))
            continue
        if at + 1 < len(keys):
            heapq.heapreplace(heap, (keys[at + 1], i, at + 1))
        else:
            heapq.heappop(heap)
        last = key
        yield key
