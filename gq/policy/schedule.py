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
from gq.policy.accounts import dominant_weight
from gq.policy.dependencies import DepStatus, dependency_status
from gq.policy.placement import Capacity
from gq.policy.queue import Dropped, lane, shape
from gq.policy.quotas import QuotaBook
from gq.policy.types import Forecast, Host, Plan, SchedulerInput, Start
from gq.policy.windows import Window, blocking, open_windows


class _HostState:
    """One host during a pass: its free capacity, what holds resources on it (soonest end
    first), and the look-ahead base for reservations (that, plus the reservations on it)."""

    def __init__(self, host: Host, inp: SchedulerInput):
        self.host = host
        running = inp.running_on(host)
        self.capacity = Capacity(host, running, inp.util, inp.share_util_max)
        self.by_end = sorted(
            (Holding(j, tuple(j.gpu_ids), expected_end(j, inp.now, inp.run_time_of(j)))
             for j in running),
            key=lambda h: h.end,
        )
        self.reserved = self.capacity.copy()
        # The host once every holding has ended, with the reservations on it still held: a
        # request that does not fit that will not get a reservation here (memoised per shape).
        self.ultimate = Capacity(host, [], inp.util, inp.share_util_max)
        self.never_fits: dict[tuple, bool] = {}

    def start(self, job: Job, cards: tuple[int, ...], end: float) -> None:
        self.capacity.take(job, cards)
        self.reserved.take(job, cards)
        insort(self.by_end, Holding(job, cards, end), key=lambda h: h.end)

    def could_ever_fit(self, job: Job, pool_cards: frozenset[int] | None) -> bool:
        """Whether the job could fit here once everything holding resources has ended (in its
        pool; admin reservations aside, which only end)."""
        request = shape(job)
        never = self.never_fits.get(request)
        if never is None:
            never = self.never_fits[request] = self.ultimate.fit(job, pool_cards)[0] is None
        return not never

    def set_aside(self, job: Job, cards: tuple[int, ...]) -> None:
        """Hold a reservation's resources in the look-ahead."""
        self.reserved.take(job, cards)
        self.ultimate.take(job, cards)
        self.never_fits.clear()


