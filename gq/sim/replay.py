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

Trace jobs become gq jobs as gq/sim/conversion.py says; a job runs for its trace duration, or
until its time limit if that comes first; jobs that fit no empty host (more GPUs than a host
has, say) are dropped and counted.

With preemption, the gq policy also stops jobs of the preemptible tiers for waiting work of a
higher tier (gq/policy/preemption.py, as the daemon does after each pass). A stopped job keeps
its cards through its grace, then waits again with the run time it had left (it saved its
work on the signal). Its end of grace is one more kind of event, and so is the end of a job's
exempt period (a pass then may preempt it); a pass is skipped only if it could neither start
nor preempt anything.

Fair share charges a job's dominant share of its host from its start, like the daemon, with
usage recalculated every `usage_refresh` simulated seconds, on a fixed grid (Slurm
recalculates priorities periodically too: PriorityCalcPeriod, 5 minutes by default).

A lab (gq/sim/lab.py) adds pools, accounts and admin reservations, which every policy keeps; the
end of each reservation is one more event, since a job kept off its cards may start then.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Callable

from gq.model import Job, JobState, Reason, Tier
from gq.policy import (
    FairShareConfig,
    Host,
    Limits,
    PendingQueue,
    Plan,
    RunInterval,
    SchedulerInput,
    schedule,
)
from gq.policy.baselines import fifo, greedy
from gq.policy.placement import Capacity
from gq.policy.preemption import Victim, plan_preemptions
from gq.policy.queue import shape as shape_of
from gq.policy.accounts import dominant_weight
from gq.policy.quotas import UserLimits
from gq.policy.schedule import allowed_cards
from gq.sim.conversion import check_fits, to_job
from gq.sim.lab import Lab
from gq.sim.learned import Learned
from gq.sim.time_model import TimeModel
from gq.sim.traces import TraceJob
from gq.sim.usage import UsageGrid

def _gq(inp: SchedulerInput) -> Plan:
    """The daemon's policy, reading the queue only as far as a start is still possible (a
    replay needs the starts, not every waiting job's reason)."""
    return schedule(inp, explain=False)


POLICIES: dict[str, Callable[[SchedulerInput], Plan]] = {
    "gq": _gq,
    "fifo": lambda inp: fifo(inp, explain=False),
    "greedy": lambda inp: greedy(inp, explain=False),
}
USAGE_REFRESH = 300.0  # simulated seconds between fair-share recalculations
# Traces carry no lab configuration, so no per-user limits: the default high_share
# (20% of the cards per user) would hold back half of each trace, whose tiers are a mapping
# of service classes, not a lab's urgent work (docs/traces.md).
REPLAY_LIMITS = Limits(default=UserLimits(high_share=None))


