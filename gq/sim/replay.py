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

With freezing (`preemption.freeze`, gq/sim/freeze_model.py), a victim the policy chooses to
freeze stops progressing at once, holds its cards for its freeze time, then holds none, waiting
frozen until a pass thaws it (gq/policy/freezing.py); its thaw holds its new cards for the thaw
time before it goes on with the run time it had left. Neither is a restart.

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
from dataclasses import replace
from typing import Callable

from gq.config.scheduling import scheduler_input
from gq.config.settings import Config
from gq.model import Job, JobState, Tier
from gq.policy import (
    FairShareConfig,
    Host,
    Limits,
    PendingQueue,
    Plan,
    RunInterval,
    SchedulerInput,
)
from gq.policy.decide import POLICIES as DECIDERS
from gq.policy.decide import PreemptRule, decide
from gq.policy.placement import Capacity
from gq.policy.preemption import Victim, requeue_or_hold
from gq.policy.queue import shape as shape_of
from gq.policy.accounts import dominant_weight
from gq.policy.cardshare import cards_held
from gq.policy.quotas import UserLimits, submit_refusal
from gq.protocol import BadInput
from gq.policy.tiresias import queue_of
from gq.sim.colocation import Sharing
from gq.sim.conversion import check_fits, host_limits, to_job
from gq.sim.results import JobResult, Preemption, ReplayResult  # noqa: F401 (re-exported)
from gq.sim.history import FingerprintRunTime, RunTimePredictor
from gq.sim.lab import Lab
from gq.sim.learned import Learned
from gq.sim.time_model import TimeModel
from gq.sim.traces import TraceJob
from gq.sim.usage import UsageGrid


def _applied(name: str) -> Callable[..., Plan]:
    """The policy as the replay applies it: `decide`, reading the queue only as far as a start
    is still possible (a replay needs the starts, not every waiting job's reason)."""
    return lambda inp, preempt=None: decide(inp, name, explain=False, preempt=preempt)


POLICIES: dict[str, Callable[..., Plan]] = {name: _applied(name) for name in DECIDERS}
USAGE_REFRESH = 300.0  # simulated seconds between fair-share recalculations
# Traces carry no lab configuration, so no per-user limits: the default high_share
# (20% of the cards per user) would hold back half of each trace, whose tiers are a mapping
# of service classes, not a lab's urgent work (docs/traces.md).
REPLAY_LIMITS = Limits(default=UserLimits(high_share=None))


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
    tiers: bool = True,
    predictor: Callable[[], RunTimePredictor] | None = None,
    share_util_max: float | None = None,
    seed: int = 1,
    time_model: TimeModel | None = None,
    learn: bool = False,
    config: Config | None = None,
) -> ReplayResult:
    """Replay the trace (sorted by submit time, as read_trace gives it) on `hosts`.
    `skip_idle_passes=False` runs a pass at every event time (tests check that skipping
    changes nothing). `preemption`: the gq policy also preempts `low` jobs for waiting work of
    a higher tier, as the daemon does (fifo and greedy never preempt). `lab`: pools, accounts
    and admin reservations (times from the start of the trace); its [scheduler] and [limits],
    when it has them, replace `default_limit`, `max_reservations`, `fairshare` and `limits`.
    `tiers=False` (`--tiers off`): every job `normal`. `predictor`: makes what QSSF predicts
    run times with (default: the daemon's rule, else each user's mean; gq/sim/history.py). Tiresias preempts by its
    own rule, with the grace of `preemption` (or its default). Slices that share a card slow
    each other down (gq/sim/colocation.py, profiles drawn with `seed`); `share_util_max`: the
    gq policy applies the daemon's utilisation rule to the drawn profiles (None: memory only).
    `time_model`: how users declare limits (gq/sim/time_model.py), instead of `time_factor`.
    `learn`: jobs without a limit are planned with their predicted run time, learned from the
    completed runs of the same user, name and GPUs, as the daemon learns (policy/predict.py).
    `config`: the daemon's settings (a config.toml, gq/config/settings.py), which then replace
    `default_limit`, `max_reservations`, `fairshare`, `limits`, `share_util_max` (unless given)
    and the lab's pools and accounts: the policy's input is assembled as the daemon's."""
    tier_limits: dict[str, float] = {}
    if config is None and lab.config is not None:  # `gq sim --config`: the daemon's file
        config = lab.config
    if config is not None and policy == "gq":  # the daemon preempts as its [preemption] says
        cfg = config.preemption
        base = preemption or Preemption(tiers=cfg.preemptible)
        preemption = replace(base, exempt=cfg.exempt, grace=cfg.grace,
                             max_requeues=cfg.max_requeues)
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}: expected {', '.join(POLICIES)}")
    if not math.isfinite(time_factor) or time_factor < 0:
        raise ValueError(f"time factor {time_factor}: expected 0 or more")
    if not hosts:
        raise ValueError("a cluster needs at least one host")
    if len({h.name for h in hosts}) != len(hosts):
        raise ValueError("the hosts of a cluster need distinct names (running jobs name theirs)")
    if policy == "tiresias":  # every job may be stopped, at any time
        grace = (preemption or Preemption()).grace
        preemption = Preemption(exempt=0.0, grace=grace, tiers=frozenset(map(str, Tier)))
    settings = config if config is not None else Config(
                      host_cpus=1, host_ram=None, default_time=default_limit,
                      default_time_by_tier=dict(tier_limits), reservations=max_reservations,
                      fairshare=fairshare, limits=limits, share_util_max=share_util_max,
                      pools=lab.pools, accounts=lab.accounts)
    if config is not None and share_util_max is not None:
        settings = replace(settings, share_util_max=share_util_max)
    sim = _Replay(hosts, policy, settings, usage_refresh, max_wall_s, skip_idle_passes,
                  preemption if policy in ("gq", "tiresias") else None, lab)
    sim.predictor = (predictor or FingerprintRunTime)()
    sim.sharing = Sharing(seed)
    sim.learned = Learned() if learn else None
    jobs = sim.admit(trace_jobs, time_factor, tiers, time_model)
    return sim.run(jobs)