def schedule(inp: SchedulerInput, explain: bool = True,
             protect: tuple[int, int] | None = None) -> Plan:
    """Which jobs start now, and why each other job waits. `explain=False` (the replay, and
    the daemon's passes between two explaining ones) reads no further jobs of a shape once no
    job of that shape could start or take a reservation, and stops reading the queue once
    that holds for every shape: the starts and reservations are the same, but the jobs not
    read get no reason, score or shortfall. `protect` (rank, n): read on, all the same, until
    n jobs of a tier ranked above `rank` were read that wait for resources (what preemption
    serves: gq/policy/decide.py)."""
    plan = Plan()
    hosts = [_HostState(h, inp) for h in inp.hosts]
    first = inp.hosts[0]
    quota = QuotaBook(inp.limits, inp.running, sum(len(h.cards) for h in inp.hosts),
                      inp.accounts, lambda j, n: dominant_weight(j, first, range(n)))
    windows = open_windows(inp.windows, inp.now)
    reservations: list[Reservation] = []
    most_cards = max(len(h.cards) for h in inp.hosts)
    # The caches below are keyed by what decides a placement: the request's shape (with its
    # pool and elastic range), the admin reservations that keep cards from the job, and for an
    # elastic job the most cards its limits let it take.
    # Requests that fit no host now, with what is short: a pass only takes resources, so the
    # answer holds for the rest of it, and a long queue repeats a few shapes many times.
    fits_nowhere: dict[tuple, tuple[str | None, Job]] = {}  # with a job of that shape
    # Requests that fit but would delay a reservation: (the shortest limit that did, the
    # reservation). A longer job of the same shape would delay it too, for the rest of the pass.
    blocked: dict[tuple, tuple[float, Reservation]] = {}
    fitting: dict[tuple, list] = {}  # (key, cards) -> [(host, cards) where it fits]: until a start
    reading = None if explain else _Reading(inp, hosts, reservations, fits_nowhere, blocked,
                                            most_cards, bool(windows), protect)
    could_run = lambda j: waiting_reason(j, inp, most_cards) is None  # noqa: E731
    dropped = None if reading is None else reading.dropped
    for job in inp.pending.ordered(inp, plan.scores, could_run, dropped):
        if reading is not None:
            reading.check_protection(job)
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
        # The run time planned (EASY++: the smaller of --time and the prediction) places the
        # job's end for backfill; admin reservations keep their cards from it by its --time.
        limit = inp.run_time_of(job)
        end = inp.now + limit
        # Keys: the shape alone in the common case (no window keeps a card from the job,
        # a fixed count); with the windows that do, and an elastic job's cap, added.
        nowhere_key = shape(job)
        if job.id in inp.util and inp.share_util_max is not None:
            # Where a slice may share a card depends on its learned utilisation too. (A replay
            # has none: its shapes stay plain, which the stop test below relies on.)
            nowhere_key = (nowhere_key, inp.util[job.id])
        kept_by = blocking(windows, job, inp.now, inp.limit_of(job)) if windows else ()
        if kept_by:
            nowhere_key = (nowhere_key, tuple(w.id for w in kept_by))
        request = (nowhere_key, quota.most(job)) if job.gpus_max else nowhere_key
        if nowhere_key in fits_nowhere:
            placed, blocking_r, short = None, None, fits_nowhere[nowhere_key][0]
        elif (not explain and request in blocked and limit >= blocked[request][0]
              and len(reservations) >= inp.max_reservations):
            # Exact for the starts: with every reservation placed, this job can only wait.
            placed, blocking_r, short = None, blocked[request][1], None
        else:
            placed, blocking_r, short = _place(job, hosts, end, reservations, fitting, request,
                                               inp.pools.allowed(job), kept_by)
            if placed is None and blocking_r is None:
                fits_nowhere[nowhere_key] = (short, job)
                if reading is not None:
                    reading.test(shape(job))
            elif blocking_r is not None and (request not in blocked
                                             or limit < blocked[request][0]):
                blocked[request] = (limit, blocking_r)
                if reading is not None:
                    reading.test(shape(job))
        if placed is not None:
            state, cards = placed
            consume_slack(job, state.host.name, cards, end, reservations)
            state.start(job, cards, end)
            fitting.clear()
            # Where a job fits first may change with a start: one that would have delayed
            # a reservation may now fit elsewhere, or nowhere and take a reservation.
            blocked.clear()
            if reading is not None:
                reading.revive()
            quota.take(job, len(cards))
            plan.starts.append(Start(job.id, cards, state.host.name))
            continue
        if blocking_r is not None:
            plan.reasons[job.id] = Reason.PRIORITY
            plan.shortfalls[job.id] = (
                f"a slot that stays free until job {blocking_r.job.id} starts, which it would "
                f"delay (a shorter --time lets it fit in before: gq update {job.id} --time DUR)"
            )
        else:
            plan.reasons[job.id] = Reason.RESOURCES
            plan.shortfalls[job.id] = short
            if kept_by:  # also when not explaining: the daemon's quick passes say it too
                plan.shortfalls[job.id] = _kept_note(job, hosts, inp.pools.allowed(job),
                                                     kept_by, short, inp.now)
            if reading is not None:
                reading.waits_for_resources(job)
            if len(reservations) < inp.max_reservations:
                mine = tuple(w for w in windows if job.user not in w.users)
                r = _earliest_reservation(job, hosts, inp.now, inp.pools.allowed(job), mine,
                                          inp.limit_of(job))
                if r is not None:
                    reservations.append(r)
                    plan.forecasts[job.id] = Forecast(r.start, r.cards, r.host, r.after)
                if reading is not None:  # a reservation, or one fewer shape that could take one
                    reading.test_all()
        if reading is not None and reading.done():
            break
    return plan