@dataclass(frozen=True)
class Preemption:
    """How a replay preempts, as the daemon's [preemption] defaults do: `low` jobs, each
    exempt for the first `exempt` seconds of every run, stopped `grace` seconds after their
    checkpoint signal. A job saves its work on the signal (gq's contract, docs/preemption.md)
    and resumes where it was; the grace is spent saving, not progressing."""

    exempt: float = 600.0
    grace: float = 60.0
    tiers: frozenset[str] = frozenset({"low"})  # [preemption] preemptible


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
    # Preemption: times the job was stopped and requeued; seconds it held its cards over all
    # its runs (None: end - start, a single run). `start` is its first start.
    preemptions: int = 0
    held: float | None = None

    @property
    def held_seconds(self) -> float:
        return self.end - self.start if self.held is None else self.held

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
    cpu_seconds: float = 0.0  # CPU time it took (what a loaded machine does not inflate)
    # Preemption (gq policy with preemption on): jobs stopped, the card-seconds they spent in
    # their grace (saving, not progressing: what the checkpoint contract costs), and the
    # card-seconds since their last start (what a job that did not checkpoint would lose).
    preemptions: int = 0
    grace_card_seconds: float = 0.0
    at_risk_card_seconds: float = 0.0


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
    preemption: Preemption | None = None,
    lab: Lab = Lab(),
    time_model: TimeModel | None = None,
    learn: bool = False,
) -> ReplayResult:
    """Replay the trace (sorted by submit time, as read_trace gives it) on `hosts`.
    `skip_idle_passes=False` runs a pass at every event time (tests check that skipping
    changes nothing). `preemption`: the gq policy also preempts `low` jobs for waiting work of
    a higher tier, as the daemon does (fifo and greedy never preempt). `lab`: pools, accounts
    and admin reservations (times from the start of the trace); its [scheduler] and [limits],
    when it has them, replace `default_limit`, `max_reservations`, `fairshare` and `limits`.
    `time_model`: how users declare limits (gq/sim/time_model.py), instead of `time_factor`.
    `learn`: jobs without a limit are planned with their predicted run time, learned from the
    completed runs of the same user, name and GPUs, as the daemon learns (policy/predict.py)."""
    tier_limits: dict[str, float] = {}
    if lab.scheduler is not None:
        settings = lab.scheduler
        default_limit, tier_limits = settings.default_limit, settings.tier_limits
        max_reservations, fairshare = settings.reservations, settings.fairshare
        limits = limits if settings.limits is None else settings.limits
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}: expected {', '.join(POLICIES)}")
    if not math.isfinite(time_factor) or time_factor < 0:
        raise ValueError(f"time factor {time_factor}: expected 0 or more")
    if not hosts:
        raise ValueError("a cluster needs at least one host")
    if len({h.name for h in hosts}) != len(hosts):
        raise ValueError("the hosts of a cluster need distinct names (running jobs name theirs)")
    sim = _Replay(hosts, policy, default_limit, tier_limits, max_reservations, fairshare,
                  limits, usage_refresh, max_wall_s, skip_idle_passes,
                  preemption if policy == "gq" else None, lab)
    sim.learned = Learned() if learn else None
    jobs = sim.admit(trace_jobs, time_factor, time_model)
    return sim.run(jobs)


