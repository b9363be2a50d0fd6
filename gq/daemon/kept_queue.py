"""The daemon's queue as the policy reads it, kept between passes: it follows the store's changes
(Store.take_changes) instead of being rebuilt from every waiting job at each pass.

What a pass reads is the waiting jobs that could start: not held ones (they keep the reason
`Held`), not those waiting to be sent to a peer (`PeerDown`, gq/peers/forwarding.py), and not
those whose dependencies have not all ended (`Dependency`) or never can be met
(`DependencyNeverSatisfied`). Those are set aside with the reason the policy would give them,
and cost a pass nothing: a dependency's end (or its requeue) is a change of that job, which
sends its dependents through the same test again. The policy would only say the same of them
(gq/policy/schedule.py's `waiting_reason` comes first, and decides nothing else for them).

A waiting job's predicted run time (`predicted`, from the daemon's learned run times) is taken
when it joins the queue and again when usage is recalculated, and held in between, as its
score is: the kept order then stays exactly the order a fresh sort of the same input gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from gq.model import Job, JobState, Reason
from gq.policy import Outcome, PendingQueue
from gq.policy.dependencies import DepStatus, dependency_status

ASIDE_REASONS = {DepStatus.WAITING: Reason.DEPENDENCY,
                 DepStatus.NEVER: Reason.DEPENDENCY_NEVER_SATISFIED}


class KeptQueue:
    def __init__(self, predict: Callable[[Job], float | None]):
        self.predict = predict  # a waiting job's predicted run time, when it has one
        self.queue = PendingQueue()
        self.aside: dict[int, str] = {}  # job id -> its reason (dependencies)
        self.forwarded: set[int] = set()  # waiting to be sent to a peer
        # Each dependency named by a waiting job: who names it, and how it ended (None: not
        # yet); the ends are the outcomes the policy dates a job's age from.
        self.dependents: dict[int, set[int]] = {}
        self.deps_of: dict[int, set[int]] = {}  # the other way round
        self.ends: dict[int, Outcome | None] = {}
        self.outcomes: dict[int, Outcome] = {}  # the ended ones: SchedulerInput.outcomes
        self.avoiding: dict[int, frozenset[int]] = {}  # job id -> cards kept from it
        self.predicted: dict[int, float] = {}  # waiting jobs', then this pass's running ones
        self._running_predicted: list[int] = []
        self.slices: set[int] = set()  # jobs in the queue with --mem (learned utilisation)

    def __len__(self) -> int:
        return len(self.queue)

    def sync(self, store, kept_off: Mapping[int, tuple[int, frozenset[int]]]) -> dict[int, str]:
        """Apply the store's changes since the last sync, and the cards kept from requeued
        victims (Collateral.kept_off); returns the reasons of jobs set aside that changed."""
        changed = store.take_changes()
        reasons: dict[int, str] = {}
        before = dict(self.aside)  # a job placed again with the same reason is not a change
        if changed is None:  # everything: start again from the store's queue
            before = {}
            self.__init__(self.predict)
            changed = {j.id for j in store.queue()}
        kept = {victim: cards for victim, (_killer, cards) in kept_off.items()}
        changed |= {i for i in kept.keys() | self.avoiding.keys()
                    if kept.get(i) != self.avoiding.get(i)}
        ended = self._ends_of(store, [i for i in changed if i in self.dependents])
        for dep_id, outcome in ended.items():
            if outcome != self.ends[dep_id]:
                self.ends[dep_id] = outcome
                if outcome is None:
                    self.outcomes.pop(dep_id, None)
                else:
                    self.outcomes[dep_id] = outcome
                changed |= self.dependents[dep_id]
        jobs = []
        for job_id in changed:
            self._forget(job_id)
            job = store.waiting_job(job_id)
            if job is not None and job.state is not JobState.HELD:
                jobs.append(job)
        new_deps = {i for j in jobs for ids in j.deps.values() for i in ids} - self.ends.keys()
        for dep_id, outcome in self._ends_of(store, list(new_deps)).items():
            self.ends[dep_id] = outcome
            if outcome is not None:
                self.outcomes[dep_id] = outcome
        for job in jobs:
            self._place(job, kept, reasons)
        return {i: r for i, r in reasons.items() if before.get(i) != r}

    def _place(self, job: Job, kept: dict[int, frozenset[int]], reasons: dict[int, str]) -> None:
        if job.forward is not None:
            self.forwarded.add(job.id)
            reasons[job.id] = Reason.PEER_DOWN
            return
        if job.deps:
            self.deps_of[job.id] = {i for ids in job.deps.values() for i in ids}
            for dep_id in self.deps_of[job.id]:
                self.dependents.setdefault(dep_id, set()).add(job.id)
            status = dependency_status(job, self.outcomes)
            if status is not DepStatus.MET:
                self.aside[job.id] = reasons[job.id] = ASIDE_REASONS[status]
                return
        if job.id in kept:
            job = replace(job, avoid_gpus=kept[job.id])  # a copy: the store's is not changed
            self.avoiding[job.id] = kept[job.id]
        seconds = self.predict(job)
        if seconds is not None:
            self.predicted[job.id] = seconds
        if job.mem is not None:
            self.slices.add(job.id)
        self.queue.add(job)

    def _forget(self, job_id: int) -> None:
        if job_id in self.queue.jobs:
            self.queue.remove(job_id)
            self.predicted.pop(job_id, None)
            self.slices.discard(job_id)
            self.avoiding.pop(job_id, None)
        self.aside.pop(job_id, None)
        self.forwarded.discard(job_id)
        for dep_id in self.deps_of.pop(job_id, ()):
            names = self.dependents[dep_id]
            names.discard(job_id)
            if not names:
                del self.dependents[dep_id], self.ends[dep_id]
                self.outcomes.pop(dep_id, None)

    def _ends_of(self, store, ids: list[int]) -> dict[int, Outcome | None]:
        """How each of these jobs ended, or that it started (Outcome.of); None for those that
        have done neither (or are unknown)."""
        if not ids:
            return {}
        found = store.light_jobs(ids)
        return {i: (Outcome.of(j) if (j := found.get(i)) is not None else None)
                for i in ids}

    def running_predictions(self, predicted: dict[int, float]) -> None:
        """This pass's predictions for the running jobs, beside the waiting jobs' kept ones."""
        for job_id in self._running_predicted:
            if job_id not in self.queue.jobs:
                self.predicted.pop(job_id, None)
        self.predicted.update(predicted)
        self._running_predicted = list(predicted)

    def repredict(self) -> None:
        """Usage was recalculated: take every waiting job's prediction again (the queue is
        sorted again anyway, with the new usage)."""
        for job in self.queue:
            seconds = self.predict(job)
            if seconds is None:
                self.predicted.pop(job.id, None)
            else:
                self.predicted[job.id] = seconds