class _Replay:
    learned: Learned | None = None

    def __init__(self, hosts, policy, settings: Config, usage_refresh, max_wall_s,
                 skip_idle_passes, preemption, lab):
        self.hosts = tuple(hosts)
        self.settings = settings  # what the policy is run with (gq/config/scheduling.py)
        self.pools = lab.pools_on(self.hosts)
        self.lab_pools = lab.pools
        self.windows = lab.windows
        self.policy_name = policy
        self.policy = POLICIES[policy]
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
        # Each job's current run or freeze (starts, freezes and thaws count up): what tells an
        # event of the job's present from a stale one.
        self.epochs: dict[int, int] = {}
        self.frozen: dict[int, Job] = {}  # frozen jobs, waiting to be thawed
        self.remaining: dict[int, float] = {}  # run time left (less after a preemption)
        self.first_start: dict[int, float] = {}
        self.held: dict[int, float] = {}  # card-holding seconds of runs that ended
        self.attained: dict[int, float] = {}  # card-seconds of runs that ended (Tiresias)
        self.speed: dict[int, float] = {}  # a running slice's speed, sharing its cards
        self.signalled: dict[int, float] = {}  # preempted job -> when it got the signal
        # Pending requests by shape, and whether each fits somewhere now (see the docstring).
        self.shapes: dict[tuple, list] = {}  # shape -> [pending jobs of it, a job of it]
        self.fits: dict[tuple, bool] = {}
        self.usage = UsageGrid(usage_refresh, settings.fairshare.half_life)
        self.host_of = {h.name: h for h in self.hosts}
        for w in self.windows:  # a job kept off a reservation's cards may start at its end
            heapq.heappush(self.completions, (w.end, 0, -1))

    # ---- trace jobs into gq jobs ----------------------------------------------------------

    def admit(self, trace_jobs, time_factor: float, tiers: bool = True,
              time_model: TimeModel | None = None) -> list[Job]:
        smallest_card = min(c.memory_total for h in self.hosts for c in h.cards) \
            if any(h.cards for h in self.hosts) else 0
        most_cpus = max(h.cpus for h in self.hosts)
        most_cards = max(len(h.cards) for h in self.hosts)
        empty = [Capacity(h, []) for h in self.hosts]
        limits = tuple(host_limits(h, self.lab_pools) for h in self.hosts)
        jobs = []
        for n, tj in enumerate(trace_jobs, start=1):
            try:
                job = to_job(tj, n, time_factor, smallest_card, most_cpus, limits)
            except BadInput as e:  # as the daemon refuses it: say so, once per reason
                self.drop(tj, f"were refused: {e.message}")
                continue
            if not tiers:
                job.priority = Tier.NORMAL
            refusal = submit_refusal(job, self.settings.limits, most_cards,
                                     self.settings.accounts)
            if refusal is not None:  # the daemon's own sentence (gq/policy/quotas.py)
                self.drop(tj, f"were refused: {refusal}")
                continue
            if time_model is not None and tj.time_limit is None:
                job.time_limit = time_model.limit(tj.duration, tj.job_id)
            fits = [cap.fit(job, self.pools.allowed(job)) for cap in empty]
            if all(cards is None for cards, _ in fits):
                self.drop(tj, f"fit no empty host: {fits[0][1]}")
                continue
            limit = job.time_limit
            self.run_time[job.id] = tj.duration if limit is None else min(tj.duration, limit)
            self.remaining[job.id] = self.run_time[job.id]
            job.preemptible = self.preemption is not None and str(job.priority) in \
                self.preemption.tiers
            self.trace_ids[job.id] = tj
            jobs.append(job)
        return jobs

    def drop(self, tj: TraceJob, why: str) -> None:
        self.result.dropped[why] = self.result.dropped.get(why, 0) + 1
        self.result.dropped_jobs.append((tj.job_id, why))

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
            if (not self.pending and not self.frozen) or (
                    self.skip_idle_passes and not self.frozen and not self.could_start()
                    and not self.could_preempt(t)):
                self.result.skipped_passes += 1
                continue
            self.run_pass(t)
            if self.max_wall_s is not None and time.perf_counter() - began > self.max_wall_s:
                raise ReplayTimeout(
                    f"{self.policy_name}: over {self.max_wall_s:.0f}s of wall time at simulated "
                    f"second {t:.0f}: {len(self.result.jobs)} of {n} jobs done, "
                    f"{len(self.pending)} waiting, {self.result.passes} passes")
        self.result.unfinished = len(self.pending) + len(self.frozen)
        self.result.sharing = self.sharing.figures()
        self.result.wall_seconds = time.perf_counter() - began
        self.result.cpu_seconds = time.process_time() - cpu_began
        return self.result

    def arrive(self, job: Job) -> None:
        if job.mem is not None:
            self.sharing.profile(job.id)
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
        if job is None or self.epochs.get(job_id) != run:
            return
        if job.state is JobState.PREEMPTING and job.host_mem:
            self.frozen_now(job, now)
        elif now >= job.started_at + self.remaining[job_id] / self.speed.get(job_id, 1.0):
            self.complete(job, now)
        else:
            self.requeue(job, now)

    def release(self, job: Job, now: float) -> float:
        """Free what the job's run held, charge it to fair share; return the cards it held."""
        del self.running[job.id]
        self.capacity[job.host].release(job, job.gpu_ids)
        if job.mem is not None:
            self.sharing.end(job.id, job.host, job.gpu_ids, now)
        self.fits.clear()
        weight, charge = self.cards_held(job), self.weight(job)
        if charge > 0:
            self.usage.ended.append(RunInterval(job.user, charge, job.started_at, now))
        self.held[job.id] = self.held.get(job.id, 0.0) + now - job.started_at
        self.attained[job.id] = self.attained.get(job.id, 0.0) + weight * (now - job.started_at)
        return weight

    def complete(self, job: Job, now: float) -> None:
        weight = self.release(job, now)
        tj = self.trace_ids[job.id]
        self.predictor.observe(job, self.held[job.id])
        if self.learned is not None and self.run_time[job.id] >= tj.duration:
            for job_id in self.learned.completed(job, tj.duration):
                self.pending.rekey(job_id)  # its score counts its predicted run time
        self.result.jobs.append(JobResult(
            tj.job_id, job.user, job.priority, job.gpus_held, weight, job.submitted_at,
            self.first_start[job.id], now, job.host,
            timed_out=self.run_time[job.id] < tj.duration, preemptions=job.restarts,
            held=self.held[job.id] if job.restarts or self.epochs[job.id] > 1 else None,
            gpu_ids=tuple(job.gpu_ids)))

    def could_preempt(self, now: float) -> bool:
        """Whether a pass could preempt: some job waits in a higher tier than a running,
        preemptible job past its exempt period (what plan_preemptions asks first); under
        Tiresias, in a lower queue than a running job."""
        if self.preemption is None:
            return False
        if self.policy_name == "tiresias":
            return self.could_preempt_by_service(now)
        ranks = [j.priority.rank for j in self.running.values()
                 if j.preemptible and j.state is JobState.RUNNING
                 and now - j.started_at >= self.preemption.exempt]
        return bool(ranks) and any(r < max(ranks) for r in self.pending.tiers())

    def could_preempt_by_service(self, now: float) -> bool:
        queues = [queue_of(self.attained.get(j.id, 0.0) + self.cards_held(j)
                           * (now - j.started_at)) for j in self.running.values()
                  if j.state is JobState.RUNNING]
        if not queues or max(queues) == 0:
            return False
        top = max(queues)
        return any(queue_of(self.attained.get(j.id, 0.0)) < top for j in self.pending)

    def preempt(self, plan: Plan, now: float) -> None:
        """Signal the jobs the pass chose to stop."""
        for p in plan.preemptions:
            self.result.preempted_for.setdefault(self.trace_ids[p.job_id].job_id, now)
            for victim in p.victims:
                choice = plan.freezing.get(victim.job_id)
                if choice is not None and choice.freeze:
                    self.freeze(self.running[victim.job_id], choice.host_mem, now)
                else:
                    self.signal(self.running[victim.job_id], victim, now)

    def signal(self, job: Job, victim: Victim, now: float) -> None:
        job.state = JobState.PREEMPTING
        self.signalled[job.id] = now
        self.result.preemptions += 1
        self.result.at_risk_card_seconds += victim.lost_card_seconds
        heapq.heappush(self.completions, (now + self.preemption.grace, job.id,
                                          self.epochs[job.id]))

    def requeue(self, job: Job, now: float) -> None:
        """The grace of a preempted job is over: it saved its work at the signal and waits
        again, with the same id and what it had left to run."""
        weight = self.release(job, now)
        signalled = self.signalled.pop(job.id)
        self.remaining[job.id] -= (signalled - job.started_at) * self.speed.pop(job.id, 1.0)
        self.result.grace_card_seconds += weight * (now - signalled)
        job.state, job.started_at, job.gpu_ids = JobState.PENDING, None, []
        job.restarts += 1
        job.preemptions += 1
        state, _reason, detail = requeue_or_hold(job, True, self.preemption.max_requeues,
                                                 "preempted")
        if state is JobState.HELD:  # as the daemon holds it, until someone releases it
            self.result.held_jobs.append((self.trace_ids[job.id].job_id, detail))
            return
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
        inp = self.pass_input(running, now)
        rule = None
        if self.preemption is not None:
            model = self.preemption.freeze
            rule = PreemptRule(self.preemption.exempt, freeze=None if model is None else model.rule(
                [j for j in running if j.preemptible and j.state is JobState.RUNNING],
                self.card_memory, self.preemption.tiers))
        plan = self.policy(inp, rule)
        for start in plan.starts:
            self.start(start.job_id, start.host, start.gpu_ids, now)
        for thaw in plan.thaws:
            self.thaw(thaw.job_id, thaw.host, thaw.gpu_ids, now)
        self.preempt(plan, now)

    def pass_input(self, running: list[Job], now: float) -> SchedulerInput:
        """The policy's input at `now`, assembled as the daemon's (gq/config/scheduling.py)."""
        usage = self.usage.at(now, lambda: [(j, self.weight(j)) for j in running])
        return scheduler_input(
            self.settings, self.hosts, self.pending, running, now=now, usage=usage,
            score_time=self.usage.computed_at, windows=self.windows, attained=self.attained,
            expected_run_time=self.expected_run_time,
            util=self.sharing.util if self.settings.share_util_max is not None else {},
            predicted={} if self.learned is None else self.learned.limits(running, now),
            frozen=list(self.frozen.values()))

    def expected_run_time(self, job: Job) -> float:
        """The truth for the oracle (what is left of the run), a prediction for QSSF."""
        if self.policy_name == "sjf-oracle":
            return self.remaining[job.id]
        return self.predictor(job)

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
        self.run_on(job, host, gpu_ids, now)

    def run_on(self, job: Job, host: str, gpu_ids: tuple[int, ...], now: float) -> None:
        """A start or a thaw: the job holds its cards from now, and ends when its run is done."""
        job.state, job.started_at = JobState.RUNNING, now
        job.host, job.gpu_ids = host, list(gpu_ids)
        self.running[job.id] = job
        self.epochs[job.id] = self.epochs.get(job.id, 0) + 1
        self.first_start.setdefault(job.id, now)
        if job.mem is not None:
            self.speed[job.id] = self.sharing.start(job.id, host, gpu_ids, now)
        run = self.remaining[job.id] / self.speed.get(job.id, 1.0)
        heapq.heappush(self.completions, (now + run, job.id, self.epochs[job.id]))
        if self.preemption is not None and job.preemptible and self.preemption.exempt > 0:
            heapq.heappush(self.completions, (now + self.preemption.exempt, job.id, -1))

    # ---- freezing -------------------------------------------------------------------------

    def freeze(self, job: Job, size: int, now: float) -> None:
        """The job stops progressing now; its cards are free once its memory is copied out."""
        job.state, job.host_mem = JobState.PREEMPTING, size
        job.frozen_cards = [{"index": i, "name": "", "mem": size // len(job.gpu_ids)}
                            for i in job.gpu_ids]
        self.signalled[job.id] = now
        self.result.freezes += 1
        self.epochs[job.id] += 1
        done = now + self.preemption.freeze.seconds(size)
        heapq.heappush(self.completions, (done, job.id, self.epochs[job.id]))

    def frozen_now(self, job: Job, now: float) -> None:
        weight = self.release(job, now)
        signalled = self.signalled.pop(job.id)
        self.remaining[job.id] -= (signalled - job.started_at) * self.speed.pop(job.id, 1.0)
        self.result.freeze_card_seconds += weight * (now - signalled)
        job.state, job.gpu_ids = JobState.FROZEN, []
        self.frozen[job.id] = job

    def thaw(self, job_id: int, host: str, gpu_ids: tuple[int, ...], now: float) -> None:
        """Its memory is copied back onto its new cards (held, no progress), then it goes on."""
        job = self.frozen.pop(job_id)
        check_fits(job, host, gpu_ids, self.capacity[host], self.policy_name)
        self.capacity[host].take(job, gpu_ids)
        self.fits.clear()
        seconds = self.preemption.freeze.seconds(job.host_mem or 0)
        self.remaining[job_id] += seconds
        self.result.thaw_card_seconds += seconds * cards_held(
            replace(job, gpu_ids=list(gpu_ids)), self.card_memory[host])
        job.host_mem, job.frozen_cards = None, []
        self.run_on(job, host, gpu_ids, now)

    # ---- fair share -----------------------------------------------------------------------

    def cards_held(self, job: Job) -> float:
        """Cards held, for the results: slices count as their share of the card."""
        return cards_held(job, self.card_memory[job.host])

    def weight(self, job: Job) -> float:
        """What the job is charged, as the daemon charges it: its dominant share of its host
        (cards, slices as their share of the card, cores, memory), in card equivalents."""
        return dominant_weight(job, self.host_of[job.host])