class _Replay:
    learned: Learned | None = None

    def __init__(self, hosts, policy, default_limit, tier_limits, max_reservations, fairshare,
                 limits, usage_refresh, max_wall_s, skip_idle_passes, preemption, lab):
        self.hosts = tuple(hosts)
        self.pools = lab.pools_on(self.hosts)
        self.windows = lab.windows
        self.accounts = lab.accounts
        self.policy_name = policy
        self.policy = POLICIES[policy]
        self.default_limit, self.tier_limits = default_limit, tier_limits
        self.max_reservations = max_reservations
        self.fairshare = fairshare
        self.limits = limits
        self.usage_refresh = usage_refresh
        self.max_wall_s = max_wall_s
        self.skip_idle_passes = skip_idle_passes
        self.preemption = preemption
        self.capacity = {h.name: Capacity(h, []) for h in self.hosts}
        self.card_memory = {h.name: {c.index: c.memory_total for c in h.cards} for h in hosts}
        self.result = ReplayResult(policy, self.hosts, [])
        self.trace_ids: dict[int, TraceJob] = {}
        self.run_time: dict[int, float] = {}
        self.pending = PendingQueue()  # kept sorted between fair-share recalculations
        self.running: dict[int, Job] = {}
        # Events after arrivals: (time, job id, its run): the end of that run, or of its grace
        # if it was preempted; a run of -1 only wakes the replay (an exempt period ended).
        self.completions: list[tuple[float, int, int]] = []
        self.remaining: dict[int, float] = {}  # run time left (less after a preemption)
        self.first_start: dict[int, float] = {}
        self.held: dict[int, float] = {}  # card-holding seconds of runs that ended
        self.signalled: dict[int, float] = {}  # preempted job -> when it got the signal
        # Pending requests by shape, and whether each fits somewhere now (see the docstring).
        self.shapes: dict[tuple, list] = {}  # shape -> [pending jobs of it, a job of it]
        self.fits: dict[tuple, bool] = {}
        self.usage = UsageGrid(usage_refresh, fairshare.half_life)
        self.host_of = {h.name: h for h in self.hosts}
        for w in self.windows:  # a job kept off a reservation's cards may start at its end
            heapq.heappush(self.completions, (w.end, 0, -1))

    # ---- trace jobs into gq jobs ----------------------------------------------------------

    def admit(self, trace_jobs, time_factor: float, time_model: TimeModel | None = None
              ) -> list[Job]:
        smallest_card = min(c.memory_total for h in self.hosts for c in h.cards) \
            if any(h.cards for h in self.hosts) else 0
        most_cpus = max(h.cpus for h in self.hosts)
        empty = [Capacity(h, []) for h in self.hosts]
        jobs = []
        for n, tj in enumerate(trace_jobs, start=1):
            job = to_job(tj, n, time_factor, smallest_card, most_cpus)
            if time_model is not None and tj.time_limit is None:
                job.time_limit = time_model.limit(tj.duration, tj.job_id)
            fits = [cap.fit(job, self.pools.allowed(job)) for cap in empty]
            if all(cards is None for cards, _ in fits):
                why = f"fit no empty host: {fits[0][1]}"
                self.result.dropped[why] = self.result.dropped.get(why, 0) + 1
                continue
            limit = job.time_limit
            self.run_time[job.id] = tj.duration if limit is None else min(tj.duration, limit)
            self.remaining[job.id] = self.run_time[job.id]
            job.preemptible = self.preemption is not None and str(job.priority) in \
                self.preemption.tiers
            self.trace_ids[job.id] = tj
            jobs.append(job)
        return jobs

    # ---- the event loop -------------------------------------------------------------------

    def run(self, jobs: list[Job]) -> ReplayResult:
        began, cpu_began = time.perf_counter(), time.process_time()
        arrivals = sorted(jobs, key=lambda j: (j.submitted_at, j.id))
        i, n = 0, len(arrivals)
        while i < n or (self.completions and (self.pending or self.running)):
            t = min(arrivals[i].submitted_at if i < n else math.inf,
                    self.completions[0][0] if self.completions else math.inf)
            while self.completions and self.completions[0][0] <= t:
                self.run_ends(*heapq.heappop(self.completions)[1:], t)
            while i < n and arrivals[i].submitted_at <= t:
                self.arrive(arrivals[i])
                i += 1
            if not self.pending or (self.skip_idle_passes and not self.could_start()
                                    and not self.could_preempt(t)):
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
        self.result.cpu_seconds = time.process_time() - cpu_began
        return self.result

    def arrive(self, job: Job) -> None:
        if self.learned is not None:
            self.learned.arrive(job, self.trace_ids[job.id])
        self.pending.add(job)
        entry = self.shapes.get(shape := shape_of(job))
        if entry is None:
            self.shapes[shape] = [1, job]
        else:
            entry[0] += 1

    def run_ends(self, job_id: int, run: int, now: float) -> None:
        """A run's end, or the end of its grace after a preemption; stale events are dropped."""
        job = self.running.get(job_id)
        if job is None or job.restarts != run:
            return
        if now >= job.started_at + self.remaining[job_id]:
            self.complete(job, now)
        else:
            self.requeue(job, now)

    def release(self, job: Job, now: float) -> float:
        """Free what the job's run held, charge it to fair share; return the cards it held."""
        del self.running[job.id]
        self.capacity[job.host].release(job, job.gpu_ids)
        self.fits.clear()
        weight, charge = self.cards_held(job), self.weight(job)
        if charge > 0:
            self.usage.ended.append(RunInterval(job.user, charge, job.started_at, now))
        self.held[job.id] = self.held.get(job.id, 0.0) + now - job.started_at
        return weight

    def complete(self, job: Job, now: float) -> None:
        weight = self.release(job, now)
        tj = self.trace_ids[job.id]
        if self.learned is not None and self.run_time[job.id] >= tj.duration:
            self.learned.completed(job, tj.duration)
        self.result.jobs.append(JobResult(
            tj.job_id, job.user, job.priority, job.gpus_held, weight, job.submitted_at,
            self.first_start[job.id], now, job.host,
            timed_out=self.run_time[job.id] < tj.duration, preemptions=job.restarts,
            held=self.held[job.id] if job.restarts else None))

    def could_preempt(self, now: float) -> bool:
        """Whether a pass could preempt: some job waits in a higher tier than a running,
        preemptible job past its exempt period (what plan_preemptions asks first)."""
        if self.preemption is None:
            return False
        ranks = [j.priority.rank for j in self.running.values()
                 if j.preemptible and j.state is JobState.RUNNING
                 and now - j.started_at >= self.preemption.exempt]
        return bool(ranks) and any(r < max(ranks) for r in self.pending.tiers())

    def preempt(self, plan: Plan, inp: SchedulerInput, now: float) -> None:
        """Signal the jobs that the daemon's policy would stop for waiting higher-tier work."""
        waiting = [self.pending.jobs[i] for i, r in plan.reasons.items() if r == Reason.RESOURCES]
        if not waiting:
            return
        allowed = {j.id: allowed_cards(inp, j, self.hosts[0]) for j in waiting} if (
            self.pools.cards or self.windows) and len(self.hosts) == 1 else None
        decided = plan_preemptions(self.hosts, waiting, list(self.running.values()), now,
                                   self.preemption.exempt, allowed=allowed)
        for p in decided.preemptions:
            for victim in p.victims:
                self.signal(self.running[victim.job_id], victim, now)

    def signal(self, job: Job, victim: Victim, now: float) -> None:
        job.state = JobState.PREEMPTING
        self.signalled[job.id] = now
        self.result.preemptions += 1
        self.result.at_risk_card_seconds += victim.lost_card_seconds
        heapq.heappush(self.completions, (now + self.preemption.grace, job.id, job.restarts))

    def requeue(self, job: Job, now: float) -> None:
        """The grace of a preempted job is over: it saved its work at the signal and waits
        again, with the same id and what it had left to run."""
        weight = self.release(job, now)
        signalled = self.signalled.pop(job.id)
        self.remaining[job.id] -= signalled - job.started_at
        self.result.grace_card_seconds += weight * (now - signalled)
        job.state, job.started_at, job.gpu_ids = JobState.PENDING, None, []
        job.restarts += 1
        self.arrive(job)

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
        running = list(self.running.values())
        usage = self.usage.at(now, lambda: [(j, self.weight(j)) for j in running])
        inp = SchedulerInput(
            self.hosts, self.pending, running, now=now,
            default_limit=self.default_limit, tier_limits=self.tier_limits,
            max_reservations=self.max_reservations,
            usage=usage, fairshare=self.fairshare, limits=self.limits,
            score_time=self.usage.computed_at, pools=self.pools, windows=self.windows,
            accounts=self.accounts,
            predicted={} if self.learned is None else self.learned.limits(running, now),
        )
        plan = self.policy(inp)
        for start in plan.starts:
            self.start(start.job_id, start.host, start.gpu_ids, now)
        if self.preemption is not None:
            self.preempt(plan, inp, now)

    def start(self, job_id: int, host: str, gpu_ids: tuple[int, ...], now: float) -> None:
        job = self.pending.remove(job_id)
        if self.learned is not None:
            self.learned.started(job)
        entry = self.shapes[shape := shape_of(job)]
        entry[0] -= 1
        if entry[0] == 0:
            del self.shapes[shape]
            self.fits.pop(shape, None)
        capacity = self.capacity[host]
        check_fits(job, host, gpu_ids, capacity, self.policy_name)
        capacity.take(job, gpu_ids)
        self.fits.clear()
        job.state, job.started_at = JobState.RUNNING, now
        job.host, job.gpu_ids = host, list(gpu_ids)
        self.running[job_id] = job
        self.first_start.setdefault(job_id, now)
        heapq.heappush(self.completions, (now + self.remaining[job_id], job_id, job.restarts))
        if self.preemption is not None and job.preemptible:
            heapq.heappush(self.completions, (now + self.preemption.exempt, job_id, -1))

    # ---- fair share -----------------------------------------------------------------------

    def cards_held(self, job: Job) -> float:
        """Cards held, for the results: slices count as their share of the card."""
        if job.mem is None:
            return float(len(job.gpu_ids))
        memory = self.card_memory[job.host]
        return sum(min(1.0, job.mem / memory[i]) for i in job.gpu_ids)

    def weight(self, job: Job) -> float:
        """What the job is charged, as the daemon charges it: its dominant share of its host
        (cards, slices as their share of the card, cores, memory), in card equivalents."""
        return dominant_weight(job, self.host_of[job.host])
