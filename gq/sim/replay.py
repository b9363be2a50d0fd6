"""Replay a job trace on a simulated cluster with a virtual clock, through the real policy.

The replay is a discrete-event simulation. Its events are arrivals (a trace job is submitted)
and completions (a job that started at s ends at s + its run time). At each distinct event
time it applies every event of that time, then runs one scheduling pass (the same function
the daemon runs, or a baseline of gq.policy.baselines) and starts what the plan says.

A pass is skipped when it could not start anything, which is exact, not an approximation:
a pass only ever takes resources away as it starts jobs, so a job it starts fits the free
resources the pass began with. If no pending job fits any host's free resources as they
are (checked with the policy's own Capacity.fit, once per distinct request shape, and again
only after a start or a completion changes what is free), no plan can start one.

How trace jobs become gq jobs (docs/sim.md says why):
- whole cards unless the trace gives memory: an Alibaba share of a card becomes
  `gpu_fraction x` the memory of the smallest card in the cluster; gq's format gives bytes;
- cores capped at a host's cores (a trace from bigger machines still replays);
- time limit: the trace's when it has one, else `duration x time_factor` (at least a minute);
  `time_factor=0` declares none, and the policy assumes its `default_limit`;
- a job runs for its trace duration, or until its time limit if that comes first;
- jobs that fit no empty host (more GPUs than a host has, say) are dropped and counted.

Fair share charges a job's cards from its start, like the daemon, with usage recalculated
every `usage_refresh` simulated seconds, on a fixed grid (Slurm recalculates priorities
periodically too: PriorityCalcPeriod, 5 minutes by default).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Callable

from gq.model import Job, JobState, Tier
from gq.policy import (
    FairShareConfig,
    Host,
    Limits,
    PendingQueue,
    Plan,
    RunInterval,
    SchedulerInput,
    decayed_usage,
    schedule,
)
from gq.policy.baselines import fifo, greedy
from gq.policy.placement import Capacity
from gq.policy.quotas import UserLimits
from gq.sim.traces import TraceJob

def _gq(inp: SchedulerInput) -> Plan:
    """The daemon's policy, reading the queue only as far as a start is still possible (a
    replay needs the starts, not every waiting job's reason)."""
    return schedule(inp, explain=False)


POLICIES: dict[str, Callable[[SchedulerInput], Plan]] = {
    "gq": _gq, "fifo": fifo, "greedy": greedy,
}
USAGE_REFRESH = 300.0  # simulated seconds between fair-share recalculations
MIN_TIME_LIMIT = 60.0  # a declared limit is at least a minute, as Slurm's --time granularity
# Traces carry no lab configuration, so no per-user limits: the default high_share
# (20% of the cards per user) would hold back half of each trace, whose tiers are a mapping
# of service classes, not a lab's urgent work (docs/traces.md).
REPLAY_LIMITS = Limits(default=UserLimits(high_share=1.0))


@dataclass(frozen=True)
class JobResult:
    """One replayed job: when it was submitted, started and ended (simulated seconds)."""

    job_id: str
    user: str
    tier: Tier
    gpus: int
    weight: float  # cards it held: gpus for whole cards, the share of each card for slices
    submit: float
    start: float
    end: float
    host: str
    timed_out: bool = False

    @property
    def wait(self) -> float:
        return self.start - self.submit

    @property
    def jct(self) -> float:
        return self.end - self.submit


@dataclass
class ReplayResult:
    policy: str
    hosts: tuple[Host, ...]
    jobs: list[JobResult]
    dropped: dict[str, int] = field(default_factory=dict)  # why -> how many
    unfinished: int = 0  # jobs still waiting when no event was left (a policy that deadlocks)
    passes: int = 0  # scheduling passes run
    skipped_passes: int = 0  # event times at which no pending job fitted anywhere
    wall_seconds: float = 0.0  # time the replay took


class ReplayTimeout(RuntimeError):
    """The replay ran past its wall-time budget; says how far it got."""


