"""One scheduling pass: which pending jobs start now, and why the others wait."""

from __future__ import annotations

import math
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
from gq.policy.placement import Capacity
from gq.policy.queue import shape
from gq.policy.quotas import QuotaBook
from gq.policy.types import Forecast, Host, Plan, SchedulerInput, Start


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
        # The host once every holding has ended, with the reservations on it still held: a
        # request that does not fit that will not get a reservation here (memoised per shape).
        self.ultimate = Capacity(host, [])
        self.never_fits: dict[tuple, bool] = {}

    def start(self, job: Job, cards: tuple[int, ...], end: float) -> None:
        self.capacity.take(job, cards)
        self.reserved.take(job, cards)
        insort(self.by_end, Holding(job, cards, end), key=lambda h: h.end)

    def could_ever_fit(self, job: Job) -> bool:
        request = shape(job)
        never = self.never_fits.get(request)
        if never is None:
            never = self.never_fits[request] = self.ultimate.fit(job)[0] is None
        return not never

    def set_aside(self, job: Job, cards: tuple[int, ...]) -> None:
        """Hold a reservation's resources in the look-ahead."""
        self.reserved.take(job, cards)
        self.ultimate.take(job, cards)
        self.never_fits.clear()


def schedule(inp: SchedulerInput, explain: bool = True) -> Plan:
    """Which jobs start now, and why each other job waits. `explain=False` (the replay) stops
    reading the queue once nothing further down could start and every reservation is placed:
    the starts are the same, but the jobs not read get no reason, score or shortfall."""
    plan = Plan()
    hosts = [_HostState(h, inp) for h in inp.hosts]
    quota = QuotaBook(inp.limits, inp.running, sum(len(h.cards) for h in inp.hosts))
    reservations: list[Reservation] = []
    most_cards = max(len(h.cards) for h in inp.hosts)
    # Requests that fit no host now, with what is short: a pass only takes resources, so the
    # answer holds for the rest of it, and a long queue repeats a few shapes many times.
    fits_nowhere: dict[tuple, tuple[str | None, Job]] = {}  # with a job of that shape
    # Requests that fit but would delay a reservation: (the shortest limit that did, the
    # reservation). A longer job of the same shape would delay it too, for the rest of the pass.
    blocked: dict[tuple, tuple[float, Reservation]] = {}
    fitting: dict[tuple, list] = {}  # shape -> [(host, cards) where it fits]: until a start
    # What the stop test looks at changes only with these; test again only after a change.
    changes, tested_at = 0, -1
    unsettled: list[tuple] = []  # the shape that kept the last stop test from passing
    could_run = lambda j: waiting_reason(j, inp, most_cards) is None  # noqa: E731
    for job in inp.pending.ordered(inp, plan.scores, could_run):
        if job.state is not JobState.PENDING or job.deps or job.gpus > most_cards:
            reason = waiting_reason(job, inp, most_cards)
            if reason is not None:
                plan.reasons[job.id] = reason
                continue
        over = quota.over(job)
        if over is not None:
            plan.reasons[job.id] = Reason.QUOTA_LIMIT
            plan.shortfalls[job.id] = over
            continue
        limit = inp.limit_of(job)
        end = inp.now + limit
        request = shape(job)
        if request in fits_nowhere:
            placed, blocking, short = None, None, fits_nowhere[request][0]
        elif (not explain and request in blocked and limit >= blocked[request][0]
              and len(reservations) >= inp.max_reservations):
            # Exact for the starts: with every reservation placed, this job can only wait.
            placed, blocking, short = None, blocked[request][1], None
        else:
            placed, blocking, short = _place(job, hosts, end, reservations, fitting)
            if placed is None and blocking is None:
                fits_nowhere[request] = (short, job)
                changes += 1
            elif blocking is not None and (request not in blocked or limit < blocked[request][0]):
                blocked[request] = (limit, blocking)
                changes += 1
        if placed is not None:
            state, cards = placed
            consume_slack(job, state.host.name, cards, end, reservations)
            state.start(job, cards, end)
            fitting.clear()
            quota.take(job)
            plan.starts.append(Start(job.id, cards, state.host.name))
            continue
        if blocking is not None:
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
                changes += 1  # a reservation, or one fewer shape that could take one
        if not explain and changes != tested_at:
            tested_at = changes
            if _nothing_else_can_start(inp, hosts, reservations, fits_nowhere, blocked,
                                       most_cards, unsettled):
                break
    return plan


def _nothing_else_can_start(inp: SchedulerInput, hosts: list[_HostState], reservations: list,
                            fits_nowhere: dict, blocked: dict, most_cards: int,
                            unsettled: list[tuple]) -> bool:
    """Whether no job left in the queue could start or take a reservation in this pass. For
    every shape waiting: it fits nowhere and cannot be reserved (every reservation is placed,
    or no host could take it even once all its jobs end), or it would delay a reservation even
    with the shortest limit any job of that shape declares. A pass only takes resources away,
    so these answers hold for the rest of it. `unsettled`: the shape that failed the last test,
    tried first (it usually fails again)."""
    full = len(reservations) >= inp.max_reservations
    for request in (*unsettled, *inp.pending.shapes):
        if request[0] > most_cards or request not in inp.pending.shapes:
            continue
        if request in fits_nowhere:
            example = fits_nowhere[request][1]
            if full or not any(h.could_ever_fit(example) for h in hosts):
                continue
        elif request in blocked and blocked[request][0] <= inp.pending.shortest_limit(request, inp):
            continue
        unsettled[:] = [request]
        return False
    return True


def _place(job: Job, hosts: list[_HostState], end: float, reservations: list[Reservation],
           fitting: dict[tuple, list]):
    """The first host (in order: earlier hosts fill up first) where the job fits now without
    delaying a reservation: ((host, cards), None, None); else (None, the reservation it would
    delay, None), or (None, None, what is short on the first host). `fitting`: where each
    shape fits, kept by the caller until the next start."""
    request = shape(job)
    where = fitting.get(request)
    if where is None:
        where, short = [], None
        for state in hosts:
            cards, missing = state.capacity.fit(job)
            if cards is None:
                short = short or missing
            else:
                where.append((state, cards))
        if not where:
            return None, None, short
        fitting[request] = where
    blocking = None
    for state, cards in where:
        delayed = delays_a_reservation(job, state.host.name, cards, end, reservations)
        if delayed is None:
            return (state, cards), None, None
        blocking = blocking or delayed
    return None, blocking, None


def _earliest_reservation(job: Job, hosts: list[_HostState], now: float) -> Reservation | None:
    """The host where the job could start soonest (the first such host on a tie); its
    resources are then set aside there."""
    best, where = None, None
    for state in hosts:
        if not state.could_ever_fit(job):
            continue
        r = reserve(job, state.host.name, state.reserved, state.by_end, now,
                    before=math.inf if best is None else best.start)
        if r is not None:
            best, where = r, state
    if best is not None:
        where.set_aside(job, best.cards)
    return best


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
