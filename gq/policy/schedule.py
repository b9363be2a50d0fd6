"""One scheduling pass: which pending jobs start now, and why the others wait."""

from __future__ import annotations

from gq.model import Job, JobState, Reason
from gq.policy.backfill import (
    Holding,
    Reservation,
    consume_slack,
    delays_a_reservation,
    expected_end,
    reserve,
)
from gq.policy.dependencies import DepStatus, dependency_status
from gq.policy.fairshare import Score, fairshare_factors, score
from gq.policy.placement import Capacity
from gq.policy.quotas import QuotaBook
from gq.policy.types import Forecast, Plan, SchedulerInput, Start


def eligible_since(job: Job, inp: SchedulerInput) -> float:
    """When the job could first have run: its age does not grow while it waits on others."""
    ends = [inp.outcomes[i].ended_at for ids in job.deps.values() for i in ids
            if i in inp.outcomes and inp.outcomes[i].ended_at is not None]
    return max([job.submitted_at, *ends])


def scores(inp: SchedulerInput) -> dict[int, Score]:
    factors = fairshare_factors(inp.usage, {j.user for j in inp.pending})
    return {
        j.id: score(j, eligible_since(j, inp), factors, inp.usage, inp.now, inp.fairshare)
        for j in inp.pending
    }


def queue_order(inp: SchedulerInput, by_score: dict[int, Score]) -> list[Job]:
    """Tier first; within a tier, fair share and age; then submit time."""
    return sorted(
        inp.pending,
        key=lambda j: (j.priority.rank, -by_score[j.id].total, j.submitted_at, j.id),
    )


def schedule(inp: SchedulerInput) -> Plan:
    plan = Plan(scores=scores(inp))
    capacity = Capacity(inp.host, inp.running)
    quota = QuotaBook(inp.limits, inp.running, len(inp.host.cards))
    holding = [
        Holding(j, tuple(j.gpu_ids), expected_end(j, inp.now, inp.default_limit))
        for j in inp.running
    ]
    reservations: list[Reservation] = []
    for job in queue_order(inp, plan.scores):
        reason = _waiting_reason(job, inp)
        if reason is not None:
            plan.reasons[job.id] = reason
            continue
        over = quota.over(job)
        if over is not None:
            plan.reasons[job.id] = Reason.QUOTA_LIMIT
            plan.shortfalls[job.id] = over
            continue
        cards, short = capacity.fit(job)
        if cards is None:
            plan.reasons[job.id] = Reason.RESOURCES
            plan.shortfalls[job.id] = short
            if len(reservations) < inp.max_reservations:
                r = reserve(job, inp.host, holding, reservations, inp.now)
                if r is not None:
                    reservations.append(r)
                    plan.forecasts[job.id] = Forecast(r.start, r.cards)
            continue
        end = inp.now + (job.time_limit or inp.default_limit)
        blocking = delays_a_reservation(job, cards, end, reservations)
        if blocking is not None:
            plan.reasons[job.id] = Reason.PRIORITY
            plan.shortfalls[job.id] = (
                f"a slot that stays free until job {blocking.job.id} starts, which it would "
                "delay (give it a shorter --time to fit in before)"
            )
            continue
        consume_slack(job, cards, end, reservations)
        capacity.take(job, cards)
        quota.take(job)
        holding.append(Holding(job, cards, end))
        plan.starts.append(Start(job.id, cards))
    return plan


def _waiting_reason(job: Job, inp: SchedulerInput) -> str | None:
    """Why the job cannot be considered at all, or None."""
    if job.state == JobState.HELD:
        return Reason.HELD
    deps = dependency_status(job, inp.outcomes)
    if deps is DepStatus.NEVER:
        return Reason.DEPENDENCY_NEVER_SATISFIED
    if deps is DepStatus.WAITING:
        return Reason.DEPENDENCY
    if job.gpus > len(inp.host.cards):
        return Reason.NO_GPUS if not inp.host.cards else Reason.RESOURCES
    return None
