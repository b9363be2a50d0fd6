"""One scheduling pass: which pending jobs start now, and why the others wait."""

from __future__ import annotations

from bisect import insort

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
from gq.policy.types import Forecast, Host, Plan, SchedulerInput, Start


def eligible_since(job: Job, inp: SchedulerInput) -> float:
    """When the job could first have run: its age does not grow while it waits on others."""
    if not job.deps:
        return job.submitted_at
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


class _HostState:
    """One host during a pass: its free capacity, what holds resources on it (soonest end
    first), and the look-ahead base for reservations (that, plus the reservations on it)."""

    def __init__(self, host: Host, inp: SchedulerInput):
        self.host = host
        running = inp.running_on(host)
        self.capacity = Capacity(host, running)
        self.by_end = sorted(
            (Holding(j, tuple(j.gpu_ids), expected_end(j, inp.now, inp.limit_of(j)))
             for j in running),
            key=lambda h: h.end,
        )
        self.reserved = self.capacity.copy()

    def start(self, job: Job, cards: tuple[int, ...], end: float) -> None:
        self.capacity.take(job, cards)
        self.reserved.take(job, cards)
        insort(self.by_end, Holding(job, cards, end), key=lambda h: h.end)


def schedule(inp: SchedulerInput) -> Plan:
    plan = Plan(scores=scores(inp))
    hosts = [_HostState(h, inp) for h in inp.hosts]
    quota = QuotaBook(inp.limits, inp.running, sum(len(h.cards) for h in inp.hosts))
    reservations: list[Reservation] = []
    most_cards = max(len(h.cards) for h in inp.hosts)
    # Requests that fit no host now, with what is short: a pass only takes resources, so the
    # answer holds for the rest of it, and a long queue repeats a few shapes many times.
    fits_nowhere: dict[tuple, str | None] = {}
    for job in queue_order(inp, plan.scores):
        reason = waiting_reason(job, inp, most_cards)
        if reason is not None:
            plan.reasons[job.id] = reason
            continue
        over = quota.over(job)
        if over is not None:
            plan.reasons[job.id] = Reason.QUOTA_LIMIT
            plan.shortfalls[job.id] = over
            continue
        end = inp.now + inp.limit_of(job)
        shape = (job.gpus, job.mem, job.cpus, job.ram)
        if shape in fits_nowhere:
            placed, blocking, short = None, None, fits_nowhere[shape]
        else:
            placed, blocking, short = _place(job, hosts, end, reservations)
            if placed is None and blocking is None:
                fits_nowhere[shape] = short
        if placed is not None:
            state, cards = placed
            consume_slack(job, state.host.name, cards, end, reservations)
            state.start(job, cards, end)
            quota.take(job)
            plan.starts.append(Start(job.id, cards, state.host.name))
        elif blocking is not None:
            plan.reasons[job.id] = Reason.PRIORITY
            plan.shortfalls[job.id] = (
                f"a slot that stays free until job {blocking.job.id} starts, which it would "
                "delay (give it a shorter --time to fit in before)"
            )
        else:
            plan.reasons[job.id] = Reason.RESOURCES
            plan.shortfalls[job.id] = short
            if len(reservations) < inp.max_reservations:
                r = _earliest_reservation(job, hosts, inp.now)
                if r is not None:
                    reservations.append(r)
                    plan.forecasts[job.id] = Forecast(r.start, r.cards, r.host)
    return plan


def _place(job: Job, hosts: list[_HostState], end: float, reservations: list[Reservation]):
    """The first host (in order: earlier hosts fill up first) where the job fits now without
    delaying a reservation: ((host, cards), None, None); else (None, the reservation it would
    delay, None), or (None, None, what is short on the first host)."""
    blocking, short = None, None
    for state in hosts:
        cards, missing = state.capacity.fit(job)
        if cards is None:
            short = short or missing
            continue
        delayed = delays_a_reservation(job, state.host.name, cards, end, reservations)
        if delayed is None:
            return (state, cards), None, None
        blocking = blocking or delayed
    return None, blocking, short


def _earliest_reservation(job: Job, hosts: list[_HostState], now: float) -> Reservation | None:
    """The host where the job could start soonest; its resources are then set aside there."""
    found = [(reserve(job, s.host.name, s.reserved, s.by_end, now), s) for s in hosts]
    found = [(r, s) for r, s in found if r is not None]
    if not found:
        return None
    r, state = min(found, key=lambda pair: pair[0].start)
    state.reserved.take(job, r.cards)
    return r


def waiting_reason(job: Job, inp: SchedulerInput, most_cards: int) -> str | None:
    """Why the job cannot be considered at all, or None. `most_cards`: the biggest host's."""
    if job.state == JobState.HELD:
        return Reason.HELD
    deps = dependency_status(job, inp.outcomes)
    if deps is DepStatus.NEVER:
        return Reason.DEPENDENCY_NEVER_SATISFIED
    if deps is DepStatus.WAITING:
        return Reason.DEPENDENCY
    if job.gpus > most_cards:
        return Reason.NO_GPUS if most_cards == 0 else Reason.RESOURCES
    return None
