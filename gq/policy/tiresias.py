"""Tiresias' 2D-LAS (Gu et al., NSDI'19) as a baseline: least attained service first, in queues.

A job's attained service is what it has had so far in two dimensions: cards x seconds of run
(a slice counts as its share of the card, gq/policy/cardshare.py), over all its runs. Jobs fall
into a few discrete queues by that service (`QUEUE_LIMITS`, card-seconds: below the first limit
queue 0, and so on); within a queue they go in submit order. A new job starts in queue 0, so
short jobs finish before the long ones that have already had a lot, without anyone knowing a
run time in advance: Tiresias is non-clairvoyant, as gq is.

Each pass walks every job, running and waiting, in that order (queue, then running before
waiting within a queue, then submit time) and hands out the cluster as if it were empty: a
running job keeps its cards if nothing ahead of it took them, a waiting job gets cards where it
fits (first fit, as the other baselines place). A running job that loses its cards is preempted,
which only happens for waiting work of a lower-numbered queue (within a queue nobody is
stopped). The waiting jobs that got cards start where they fit now; those that need the cards of
a victim start once it is gone. Without the starvation knob of the paper (promoting a job that waited
long back to queue 0): the issue asks for the plain 2D-LAS.
"""

from __future__ import annotations

from collections.abc import Iterator

from gq.model import Job, JobState, Reason
from gq.policy.cardshare import cards_held
from gq.policy.placement import Capacity
from gq.policy.preemption import Preemption, Victim
from gq.policy.queue import shape
from gq.policy.schedule import allowed_cards, waiting_reason
from gq.policy.types import Plan, SchedulerInput, Start

# Card-seconds: queue 0 below an hour of one card, queue 1 below ten, queue 2 beyond. Chosen,
# not fitted: the paper finds 2 or 3 queues enough and the results insensitive to the limits.
QUEUE_LIMITS = (3600.0, 36000.0)


def queue_of(service: float, limits: tuple[float, ...] = QUEUE_LIMITS) -> int:
    """The queue of a job that has had `service` card-seconds."""
    for i, limit in enumerate(limits):
        if service < limit:
            return i
    return len(limits)


def attained(job: Job, inp: SchedulerInput, totals: dict[int, int]) -> float:
    """Card-seconds the job has had: its earlier runs, and the current one if it runs."""
    before = inp.attained.get(job.id, 0.0)
    if job.started_at is None or not job.gpu_ids:
        return before
    return before + max(0.0, inp.now - job.started_at) * cards_held(job, totals)


