"""The rhythm of scheduling passes: when the daemon runs the policy, and how much of the queue a
pass reads (docs/daemon.md, "Scheduling passes").

- Coalesced: an event (a submit, a job's end, a cancel...) asks for a pass; one pass runs once
  the event loop has handled everything ready now, so a burst of ends and arrivals is one pass.
  Under a flood of requests, passes are spaced so that they take at most half the daemon's time.
  Each tick asks for one as well, for what time alone changes (limits, admin reservations).
- Kept order: the queue the policy reads is kept between passes (gq/daemon/kept_queue.py),
  sorted again only when scores change (usage is recalculated once a minute); held jobs and
  jobs waiting on a dependency are not in it.
- Early stop: a pass reads the queue only as far as a start or a reservation is still possible
  (gq/policy/schedule.py, `explain=False`), as `gq sim` does: the same starts, reservations and
  preemptions as a pass that reads it all.
- Explaining pass: every waiting job's reason, shortfall and score come from a pass that reads
  the whole queue. It runs when the queue changed, at most every EXPLAIN_EVERY seconds and
  spaced so that it takes at most EXPLAIN_SHARE of the daemon's time, and at least every
  EXPLAIN_MAX_AGE seconds; `gq why ID` and `gq show ID` run one first if the queue changed
  since the last and holds at most EXPLAIN_ON_REQUEST jobs (so that no request reads more).
  The jobs a quick pass reads get their reasons from it at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from gq.config import Config
from gq.daemon.collateral import Collateral
from gq.daemon.freezing import Freezing
from gq.daemon.kept_queue import KeptQueue
from gq.daemon.preempting import Preempting
from gq.daemon.reading import Reading
from gq.daemon.runtimes import Fingerprints, start_notes
from gq.daemon.starting import Starting
from gq.model import Job, JobState
from gq.policy import Forecast, Host, Outcome, PendingQueue, Plan, SchedulerInput, decide
from gq.policy.backfill import expected_end
from gq.policy.fairshare import Score
from gq.policy.placement import Capacity
from gq.policy.predict import RunTimes
from gq.store import Store

log = logging.getLogger("gq.daemon")

EXPLAIN_EVERY = 0.5  # seconds: the least time between two explaining passes
EXPLAIN_SHARE = 0.02  # of the daemon's time, at most, in explaining passes
EXPLAIN_MAX_AGE = 30.0  # seconds: an explaining pass at least this often, changes or not
EXPLAIN_ON_REQUEST = 5000  # waiting jobs: up to this many, `gq why` runs an explaining pass

# The policy's input for a pass (Daemon.policy_input): the waiting jobs, the running ones, the
# dependencies' outcomes, now, the predicted run times, and the waiting slices.
PolicyInput = Callable[[PendingQueue, list[Job], dict[int, Outcome], float, dict[int, float],
                        list[Job]], SchedulerInput]


class Passes:
    """Runs the policy over the `kept` queue of `store`'s jobs and acts on its plan: starts
    through `starting`, thaws through `freezing`, preemptions through `preempting`, and keeps
    what it says of waiting jobs for `gq why`, `gq show`, `gq ls` and `gq top` (`shortfalls`,
    `forecasts`, `scores`, `start_notes`). The cards kept from a requeued victim come from
    `collateral`; `host()` and `policy_input(...)` are the daemon's view of the host and the
    policy's input (its usage, learned utilisations, admin reservations); `reading`'s cards
    and `config`'s pools (replaced on reload) say what a quick pass could fit; `run_times` and
    `fingerprints` what an expected start rests on. `clock` is the wall clock of the policy,
    `monotonic` the one of the passes' rhythm."""

    def __init__(self, store: Store, config: Config, kept: KeptQueue, reading: Reading,
                 collateral: Collateral, starting: Starting, freezing: Freezing,
                 preempting: Preempting, run_times: RunTimes, fingerprints: Fingerprints,
                 host: Callable[[], Host], policy_input: PolicyInput,
                 clock: Callable[[], float],
                 monotonic: Callable[[], float] = time.monotonic):
        self.store, self.config, self.kept, self.reading = store, config, kept, reading
        self.collateral, self.starting, self.freezing, self.preempting = (
            collateral, starting, freezing, preempting)
        self.run_times, self.fingerprints = run_times, fingerprints
        self.host, self.policy_input = host, policy_input
        self.clock, self.monotonic = clock, monotonic
        self.loop: asyncio.AbstractEventLoop | None = None
        # From the last pass: what each waiting job lacks, when reserved jobs should start,
        # and each waiting job's score.
        self.shortfalls: dict[int, str] = {}
        self.forecasts: dict[int, Forecast] = {}
        self.scores: dict[int, Score] = {}
        # Of each waiting `gq run` job (its caller shows it): how many waiting jobs the last
        # explaining pass considered before it.
        self.ahead: dict[int, int] = {}
        # Each reserved job: whether its expected start is known, and what it rests on.
        self.start_notes: dict[int, tuple[bool, str]] = {}
        self._pass_handle: asyncio.Handle | None = None  # a pass asked for, not run yet
        self._explain_handle: asyncio.Handle | None = None  # an explaining pass due later
        self._last_pass_end = 0.0  # monotonic() when the last pass ended
        self._last_pass_cost = 0.0  # how long it took, in seconds
        self._explained_at = float("-inf")  # when the last explaining pass ended
        self._explain_cost = 0.0
        self._explain_stale = True  # the queue changed since the last explaining pass
        # When the first job a reservation waits on is expected to end (as the last pass
        # planned it, by its prediction or its --time): a job that outlives it moves the
        # reservations behind it, so the forecasts are then stale as if the queue changed.
        self._forecasts_until = float("inf")
        # How many ran, and quick ones skipped as nothing could start (tests, benchmarks).
        self.counts = {"quick": 0, "explaining": 0, "skipped": 0}

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    @property
    def last_cost(self) -> float:
        """How long the last pass took, in seconds (gq_last_pass_seconds)."""
        return self._last_pass_cost

    def request_pass(self, freed: bool = False, tick: bool = False) -> None:
        """Ask for a pass (see the module's docstring). `freed`: resources were freed, so the
        pass is not spaced; `tick`: asked by the clock, not by a change."""
        if not tick or self._forecasts_outlived():
            self._explain_stale = True
        if self.loop is None or self._pass_handle is not None:
            return
        delay = 0.0 if freed else self._last_pass_end + self._last_pass_cost - self.monotonic()
        if delay <= 0:
            self._pass_handle = self.loop.call_soon(self.run_pass)
        else:
            self._pass_handle = self.loop.call_later(delay, self.run_pass)

    def explain_now(self) -> None:
        """Every waiting job's reason as of now, if the queue changed since the last
        explaining pass (`gq why`, `gq show`), also when a forecast's job has outlived its
        planned end, and it holds at most EXPLAIN_ON_REQUEST jobs: a request reads no more
        than that; beyond, it says what the last explaining pass said (spaced as above, at most
        EXPLAIN_MAX_AGE seconds old)."""
        if ((self._explain_stale or self._forecasts_outlived())
                and len(self.store.resident.waiting) <= EXPLAIN_ON_REQUEST):
            self.run_pass(explain=True)

    def _forecasts_outlived(self) -> bool:
        return self.clock() >= self._forecasts_until

    def run_pass(self, explain: bool | None = None) -> None:
        """One pass now; `explain`: whether it reads the whole queue (None: if it is due)."""
        began = self.monotonic()
        if explain is None:
            explain = self._explain_due(began)
        for name in ("_pass_handle", "_explain_handle") if explain else ("_pass_handle",):
            handle = getattr(self, name)
            if handle is not None:  # this pass serves whoever asked for that one
                handle.cancel()
                setattr(self, name, None)
        try:
            with self.store.relaxed():
                self._schedule_once(explain)
        except Exception:  # e.g. a full disk; never the request that asked for the pass
            log.exception("scheduling pass failed; the next tick tries again")
        finally:
            self._last_pass_end = self.monotonic()
            self._last_pass_cost = self._last_pass_end - began
            if explain:
                self._explained_at, self._explain_cost = self._last_pass_end, self._last_pass_cost
                self._explain_stale = False
            elif self._explain_stale and self._explain_handle is None and self.loop:
                wait = self._explain_interval() - (self._last_pass_end - self._explained_at)
                self._explain_handle = self.loop.call_later(max(wait, 0.0), self._explain_later)

    def _explain_later(self) -> None:
        self._explain_handle = None
        if self._explain_stale:
            self.run_pass(explain=True)

    def _explain_interval(self) -> float:
        return max(EXPLAIN_EVERY, self._explain_cost / EXPLAIN_SHARE)

    def _explain_due(self, now: float) -> bool:
        since = now - self._explained_at
        return since >= EXPLAIN_MAX_AGE or (self._explain_stale
                                             and since >= self._explain_interval())

    def _schedule_once(self, explain: bool) -> None:
        holding = self.store.holding_jobs()
        # Frozen jobs (gq/daemon/freezing.py) hold no card: they wait for the pass as thaw
        # requests, and are not running (one being frozen or thawed waits for that first).
        frozen = [j for j in holding if j.state == JobState.FROZEN and not j.freeze_op]
        running = [j for j in holding if j.state != JobState.FROZEN]
        self.collateral.prune_kept_off(running)
        aside = self.kept.sync(self.store, self.collateral.kept_off)
        if aside:  # Dependency, DependencyNeverSatisfied, PeerDown: as the policy would say
            self.store.set_reasons(aside)
        if not len(self.kept) and not frozen:
            self.shortfalls, self.forecasts, self.scores, self.ahead = {}, {}, {}, {}
            self.start_notes, self._forecasts_until = {}, float("inf")
            return
        if not explain and not frozen and not self._could_act(running):
            self.counts["skipped"] += 1
            return
        self.counts["explaining" if explain else "quick"] += 1
        inp = self.pass_input(running)
        inp.frozen = frozen
        plan = decide(inp, explain=explain, preempt=self.preempting.preempt_rule(inp))
        self.store.set_reasons(plan.reasons)
        self._keep_explanations(plan, explain)
        self.start_notes = start_notes(inp, plan.forecasts, self.run_times, self.fingerprints)
        self._forecasts_until = _first_planned_end(inp, plan)
        for start in plan.starts:
            self.starting.start(self.store.get_job(start.job_id), list(start.gpu_ids))
        for thaw in plan.thaws:
            self.freezing.thaw(thaw.job_id, list(thaw.gpu_ids))
        self._preempt_for_waiting(plan)

    def _could_act(self, running: list[Job]) -> bool:
        """Whether a pass could start or stop anything: some shape waiting fits what is free
        now (cards, memory, cores, its pool), or preemption could serve a waiting job. Neither
        reservations, quotas, admin reservations nor the utilisation rule can make a job fit
        that does not fit the free resources, so without one no plan starts anything (as the
        replay of gq sim skips such passes); the reasons then wait for the next pass that
        reads the jobs, or for the explaining one."""
        queue = self.kept.queue
        ranks = [j.priority.rank for j in running
                 if j.state is JobState.RUNNING and j.preemptible]
        if ranks and any(r < max(ranks) for r in queue.tiers()):
            return True
        free = Capacity(self.host(), running)
        pools = self.config.pools.for_cards([g.index for g in self.reading.cards])
        for request in queue.shapes:
            example = _example(request)
            if free.fit(example, pools.allowed(example))[0] is not None:
                return True
        return False

    def _preempt_for_waiting(self, plan: Plan) -> None:
        """Act on the pass's preemptions; what each waiting job is told joins its shortfall."""
        for job_id, text in self.preempting.preempt_for_waiting(plan):
            before = self.shortfalls.get(job_id)
            self.shortfalls[job_id] = f"{before}; {text}" if before else text

    def _keep_explanations(self, plan: Plan, explain: bool) -> None:
        """What `gq why` and `gq show` say: from an explaining pass, all of it; from a quick
        one, what it says of the jobs it read (the others keep the last explaining pass's)."""
        self.forecasts = plan.forecasts  # complete either way: every reservation is placed
        if explain:
            self.shortfalls, self.scores = plan.shortfalls, plan.scores
            attached = {i for i, j in self.kept.queue.jobs.items() if j.attach is not None}
            self.ahead = {job_id: n for n, job_id in enumerate(plan.reasons)
                          if job_id in attached} if attached else {}
            return
        for job_id in plan.reasons.keys() | {s.job_id for s in plan.starts}:
            text = plan.shortfalls.get(job_id)
            if text is None:
                self.shortfalls.pop(job_id, None)
            else:
                self.shortfalls[job_id] = text
        self.scores.update(plan.scores)

    def pass_input(self, running: list[Job]) -> SchedulerInput:
        """The policy's input from the kept queue: what it costs does not grow with the
        queue, but for the learned utilisation of waiting slices."""
        now = self.clock()
        kept = self.kept
        if self.run_times.last:
            kept.running_predictions(self.run_times.limits(running, now, self.fingerprints))
        return self.policy_input(kept.queue, running, kept.outcomes, now, kept.predicted,
                                 [kept.queue.jobs[i] for i in kept.slices])


def _first_planned_end(inp: SchedulerInput, plan: Plan) -> float:
    """The earliest planned end of the running jobs the plan's reservations wait on."""
    after = {f.after for f in plan.forecasts.values()}
    return min((expected_end(j, inp.now, inp.run_time_of(j)) for j in inp.running
                if j.id in after), default=float("inf"))


def predict_waiting(run_times: RunTimes, fingerprints: Fingerprints, job: Job) -> float | None:
    """A waiting job's predicted run time (None: unknown), for the kept queue."""
    if not run_times.last:
        return None
    return run_times.predict(job, None, fingerprints(job)).seconds


def _example(request: tuple) -> Job:
    """A job of this shape (gq/policy/queue.py's `shape`), as placement sees it; an elastic
    range by its minimum."""
    gpus, mem, cpus, ram, pool, gpus_max, *avoid = request
    return Job(id=-1, user="", command=[], cwd="", gpus=gpus, mem=mem, cpus=cpus, ram=ram,
               pool=pool, gpus_max=gpus_max, avoid_gpus=avoid[0] if avoid else frozenset())