def replay(
    trace_jobs: list[TraceJob] | tuple[TraceJob, ...],
    hosts: tuple[Host, ...],
    policy: str = "gq",
    time_factor: float = 2.0,
    *,
    default_limit: float = 86400.0,
    max_reservations: int = 8,
    fairshare: FairShareConfig = FairShareConfig(),
    limits: Limits = REPLAY_LIMITS,
    usage_refresh: float = USAGE_REFRESH,
    max_wall_s: float | None = None,
    skip_idle_passes: bool = True,
) -> ReplayResult:
    """Replay the trace (sorted by submit time, as read_trace gives it) on `hosts`.
    `skip_idle_passes=False` runs a pass at every event time (tests check that skipping
    changes nothing)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}: expected {', '.join(POLICIES)}")
    if not math.isfinite(time_factor) or time_factor < 0:
        raise ValueError(f"time factor {time_factor}: expected 0 or more")
    if not hosts:
        raise ValueError("a cluster needs at least one host")
    if len({h.name for h in hosts}) != len(hosts):
        raise ValueError("the hosts of a cluster need distinct names (running jobs name theirs)")
    sim = _Replay(hosts, policy, default_limit, max_reservations, fairshare, limits,
                  usage_refresh, max_wall_s, skip_idle_passes)
    jobs = sim.admit(trace_jobs, time_factor)
    return sim.run(jobs)


class _Replay:
    def __init__(self, hosts, policy, default_limit, max_reservations, fairshare, limits,
                 usage_refresh, max_wall_s, skip_idle_passes):
        self.hosts = tuple(hosts)
        self.policy_name = policy
        self.policy = POLICIES[policy]
        self.default_limit = default_limit
        self.max_reservations = max_reservations
        self.fairshare = fairshare
        self.limits = limits
        self.usage_refresh = usage_refresh
        self.max_wall_s = max_wall_s
        self.skip_idle_passes = skip_idle_passes
        self.capacity = {h.name: Capacity(h, []) for h in self.hosts}
        self.card_memory = {h.name: {c.index: c.memory_total for c in h.cards} for h in hosts}
        self.result = ReplayResult(policy, self.hosts, [])
        self.trace_ids: dict[int, TraceJob] = {}
        self.run_time: dict[int, float] = {}
        self.pending = PendingQueue()  # kept sorted between fair-share recalculations
        self.running: dict[int, Job] = {}
        self.completions: list[tuple[float, int]] = []
        # Pending requests by shape, and whether each fits somewhere now (see the docstring).
        self.shapes: dict[tuple, list] = {}  # shape -> [pending jobs of it, a job of it]
        self.fits: dict[tuple, bool] = {}
        # Fair share: usage of ended runs folded into one number per user at `folded_at`.
        self.folded: dict[str, float] = {}
        self.folded_at = 0.0
        self.ended: list[RunInterval] = []  # ended since the last fold
        self.usage: dict[str, float] = {}
        self.usage_at: float | None = None

    # ---- trace jobs into gq jobs ----------------------------------------------------------

    def admit(self, trace_jobs, time_factor: float) -> list[Job]:
        smallest_card = min(c.memory_total for h in self.hosts for c in h.cards) \
            if any(h.cards for h in self.hosts) else 0
        most_cpus = max(h.cpus for h in self.hosts)
        empty = [Capacity(h, []) for h in self.hosts]
        jobs = []
        for n, tj in enumerate(trace_jobs, start=1):
            job = to_job(tj, n, time_factor, smallest_card, most_cpus)
            fits = [cap.fit(job) for cap in empty]
            if all(cards is None for cards, _ in fits):
                why = f"fit no empty host: {fits[0][1]}"
                self.result.dropped[why] = self.result.dropped.get(why, 0) + 1
                continue
            limit = job.time_limit
            self.run_time[job.id] = tj.duration if limit is None else min(tj.duration, limit)
            self.trace_ids[job.id] = tj
            jobs.append(job)
        return jobs

    # ---- the event loop -------------------------------------------------------------------

    def run(self, jobs: list[Job]) -> ReplayResult:
        began = time.perf_counter()
        arrivals = sorted(jobs, key=lambda j: (j.submitted_at, j.id))
        i, n = 0, len(arrivals)
        while i < n or self.completions:
            t = min(arrivals[i].submitted_at if i < n else math.inf,
                    self.completions[0][0] if self.completions else math.inf)
            while self.completions and self.completions[0][0] <= t:
                self.complete(heapq.heappop(self.completions)[1], t)
            while i < n and arrivals[i].submitted_at <= t:
                self.arrive(arrivals[i])
                i += 1
            if not self.pending or (self.skip_idle_passes and not self.could_start()):
                self.result.skipped_passes += 1
                continue
            self.run_pass(t)
            if self.max_wall_s is not None and time.perf_counter() - began > self.max_wall_s:
                raise ReplayTimeout(
                    f"{self.policy_name}: over {self.max_wall_s:.0f}s of wall time at simulated "
                    f"second {t:.0f}: {len(self.result.jobs)} of {n} jobs done, "
                    f"{len(self.pending)} waiting, {self.result.passes} passes")
        self.result.unfinished = len(self.pending)
        self.result.wall_seconds = time.perf_counter() - began
        return self.result

    def arrive(self, job: Job) -> None:
        self.pending.add(job)
        entry = self.shapes.get(shape := _shape(job))
        if entry is None:
            self.shapes[shape] = [1, job]
        else:
            entry[0] += 1

    def complete(self, job_id: int, now: float) -> None:
        job = self.running.pop(job_id)
        self.capacity[job.host].release(job, job.gpu_ids)
        self.fits.clear()
        weight = self.weight(job)
        if weight > 0:
            self.ended.append(RunInterval(job.user, weight, job.started_at, now))
        tj = self.trace_ids[job_id]
        self.result.jobs.append(JobResult(
            tj.job_id, job.user, job.priority, job.gpus, weight, job.submitted_at,
            job.started_at, now, job.host, timed_out=self.run_time[job_id] < tj.duration))

    def could_start(self) -> bool:
        """Whether some pending job fits the free resources of some host now."""
        for shape, (_count, example) in self.shapes.items():
            fits = self.fits.get(shape)
            if fits is None:
                fits = self.fits[shape] = any(
                    cap.fit(example)[0] is not None for cap in self.capacity.values())
            if fits:
                return True
        return False

    def run_pass(self, now: float) -> None:
        self.result.passes += 1
        usage = self.usage_now(now)
        plan = self.policy(SchedulerInput(
            self.hosts, self.pending, list(self.running.values()), now=now,
            default_limit=self.default_limit, max_reservations=self.max_reservations,
            usage=usage, fairshare=self.fairshare, limits=self.limits, score_time=self.usage_at,
        ))
        for start in plan.starts:
            self.start(start.job_id, start.host, start.gpu_ids, now)

    def start(self, job_id: int, host: str, gpu_ids: tuple[int, ...], now: float) -> None:
        job = self.pending.remove(job_id)
        entry = self.shapes[shape := _shape(job)]
        entry[0] -= 1
        if entry[0] == 0:
            del self.shapes[shape]
            self.fits.pop(shape, None)
        capacity = self.capacity[host]
        _check_fits(job, host, gpu_ids, capacity, self.policy_name)
        capacity.take(job, gpu_ids)
        self.fits.clear()
        job.state, job.started_at = JobState.RUNNING, now
        job.host, job.gpu_ids = host, list(gpu_ids)
        self.running[job_id] = job
        heapq.heappush(self.completions, (now + self.run_time[job_id], job_id))

    # ---- fair share -----------------------------------------------------------------------

    def weight(self, job: Job) -> float:
        """Cards held, as the daemon charges them: slices count as their share of the card."""
        if job.mem is None:
            return float(len(job.gpu_ids))
        memory = self.card_memory[job.host]
        return sum(min(1.0, job.mem / memory[i]) for i in job.gpu_ids)

    def usage_now(self, now: float) -> dict[str, float]:
        """Usage as of the last multiple of `usage_refresh` (a fixed grid of recalculations,
        as Slurm's PriorityCalcPeriod): a pass sees the same figures whichever passes ran
        before it, which keeps skipping idle passes exact."""
        at = math.floor(now / self.usage_refresh) * self.usage_refresh \
            if self.usage_refresh > 0 else now
        if at == self.usage_at:
            return self.usage
        # Runs that ended by then only decay from there on: fold them into one figure per
        # user, which equals decayed_usage over all of them (the decay is a common factor).
        half_life = self.fairshare.half_life
        decay = 2.0 ** (-(at - self.folded_at) / half_life)
        folded = {u: v * decay for u, v in self.folded.items()}
        done = [iv for iv in self.ended if iv.end <= at]
        for user, value in decayed_usage(done, at, half_life).items():
            folded[user] = folded.get(user, 0.0) + value
        self.folded, self.folded_at = folded, at
        self.ended = [iv for iv in self.ended if iv.end > at]
        # Runs going on at `at`: the running jobs, and those that ended since (decayed_usage
        # counts each up to `at`; one that started after it counts nothing yet).
        going = self.ended + [RunInterval(j.user, w, j.started_at, None)
                              for j in self.running.values() if (w := self.weight(j)) > 0]
        usage = dict(folded)
        for user, value in decayed_usage(going, at, half_life).items():
            usage[user] = usage.get(user, 0.0) + value
        self.usage, self.usage_at = usage, at
        return usage


def to_job(tj: TraceJob, job_id: int, time_factor: float, smallest_card: int,
           max_cpus: int) -> Job:
    """A trace job as gq would have queued it (see the module docstring for the mapping)."""
    mem = tj.mem
    if tj.gpu_fraction is not None and tj.gpus > 0:
        mem = max(1, round(tj.gpu_fraction * smallest_card))
    if tj.time_limit is not None:
        limit = tj.time_limit
    elif time_factor > 0:
        limit = max(tj.duration * time_factor, MIN_TIME_LIMIT)
    else:
        limit = None
    return Job(id=job_id, user=tj.user, command=[], cwd="", name=tj.name or tj.job_id,
               priority=tj.tier, gpus=tj.gpus, mem=mem, cpus=min(tj.cpus, max_cpus), ram=tj.ram,
               time_limit=limit, submitted_at=tj.submit_time)


def _shape(job: Job) -> tuple:
    return (job.gpus, job.mem, job.cpus, job.ram)


def _check_fits(job: Job, host: str, gpu_ids, capacity: Capacity, policy: str) -> None:
    """A plan that over-commits a card or a host is a policy bug: stop the replay loudly."""
    problem = None
    if len(gpu_ids) != job.gpus or len(set(gpu_ids)) != job.gpus:
        problem = f"got cards {list(gpu_ids)} for {job.gpus} GPU(s)"
    elif job.cpus > capacity.cpus_free:
        problem = f"needs {job.cpus} cores, {capacity.cpus_free} free"
    elif capacity.ram_free is not None and (job.ram or 0) > capacity.ram_free:
        problem = "needs more host memory than is free"
    for i in gpu_ids:
        card = capacity.cards.get(i)
        if problem or card is None:
            problem = problem or f"card {i} does not exist"
            break
        if job.mem is None and (card.jobs or card.external):
            problem = f"takes card {i} whole, which is in use"
        elif job.mem is not None and job.mem > card.free:
            problem = f"needs {job.mem} bytes on card {i}, {card.free} free"
    if problem:
        raise RuntimeError(f"policy {policy} started job {job.id} on {host}: {problem}")