def tiresias(inp: SchedulerInput, explain: bool = True,
             limits: tuple[float, ...] = QUEUE_LIMITS) -> Plan:
    plan = Plan()
    hosts = inp.hosts
    totals = {h.name: {c.index: c.memory_total for c in h.cards} for h in hosts}
    on_host = (lambda j: totals[j.host]) if len(hosts) > 1 else (lambda j: totals[hosts[0].name])
    where = (lambda j: j.host) if len(hosts) > 1 else (lambda j: hosts[0].name)
    most_cards = max(len(h.cards) for h in hosts)
    # The cluster as the walk hands it out: what is being stopped still holds its cards.
    future = {h.name: Capacity(h, [j for j in inp.running_on(h)
                                   if j.state is not JobState.RUNNING]) for h in hosts}
    running = sorted((queue_of(attained(j, inp, on_host(j)), limits), 0, j.submitted_at, j.id,
                      j) for j in inp.running if j.state is JobState.RUNNING)
    victims: list[Job] = []
    wanted: list[tuple[int, Job]] = []
    i = 0

    def walk_running(upto: tuple | None) -> None:
        nonlocal i
        while i < len(running) and (upto is None or running[i][:4] < upto):
            job = running[i][-1]
            cap = future[where(job)]
            if _free_for(cap, job, job.gpu_ids):
                cap.take(job, job.gpu_ids)
            else:
                victims.append(job)
            i += 1

    full = False
    # Shapes that fit no host of the look-ahead: the walk only takes from it, so they fit
    # nowhere for the rest of the pass (not with admin reservations, which depend on a job's
    # limit). Once every shape waiting is among them, a pass that does not explain stops.
    nowhere: set[tuple] = set()
    live = None if explain or inp.windows else {
        s for s in inp.pending.shapes if s[0] <= most_cards}
    for entry in _waiting(inp, limits, most_cards, plan):
        walk_running(entry[:4])
        q, _, _, _, job = entry
        if full:
            break
        placed = None
        request = shape(job)
        if request not in nowhere:
            for host in hosts:
                cards, _short = future[host.name].fit(job, allowed_cards(inp, job, host))
                if cards is not None:
                    future[host.name].take(job, cards)
                    placed = host
                    break
            if placed is None and not inp.windows:
                nowhere.add(request)
                if live is not None:
                    live.discard(request)
                    full = not live
        if placed is not None:
            wanted.append((q, job))
            # No card left: nothing more starts, unless a job that needs none waits.
            full = full or (not explain and _no_card_left(future) and all(
                s[0] > 0 for s in inp.pending.shapes))
        else:
            plan.reasons[job.id] = Reason.RESOURCES
            plan.shortfalls[job.id] = (f"cards: jobs of queue {q} or below of least attained "
                                       "service (Tiresias) hold or get them first")
    walk_running(None)
    _start([j for _, j in wanted], inp, plan)
    if victims:
        started = {s.job_id for s in plan.starts}
        served = next((j for q, j in wanted if j.id not in started), None)
        if served is not None:
            plan.preemptions.append(Preemption(served.id, "", tuple(
                Victim(j.id, j.priority, inp.now - j.started_at,
                       (inp.now - j.started_at) * cards_held(j, on_host(j)))
                for j in victims)))
    return plan


def _free_for(cap: Capacity, job: Job, cards) -> bool:
    """Whether `cards` of the look-ahead can still take the running job where it runs."""
    for i in cards:
        load = cap.cards.get(i)
        if load is None:
            continue
        if job.mem is None and load.jobs or job.mem is not None and load.free < job.mem:
            return False
    return True


def _no_card_left(future: dict[str, Capacity]) -> bool:
    return all(c.jobs and c.free <= 0 for cap in future.values() for c in cap.cards.values())


def _waiting(inp: SchedulerInput, limits: tuple[float, ...], most_cards: int, plan: Plan
             ) -> Iterator[tuple]:
    """The waiting jobs that could run, by (queue, submit time), read lazily: one sweep of the
    submit order, queue 0 as it comes and the jobs of later queues kept, in order, for after
    it (a job's service does not change while it waits)."""
    later: dict[int, list[Job]] = {}
    attained = inp.attained
    for job in inp.pending.in_submit_order():
        q = queue_of(attained[job.id], limits) if job.id in attained else 0
        if q:
            later.setdefault(q, []).append(job)
            continue
        if (entry := _entry(job, q, inp, most_cards, plan)) is not None:
            yield entry
    for q in sorted(later):
        for job in later[q]:
            if (entry := _entry(job, q, inp, most_cards, plan)) is not None:
                yield entry


def _entry(job: Job, q: int, inp: SchedulerInput, most_cards: int, plan: Plan) -> tuple | None:
    """The job's place in the walk, or None (and its reason) if it cannot run."""
    if job.state is not JobState.PENDING or job.deps or job.gpus > most_cards:
        reason = waiting_reason(job, inp, most_cards)
        if reason is not None:
            plan.reasons[job.id] = reason
            return None
    return q, 1, job.submitted_at, job.id, job


def _start(wanted: list[Job], inp: SchedulerInput, plan: Plan) -> None:
    """Start the jobs the walk reached where they fit now (first fit, in walk order)."""
    capacity = [(h, Capacity(h, inp.running_on(h))) for h in inp.hosts]
    for job in wanted:
        for host, cap in capacity:
            cards, short = cap.fit(job, allowed_cards(inp, job, host))
            if cards is not None:
                cap.take(job, cards)
                plan.starts.append(Start(job.id, cards, host.name))
                break
        else:
            plan.reasons[job.id] = Reason.RESOURCES
            plan.shortfalls[job.id] = short
