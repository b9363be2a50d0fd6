"""One scheduling pass: which pending jobs start now, and why the others wait."""

from __future__ import annotations

from gq.model import Job, JobState, Reason
from gq.policy.dependencies import DepStatus, dependency_status
from gq.policy.placement import Capacity
from gq.policy.types import Plan, SchedulerInput, Start


def queue_order(job: Job) -> tuple:
    return (job.priority.rank, job.submitted_at, job.id)


def schedule(inp: SchedulerInput) -> Plan:
    plan = Plan()
    capacity = Capacity(inp.host, inp.running)
    for job in sorted(inp.pending, key=queue_order):
        if job.state == JobState.HELD:
            plan.reasons[job.id] = Reason.HELD
            continue
        deps = dependency_status(job, inp.outcomes)
        if deps is DepStatus.NEVER:
            plan.reasons[job.id] = Reason.DEPENDENCY_NEVER_SATISFIED
            continue
        if deps is DepStatus.WAITING:
            plan.reasons[job.id] = Reason.DEPENDENCY
            continue
        if job.gpus > len(inp.host.cards):
            plan.reasons[job.id] = Reason.NO_GPUS if not inp.host.cards else Reason.RESOURCES
            continue
        cards, short = capacity.fit(job)
        if cards is None:
            plan.reasons[job.id] = Reason.RESOURCES
            plan.shortfalls[job.id] = short
            continue
        capacity.take(job, cards)
        plan.starts.append(Start(job.id, cards))
    return plan
