"""Baseline policies that `gq sim` compares gq against: strict FIFO, and greedy first fit.

Both take the same SchedulerInput and return the same Plan as `schedule`, so that one replay
loop runs any of them, and both place a job the way `schedule` does (on the first host where
it fits, cards chosen by the same Capacity), so that a comparison measures the order jobs run
in, not a different packing. Both keep the lab's rules that are not about order: pools and
admin reservations (gq/policy/windows.py). Neither has tiers, fair share, reservations or quotas:

- `fifo`: jobs in submit order; the first one that does not fit blocks every job behind it
  (reason Priority), as a plain FIFO queue does.
- `greedy`: jobs in submit order; every job that fits somewhere now starts. Big jobs can starve
  behind a stream of small ones: that is the point of comparing with it.

Jobs that cannot be considered (held, waiting on a dependency, more GPUs than any host has)
never block a FIFO queue: they wait with the reason `schedule` gives them.

`explain=False` (the replay of `gq sim`) gives the same starts and stops reading the queue as
soon as nothing further down could start: FIFO at its first blocked job, greedy once every
request shape still waiting is known not to fit. The jobs not read get no reason.
"""

from __future__ import annotations

from collections.abc import Iterable

from gq.model import Job, JobState, Reason
from gq.policy.placement import Capacity
from gq.policy.queue import shape as request_of
from gq.policy.schedule import allowed_cards, waiting_reason
from gq.policy.types import Plan, SchedulerInput, Start


def fifo(inp: SchedulerInput, explain: bool = True) -> Plan:
    return _in_submit_order(inp, stop_at_first_blocked=True, explain=explain)


def greedy(inp: SchedulerInput, explain: bool = True) -> Plan:
    return _in_submit_order(inp, stop_at_first_blocked=False, explain=explain)


def _in_submit_order(inp: SchedulerInput, stop_at_first_blocked: bool, explain: bool,
                     order: Iterable[Job] | None = None) -> Plan:
    """The pass of fifo and greedy; `order`: the queue in another order than submit order
    (the shortest-first baselines of gq/policy/shortest_first.py place as greedy does)."""
    plan = Plan()
    reasons, shortfalls = plan.reasons, plan.shortfalls
    hosts = [(h, Capacity(h, inp.running_on(h))) for h in inp.hosts]
    most_cards = max(len(h.cards) for h in inp.hosts)
    # A pass only takes resources away, so a request that did not fit once in this pass will
    # not fit later in it: remember it, which keeps a pass over a long queue cheap per job.
    short_of: dict[tuple, str] = {}
    # Without explaining: jobs left to read per request shape, and how many shapes still have
    # some and might fit; none left, nothing further down can start.
    left = None if explain or inp.windows else dict(inp.pending.shapes)
    open_shapes = len(left) if left is not None else -1
    if left is not None:  # shapes that fit nowhere now: settled before reading any job
        for request in left:
            placed, short = _first_fit(_example(request), hosts, inp)
            if placed is None:
                short_of[request] = short
                open_shapes -= 1
    ordered = inp.pending.in_submit_order() if order is None else iter(order)
    for job in ordered:
        if open_shapes == 0:
            break
        if left is not None:
            request = request_of(job)
            left[request] -= 1
            if left[request] == 0 and request not in short_of:
                open_shapes -= 1
        # _regular(), inlined: this loop runs over the whole queue on every pass.
        if job.state is not JobState.PENDING or job.deps or job.gpus > most_cards:
            reason = waiting_reason(job, inp, most_cards)
            if reason is not None:
                reasons[job.id] = reason
                continue
        # What fit() looks at; with admin reservations, what each keeps from this job too.
        shape = request_of(job) if not inp.windows else (request_of(job), tuple(
            allowed_cards(inp, job, h) for h, _cap in hosts))
        short = short_of.get(shape)
        if short is None:
            placed, short = _first_fit(job, hosts, inp)
            if placed is not None:
                name, capacity, cards = placed
                capacity.take(job, cards)
                plan.starts.append(Start(job.id, cards, name))
                continue
            short_of[shape] = short
            if left is not None and left[shape]:
                open_shapes -= 1
        reasons[job.id] = Reason.RESOURCES
        shortfalls[job.id] = short
        if stop_at_first_blocked:
            if explain:
                _behind(job, list(ordered), plan, inp, most_cards)
            break
    return plan


def _example(request: tuple) -> Job:
    """A job of the shape (queue.shape), as placement sees it."""
    gpus, mem, cpus, ram, pool, gpus_max = request
    return Job(id=0, user="", command=[], cwd="", gpus=gpus, mem=mem, cpus=cpus, ram=ram,
               pool=pool, gpus_max=gpus_max)


def _regular(job: Job, most_cards: int) -> bool:
    """Pending, no dependencies, fits a host's card count: the common case."""
    return job.state is JobState.PENDING and not job.deps and job.gpus <= most_cards


def _behind(head: Job, rest: list[Job], plan: Plan, inp: SchedulerInput, most_cards: int):
    """Reasons for the jobs behind a blocked FIFO head, in bulk: the queue behind it can be
    thousands long, and this runs on every pass."""
    ids = [j.id for j in rest]
    plan.reasons.update(dict.fromkeys(ids, Reason.PRIORITY))
    plan.shortfalls.update(dict.fromkeys(ids, f"first in, first out: job {head.id} starts first"))
    for job in [j for j in rest if not _regular(j, most_cards)]:
        reason = waiting_reason(job, inp, most_cards)
        if reason is not None:
            plan.reasons[job.id] = reason
            del plan.shortfalls[job.id]


def _first_fit(job: Job, hosts: list, inp: SchedulerInput):
    """((host name, its capacity, cards), None) on the first host where the job fits now, or
    (None, what is short on the first host)."""
    first_short = None
    for host, capacity in hosts:
        cards, short = capacity.fit(job, allowed_cards(inp, job, host))
        if cards is not None:
            return (host.name, capacity, cards), None
        first_short = first_short or short
    return None, first_short