class _Reading:
    """What a pass that does not explain may leave unread. A shape is settled once no job of
    it further down could start or take a reservation in this pass: it fits nowhere and
    cannot be reserved (every reservation is placed, or no host could take it even once all
    its jobs end), or it would delay a reservation even with the shortest limit any job of
    that shape declares. A pass only takes resources away, so a settled shape stays settled
    (its jobs further down are not read: `dropped`; once every shape waiting is settled the
    pass stops), with one exception: a job that would delay a reservation on the cards it
    fits first may, once another job has started, fit first on other cards that delay
    nothing, or fit nowhere and take a reservation of its own. So a start revives the shapes
    settled that way.

    The answers used are those of a job of the shape that no admin reservation kept from any
    card and whose placement no learned utilisation narrowed: the others may use fewer cards,
    so they fit nowhere if it does. Whether one would delay a reservation is not so bounded
    (fewer cards may mean other cards), so while a window is open, and for elastic ranges,
    only "fits nowhere" settles a shape.

    Settledness changes only when a shape is found to fit nowhere or to delay a reservation
    (that shape is tested again), when a reservation is placed or refused (all are), and at
    a start (`revive`)."""

    def __init__(self, inp: SchedulerInput, hosts: list[_HostState], reservations: list,
                 fits_nowhere: dict, blocked: dict, most_cards: int, windows_open: bool,
                 protect: tuple[int, int] | None):
        self.inp, self.hosts, self.reservations = inp, hosts, reservations
        self.fits_nowhere, self.blocked = fits_nowhere, blocked
        self.windows_open = windows_open
        # Jobs asking for more cards than any host has only get their reason.
        self.live = {s for s in inp.pending.shapes if s[0] <= most_cards}
        self.settled: set[tuple] = set()
        self.by_delay: set[tuple] = set()  # settled because they would delay a reservation
        self.dropped = Dropped()
        self.protect_rank, self.protect_left = protect or (-1, 0)

    def check_protection(self, job: Job) -> None:
        """Protection ends once enough jobs were read, or at the first lane ranked at or
        below `rank` (no later job can then be of a tier above it)."""
        if self.protect_left > 0 and lane(job) >= self.protect_rank:
            self._unprotect()

    def waits_for_resources(self, job: Job) -> None:
        if self.protect_left > 0 and job.priority.rank < self.protect_rank:
            self.protect_left -= 1
            if self.protect_left == 0:
                self._unprotect()

    def _unprotect(self) -> None:
        self.protect_left = 0
        self.dropped |= self.settled

    def test(self, request: tuple) -> None:
        if request in self.live and self._is_settled(request):
            self._settle([request])

    def test_all(self) -> None:
        self._settle([r for r in self.live if self._is_settled(r)])

    def _settle(self, requests: list[tuple]) -> None:
        self.live.difference_update(requests)
        self.settled.update(requests)
        self.by_delay.update(r for r in requests if r not in self.fits_nowhere)
        if not self.protect_left:
            self.dropped.update(requests)

    def revive(self) -> None:
        """After a start: the shapes settled because they would delay a reservation are read
        again (their jobs may now start elsewhere, or take a reservation)."""
        self.live |= self.by_delay
        self.settled -= self.by_delay
        self.dropped.revive(self.by_delay)
        self.by_delay.clear()

    def done(self) -> bool:
        return not self.live and not self.protect_left

    def _is_settled(self, request: tuple) -> bool:
        inp = self.inp
        full = len(self.reservations) >= inp.max_reservations
        settled = self.fits_nowhere.get(request)
        if settled is not None:
            if full:
                return True
            example = settled[1]
            pool = inp.pools.allowed(example)
            return not any(h.could_ever_fit(example, pool) for h in self.hosts)
        if not self.windows_open and not request[5]:
            seen = self.blocked.get(request)
            return seen is not None and seen[0] <= inp.pending.shortest_limit(request, inp)
        return False


def _usable(state: _HostState, pool: frozenset[int] | None, kept_by: tuple[Window, ...]
            ) -> frozenset[int] | None:
    """The cards of a host a job may use: its pool's, less those admin reservations keep
    from it; None: any."""
    if not kept_by:
        return pool
    kept = frozenset().union(*(w.cards for w in kept_by if w.on(state.host.name)))
    if not kept:
        return pool
    return (frozenset(state.capacity.cards) if pool is None else pool) - kept


