"""Preemption: which running jobs to stop so that waiting higher-tier work starts now.

Only a waiting job that cannot start now is served, and only by stopping jobs that are
preemptible, of a lower tier, running (not already stopping) and past their exempt period.
Of those it stops the ones that lose the least: lowest tier first, then the least work done
since the job's last start or last checkpoint, then the fewest jobs; any victim that turns out
not to be needed is dropped again. Resources that jobs already being stopped will free are
counted as free, so that a pass run while victims exit stops nobody else.

The daemon calls plan_preemptions after a scheduling pass with the jobs that got no start
(reason Resources); `gq sim` calls the same function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gq.model import Job, JobState, Reason, Tier
from gq.policy.cardshare import cards_held
from gq.policy.placement import Capacity
from gq.policy.types import Host

# Fit checks a search for a cheaper set than the greedy one may make, per waiting job and host;
# and on how many of the hosts where the greedy pass found victims (the cheapest) it searches.
SEARCH_BUDGET = 200
SEARCHED_HOSTS = 3
MAX_WAITING = 8  # waiting jobs served per pass, the first in queue order


@dataclass(frozen=True)
class Victim:
    job_id: int
    tier: Tier
    # Work since its last start or checkpoint, which stopping it loses: seconds, and
    # card-seconds (a slice of a card counts as its share of the card's memory; a job without
    # cards as one card, so that time still counts).
    lost_seconds: float
    lost_card_seconds: float


@dataclass(frozen=True)
class Preemption:
    """Stop `victims` so that waiting job `job_id` can start on `host`."""

    job_id: int
    host: str
    victims: tuple[Victim, ...]

    @property
    def lost_card_seconds(self) -> float:
        return sum(v.lost_card_seconds for v in self.victims)


@dataclass(frozen=True)
class Note:
    """Why nothing is stopped for a waiting job, in words; `exempt_until`: when the jobs that
    would do become preemptible, if that is what keeps them (epoch seconds)."""

    text: str
    exempt_until: float | None = None


@dataclass
class PreemptionPlan:
    preemptions: list[Preemption] = field(default_factory=list)  # in queue order
    # Every waiting job considered that is not in `preemptions`: why nothing is stopped for it.
    notes: dict[int, Note] = field(default_factory=dict)


def plan_preemptions(
    hosts: Host | Sequence[Host],
    waiting: Sequence[Job],
    holding: Sequence[Job],
    now: float,
    exempt: float = 600.0,
    checkpoints: Mapping[int, float] | None = None,
    max_waiting: int = MAX_WAITING,
    allowed: Mapping[int, frozenset[int] | None] | None = None,
) -> PreemptionPlan:
    """Decide whom to preempt.

    hosts: one host, or a cluster (then each holding job's `host` names its Host).
    waiting: pending jobs that cannot start now, in queue order (most urgent first); of those
        of a higher tier than some preemptible running job, the first `max_waiting` are served.
    holding: every job holding resources, with state, priority, preemptible, gpu_ids and
        started_at. Those not `running` are being stopped: what they hold counts as free.
    exempt: seconds after its (re)start during which a job is not preempted.
    checkpoints: job id -> when it last saved a checkpoint (epoch seconds), where known.
    allowed: waiting job id -> the cards it may use (its pool, less admin reservations kept
        from it); absent or None: any card.
    """
    hosts = (hosts,) if isinstance(hosts, Host) else tuple(hosts)
    checkpoints = checkpoints or {}
    ctx = _Context(now, exempt, checkpoints, allowed or {})
    futures = {h.name: _future(h, _on(h, hosts, holding)) for h in hosts}
    candidates = {
        h.name: [j for j in _on(h, hosts, holding)
                 if j.state == JobState.RUNNING and j.preemptible]
        for h in hosts
    }
    plan = PreemptionPlan()
    considered = 0
    for job in waiting:
        lowest = max((j.priority.rank for js in candidates.values() for j in js), default=-1)
        if job.priority.rank >= lowest:
            continue
        if considered == max_waiting:
            break
        considered += 1
        outcome = _serve(job, hosts, futures, candidates, ctx)
        if isinstance(outcome, Note):
            plan.notes[job.id] = outcome
        else:
            plan.preemptions.append(outcome)
    return plan


def _serve(job: Job, hosts: tuple[Host, ...], futures: dict[str, Capacity],
           candidates: dict[str, list[Job]], ctx: _Context) -> Preemption | Note:
    """Make room for one waiting job: the victims on the host where they cost least (taken
    out of `candidates`, and the job's resources out of that host's future), or a Note."""
    if _take_where_it_fits(job, hosts, futures, ctx):
        return Note("jobs being stopped will free what it needs")
    choices, notes = [], {}
    for host in hosts:
        victims, note = _victims_on(host, job, futures[host.name], candidates[host.name], ctx)
        if victims is not None:
            choices.append((_set_cost(victims, host, ctx), host, victims))
        else:
            notes.setdefault(note.text, []).append((host, note))
    if not choices:
        return _summary(notes, len(hosts))
    # The greedy answers rank the hosts; a search for a cheaper set is worth it on the few
    # best (on a workstation, its one host).
    choices.sort(key=lambda c: c[0])
    for k, (_cost, host, victims) in enumerate(choices[:SEARCHED_HOSTS]):
        if len(victims) > 1:  # one victim, the cheapest that will do, is the best already
            ready = _ready(host, job, candidates[host.name], ctx)
            better = _cheapest(job, futures[host.name], ready, victims, host, ctx)
            choices[k] = (_set_cost(better, host, ctx), host, better)
    _cost, host, victims = min(choices, key=lambda c: c[0])
    future = futures[host.name]
    for v in victims:
        future.release(v, v.gpu_ids)
        candidates[host.name].remove(v)
    future.take(job, _fit(future, job, ctx))
    return Preemption(job.id, host.name, tuple(_victim(v, host, ctx) for v in victims))


def _summary(notes: dict[str, list[tuple[Host, Note]]], n_hosts: int) -> Note:
    """One note from each host's: the same words once, with how many hosts they are about."""
    until = [n.exempt_until for pairs in notes.values() for _h, n in pairs
             if n.exempt_until is not None]
    if n_hosts == 1:
        text = next(iter(notes))
    else:
        text = "; ".join(f"on {len(pairs)} of {n_hosts} hosts: {text}"
                         for text, pairs in notes.items())
    return Note(text, min(until, default=None))


@dataclass(frozen=True)
class _Context:
    now: float
    exempt: float
    checkpoints: Mapping[int, float]
    allowed: Mapping[int, frozenset[int] | None]


def _fit(cap: Capacity, job: Job, ctx: _Context | None) -> tuple[int, ...] | None:
    """The cards the waiting job would get on `cap`, within the cards it may use."""
    return cap.fit(job, None if ctx is None else ctx.allowed.get(job.id))[0]


def _on(host: Host, hosts: tuple[Host, ...], holding: Sequence[Job]) -> list[Job]:
    return list(holding) if len(hosts) == 1 else [j for j in holding if j.host == host.name]


def _future(host: Host, holding: list[Job]) -> Capacity:
    """The host once the jobs being stopped are gone."""
    cap = Capacity(host, holding)
    for job in holding:
        if job.state != JobState.RUNNING:
            cap.release(job, job.gpu_ids)
    return cap


def _take_where_it_fits(job: Job, hosts: tuple[Host, ...], futures: dict[str, Capacity],
                        ctx: _Context) -> bool:
    for host in hosts:
        cards = _fit(futures[host.name], job, ctx)
        if cards is not None:
            futures[host.name].take(job, cards)
            return True
    return False


def _victims_on(host: Host, job: Job, future: Capacity, running: list[Job], ctx: _Context
                ) -> tuple[list[Job] | None, Note | None]:
    """(the cheapest jobs to stop on `host` so that `job` fits, None), or (None, why none)."""
    lower = [j for j in running if j.priority.rank > job.priority.rank]
    if not lower:
        return None, Note("no job of a lower tier that may be preempted is running")
    ready = _ready(host, job, running, ctx)
    found = _greedy(job, future, ready, ctx)
    if found is not None:
        return found, None
    exempt_ones = [j for j in lower if j not in ready]
    if exempt_ones and _fits_without(job, future, lower, ctx):
        ids = ",".join(str(j.id) for j in exempt_ones)
        until = min(_started(j, ctx.now) + ctx.exempt for j in exempt_ones)
        return None, Note(f"job(s) {ids} may be preempted for it once past their exempt "
                          "first minutes", until)
    return None, Note("stopping every job of a lower tier that may be preempted would not "
                      "free enough")


def _ready(host: Host, job: Job, running: list[Job], ctx: _Context) -> list[Job]:
    """The jobs that may be stopped for `job` now, the cheapest first."""
    ready = [j for j in running if j.priority.rank > job.priority.rank
             and ctx.now - _started(j, ctx.now) >= ctx.exempt]
    return sorted(ready, key=lambda j: _cost(j, host, ctx))


def _greedy(job: Job, future: Capacity, ready: list[Job], ctx: _Context | None = None
            ) -> list[Job] | None:
    """The cheapest candidates one by one until the job fits, then without those that turn
    out not to be needed (the costliest first); None if all of them are not enough."""
    trial, chosen = future.copy(), []
    for victim in ready:
        trial.release(victim, victim.gpu_ids)
        chosen.append(victim)
        if _fit(trial, job, ctx) is not None:
            break
    else:
        return None
    for victim in reversed(list(chosen)):
        rest = [v for v in chosen if v is not victim]
        if _fits_without(job, future, rest, ctx):
            chosen = rest
    return chosen


def _cheapest(job: Job, future: Capacity, ready: list[Job], greedy: list[Job], host: Host,
              ctx: _Context) -> list[Job]:
    """The set of candidates of least _set_cost that makes room: branch and bound from the
    greedy answer. Adding a victim only ever raises the cost, so a set that makes room is
    never extended, and the best set is minimal: every victim in it is needed."""
    costs = [_set_cost([v], host, ctx) for v in ready]  # the cost is a sum over victims
    best = [_set_cost(greedy, host, ctx), greedy]
    checks = 0

    def search(i: int, chosen: list[Job], cost: tuple) -> None:
        nonlocal checks
        if checks >= SEARCH_BUDGET or cost >= best[0]:
            return
        if chosen:
            checks += 1
            if _fits_without(job, future, chosen, ctx):
                best[:] = [cost, list(chosen)]
                return
        if i < len(ready):
            with_it = tuple(a + b for a, b in zip(cost, costs[i]))
            search(i + 1, chosen + [ready[i]], with_it)
            search(i + 1, chosen, cost)

    search(0, [], (0,) * len(costs[0]))
    return best[1]


def _fits_without(job: Job, future: Capacity, victims: list[Job],
                  ctx: _Context | None = None) -> bool:
    trial = future.copy()
    for v in victims:
        trial.release(v, v.gpu_ids)
    return _fit(trial, job, ctx) is not None


def _started(job: Job, now: float) -> float:
    return job.started_at if job.started_at is not None else now


def _lost_seconds(job: Job, ctx: _Context) -> float:
    since = max(_started(job, ctx.now), ctx.checkpoints.get(job.id, float("-inf")))
    return max(0.0, ctx.now - since)


def _card_share(job: Job, host: Host) -> float:
    if not job.gpu_ids:
        return 1.0
    return cards_held(job, {c.index: c.memory_total for c in host.cards})


def _cost(job: Job, host: Host, ctx: _Context) -> tuple:
    """Who to stop first: the lowest tier, then the least work lost, then the biggest (fewer
    victims), then the newest."""
    lost = _lost_seconds(job, ctx)
    share = _card_share(job, host)
    return (-job.priority.rank, lost * share, lost, -share, -job.id)


def _set_cost(victims: list[Job], host: Host, ctx: _Context) -> tuple:
    """Which set of victims is cheapest: the fewest jobs of each tier above the lowest, the
    most urgent tier first (low-tier jobs are the ones meant to be stopped); then the least
    work lost; then the fewest jobs."""
    by_tier = tuple(sum(1 for v in victims if v.priority == t) for t in Tier if t != Tier.LOW)
    lost = sum(_lost_seconds(v, ctx) * _card_share(v, host) for v in victims)
    return (*by_tier, lost, len(victims))


def _victim(job: Job, host: Host, ctx: _Context) -> Victim:
    lost = _lost_seconds(job, ctx)
    return Victim(job.id, job.priority, lost, lost * _card_share(job, host))


def requeue_or_hold(job: Job, preempted: bool, max_requeues: int, how: str
                    ) -> tuple[JobState, str | None, str]:
    """(state, reason, detail) for a stopped run: queued again, or held after too many
    preemptions ([preemption] max_requeues; the daemon's rule, which `gq sim` applies too).
    `how`: how it stopped, in words."""
    if preempted and job.preemptions > max_requeues:
        return (JobState.HELD, Reason.HELD,
                f"held, not requeued: preempted {job.preemptions} times, more than "
                f"[preemption] max_requeues = {max_requeues} ({how}); `gq release {job.id}` "
                "queues it again")
    return JobState.PENDING, None, f"requeued: {how}"
