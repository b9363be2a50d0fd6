"""The waiting jobs in scheduling order, kept sorted between passes when the caller can.

Scores are evaluated at `SchedulerInput.score_time`, the moment usage was last recalculated (as
Slurm recalculates priorities every PriorityCalcPeriod), so between two recalculations a job's
score does not change and the order only gains and loses jobs. A caller that keeps one
`PendingQueue` across passes (the replay of `gq sim`) therefore pays for a sort once per
recalculation, and a pass that stops early reads only the head of the queue. A caller that
passes a plain list (the daemon, the tests) gets the same order, sorted for that pass.

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
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from gq.model import Job
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
    ends = [inp.outcomes[i].ended_at for ids in job.deps.values() for i in ids
            if i in inp.outcomes and inp.outcomes[i].ended_at is not None]
    return max([job.submitted_at, *ends])


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
        self._sorted: list[Key] = []  # jobs without dependencies, by key at _scored
        self._keys: dict[int, Key] = {}
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
            key = self._keys[job.id] = self._key(job, self._inp)
            insort(self._sorted, key)

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
        if self._scored is not None:
            key = self._keys.pop(job_id)
            del self._sorted[bisect_left(self._sorted, key)]
        return job

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
        """The shortest time limit (declared, or assumed for its tier) among the jobs of this
        shape: a bound below which no job of the shape asks to run."""
        limits = self._limits.get(request)
        best = limits[0] if limits else math.inf
        if self._undeclared.get(request):
            best = min(best, inp.default_limit, *inp.tier_limits.values(),
                       inp.shortest_predicted)
        return best

    def ordered(self, inp: SchedulerInput, scores: dict[int, Score],
                could_run: Callable[[Job], bool]) -> Iterator[Job]:
        """The jobs in scheduling order: lane first (interactive jobs, then each tier); within
        a lane, the job that has waited longest of those that `could_run` if it has waited
        longer than its time limit, then the others by score, highest first (fair share, age,
        length), then submit time. Fills `scores` as jobs are read."""
        self._rescore_if_stale(inp)
        deps = sorted(self._key(j, inp) for j in self._with_deps.values())
        keys = heapq.merge(self._sorted, deps) if deps else self._sorted
        tier, first = None, None
        for key in keys:
            if key[0] != tier:
                tier = key[0]
                first = self._overdue(tier, inp, could_run)
                if first is not None:
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
        self._inp = inp
        self._scores: dict[int, Score] = {}  # of jobs without dependencies, as they are read
        self._keys = {j.id: self._key(j, inp) for j in self.jobs.values() if not j.deps}
        self._sorted = sorted(self._keys.values())
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
