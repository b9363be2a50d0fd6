"""Reservations for the first jobs that cannot start, and the check that backfill delays none.

A job that cannot start now is given a reservation: the earliest time at which it would fit if
every job holding resources ended when its time limit says (a job without one is assumed to
run for its tier's default limit), after the reservations of the jobs ahead of it. A job further
down the queue may start now only if it ends before each reservation starts, or leaves enough
of what that reservation needs (its slack). This is EASY backfill with several reservations.

An elastic job (--gpus 2-4) is reserved by its minimum; admin reservations (windows.py) keep
their cards from the reservations of everyone but their holders, as they keep them from starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gq.model import Job, JobState
from gq.policy.placement import Capacity
from gq.policy.windows import Window, kept_cards

# A job past its expected end is assumed to end this much later: it is overdue, not gone.
OVERDUE_GRACE = 60.0
STOPPING_GRACE = 60.0  # [preemption] grace's default: a job stopped without one of its own


@dataclass(frozen=True)
class Holding:
    """A job that holds resources (running, or started by this pass) and when it should end."""

    job: Job
    gpu_ids: tuple[int, ...]
    end: float


@dataclass
class Reservation:
    job: Job
    host: str
    start: float
    cards: tuple[int, ...]
    # What is left over at `start` once the job has what it needs: a backfilled job that runs
    # past `start` may use at most this. card_slack is per reserved card, in bytes; -1 means
    # the job takes the card whole.
    cpu_slack: int
    ram_slack: int | None
    card_slack: dict[int, int] = field(default_factory=dict)
    after: int | None = None  # the job whose expected end `start` is (None: none)


def expected_end(job: Job, now: float, limit: float) -> float:
    """When a job holding resources should end, given its (declared or assumed) limit. A job
    being stopped (preempted: signalled, or being frozen) ends within its grace at the latest:
    what it frees is then reserved for the job it is stopped for, not backfilled meanwhile."""
    end = (job.started_at if job.started_at is not None else now) + limit
    if job.state is JobState.PREEMPTING:
        end = min(end, now + (job.grace if job.grace is not None else STOPPING_GRACE))
    return max(end, now + OVERDUE_GRACE) if end <= now else end


def reserve(
    job: Job, host: str, base: Capacity, by_end: list[Holding], now: float,
    before: float = math.inf, allowed: frozenset[int] | None = None,
    windows: tuple[Window, ...] = (), limit: float = 0.0,
) -> Reservation | None:
    """The earliest reservation for `job` on `host` that starts before `before`, or None if
    there is none (it would not fit even once every job holding resources there has ended:
    memory held outside gq, say).

    `base`: the host with everything that holds resources on it taken, and, pessimistic and
    simple, the earlier reservations on it too, as if they held theirs from now on. `by_end`:
    what holds resources, soonest end first. `base` is released into in place, one holding at a
    time, and restored before returning. `allowed`: the cards the job may use (its pool; None:
    any). `windows`: admin reservations that keep their cards from this job while it would run
    (`limit` seconds from its start) into them; the end of each is a time it may start too."""
    cards_for = _cards_usable_by(job, base, base.cards, allowed)
    window_ends = sorted(w.end for w in windows if w.end > now)
    released = 0

    def attempt(start: float) -> Reservation | None:
        usable = allowed
        kept = kept_cards(windows, host, start, start + limit) if windows else frozenset()
        if kept:
            usable = (frozenset(base.cards) if usable is None else usable) - kept
        cards, _short = base.fit(job, usable)
        return None if cards is None else _with_slack(job, host, start, cards, base)

    try:
        for h in by_end:
            start = max(h.end, now)
            while window_ends and window_ends[0] < start:  # a window ends first
                at = window_ends.pop(0)
                if at >= before:
                    return None
                if len(cards_for) >= job.gpus and (r := attempt(at)) is not None:
                    return r
            if start >= before:
                return None
            base.release(h.job, h.gpu_ids)
            released += 1
            cards_for |= _cards_usable_by(job, base, h.gpu_ids, allowed)
            # Cheap necessary conditions first: fit() sorts and weighs islands.
            if len(cards_for) < job.gpus or job.cpus > base.cpus_free:
                continue
            if (r := attempt(start)) is not None:
                r.after = h.job.id if h.end > now else None
                return r
        for at in window_ends:  # every holding has ended: only windows keep cards now
            if at >= before:
                return None
            if len(cards_for) >= job.gpus and (r := attempt(at)) is not None:
                return r
        return None
    finally:
        for h in reversed(by_end[:released]):
            base.take(h.job, h.gpu_ids)


def _cards_usable_by(job: Job, cap: Capacity, indices, allowed: frozenset[int] | None
                     ) -> set[int]:
    """Which of `indices` could take the job as the cards stand (what find_cards accepts)."""
    out = set()
    for i in indices:
        c = cap.cards.get(i)
        if c is None or (allowed is not None and i not in allowed) or i in job.avoid_gpus:
            continue
        if c.usable and not c.jobs and c.external == 0 if job.mem is None else c.free >= job.mem:
            out.add(i)
    return out


def _with_slack(
    job: Job, host: str, start: float, cards: tuple[int, ...], cap: Capacity
) -> Reservation:
    slack = {}
    for i in cards:
        slack[i] = -1 if job.mem is None else cap.cards[i].free - job.mem
    ram_slack = None if cap.ram_free is None else cap.ram_free - (job.ram or 0)
    return Reservation(job, host, start, cards, cap.cpus_free - job.cpus, ram_slack, slack)


def delays_a_reservation(
    job: Job, host: str, cards: tuple[int, ...], end: float, reservations: list[Reservation]
) -> Reservation | None:
    """The first reservation that starting `job` now on `cards` of `host`, until `end`, would
    delay."""
    for r in reservations:
        if end <= r.start or r.host != host:
            continue
        if job.cpus > r.cpu_slack:
            return r
        if r.ram_slack is not None and job.ram and job.ram > r.ram_slack:
            return r
        for i in cards:
            if i in r.card_slack and (job.mem is None or job.mem > r.card_slack[i]):
                return r
    return None


def consume_slack(
    job: Job, host: str, cards: tuple[int, ...], end: float, reservations: list[Reservation]
) -> None:
    """Record that a backfilled job uses part of the slack of the reservations it overlaps."""
    for r in reservations:
        if end <= r.start or r.host != host:
            continue
        r.cpu_slack -= job.cpus
        if r.ram_slack is not None and job.ram:
            r.ram_slack -= job.ram
        for i in cards:
            if i in r.card_slack:
                r.card_slack[i] -= job.mem or 0