def allowed_cards(inp: SchedulerInput, job: Job, host: Host) -> frozenset[int] | None:
    """The cards of `host` the job may use now: its pool's, less those admin reservations
    keep from it (for preemption, which frees cards only where the job could then start)."""
    pool = inp.pools.allowed(job)
    if not inp.windows:
        return pool
    kept_by = blocking(open_windows(inp.windows, inp.now), job, inp.now, inp.limit_of(job))
    kept = frozenset().union(*(w.cards for w in kept_by if w.on(host.name)))
    if not kept:
        return pool
    return (frozenset(c.index for c in host.cards) if pool is None else pool) - kept


def _kept_note(job: Job, hosts: list[_HostState], pool: frozenset[int] | None,
               kept_by: tuple[Window, ...], short: str | None, now: float) -> str | None:
    """What is short, or, when the job would fit but for admin reservations, the ones that
    keep it: those on cards of its pool. Advice to shorten --time only while none is open
    (an open window keeps its cards whatever the job's limit)."""
    if all(state.capacity.fit(job, pool)[0] is None for state in hosts):
        return short
    keeping = [w for w in kept_by if any(w.on(state.host.name) and (
        pool is None or w.cards & pool) for state in hosts)]
    if not keeping:
        return short
    held = " and ".join(f"for {w.holder or 'others'} (reservation {w.id})" for w in keeping)
    if any(w.start <= now for w in keeping):
        return (f"cards reserved by an admin {held}, open now: no other job starts on them "
                "until it ends")
    return (f"cards reserved by an admin {held}, which it would still hold when the "
            "reservation begins: a shorter --time may let it finish before")


def _place(job: Job, hosts: list[_HostState], end: float, reservations: list[Reservation],
           fitting: dict[tuple, list], request: tuple, pool: frozenset[int] | None,
           kept_by: tuple[Window, ...]):
    """The first host (in order: earlier hosts fill up first) where the job fits now without
    delaying a reservation: ((host, cards), None, None); else (None, the reservation it would
    delay, None), or (None, None, what is short on the first host). An elastic job tries the
    most cards its range and limits allow first, then fewer, down to its minimum. `fitting`:
    where each request fits, kept by the caller until the next start."""
    counts = range(request[1], job.gpus - 1, -1) if job.gpus_max else (None,)
    blocking_r, short, fitted = None, None, False
    if job.pinned is not None:  # a frozen job is thawed on its own host
        hosts = [state for state in hosts if state.host.name == job.pinned]
    for n in counts:
        key = request if n is None else (request, n)
        where = fitting.get(key)
        if where is None:
            where, short = [], None  # what the smallest count lacks is what is reported
            for state in hosts:
                cards, missing = state.capacity.fit(job, _usable(state, pool, kept_by), n)
                if cards is None:
                    short = short or missing
                else:
                    where.append((state, cards))
            fitting[key] = where
        for state, cards in where:
            fitted = True
            delayed = delays_a_reservation(job, state.host.name, cards, end, reservations)
            if delayed is None:
                return (state, cards), None, None
            blocking_r = blocking_r or delayed
    if not fitted:
        return None, None, short
    return None, blocking_r, None


def _earliest_reservation(job: Job, hosts: list[_HostState], now: float,
                          pool: frozenset[int] | None, windows: tuple[Window, ...],
                          limit: float) -> Reservation | None:
    """The host where the job could start soonest (the first such host on a tie); its
    resources are then set aside there. `windows`: the open admin reservations it does not
    hold. An elastic job is reserved by its minimum."""
    best, where = None, None
    for state in hosts:
        if job.pinned is not None and state.host.name != job.pinned:
            continue
        if not state.could_ever_fit(job, pool):
            continue
        r = reserve(job, state.host.name, state.reserved, state.by_end, now,
                    before=math.inf if best is None else best.start, allowed=pool,
                    windows=tuple(w for w in windows if w.on(state.host.name)), limit=limit)
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
