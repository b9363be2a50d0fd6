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

from gq.model import Job, JobState, Tier
from gq.policy.placement import Capacity
from gq.policy.types import Host


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
    max_waiting: int = 8,
) -> PreemptionPlan:
    """Decide whom to preempt.

    hosts: one host, or a cluster (then each holding job's `host` names its Host).
    waiting: pending jobs that cannot start now, in queue order (most urgent first); of those
        of a higher tier than some preemptible running job, the first `max_waiting` are served.
    holding: every job holding resources, with state, priority, preemptible, gpu_ids and
        started_at. Those not `running` are being stopped: what they hold counts as free.
    exempt: seconds after its (re)start during which a job is not preempted.
    checkpoints: job id -> when it last saved a checkpoint (epoch seconds), where known.
    """
    hosts = (hosts,) if isinstance(hosts, Host) else tuple(hosts)
    checkpoints = checkpoints or {}
    ctx = _Context(now, exempt, checkpoints)
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
        if _take_where_it_fits(job, hosts, futures):  # room is already being made
            plan.notes[job.id] = Note("jobs being stopped will free what it needs")
            continue
        choices, notes = [], []
        for host in hosts:
            victims, note = _victims_on(host, job, futures[host.name], candidates[host.name],
                                        ctx)
            if victims is not None:
                choices.append((_set_cost(victims, host, ctx), host, victims))
            elif len(hosts) == 1:
                notes.append(note)
            else:
                notes.append(Note(f"on {host.name}: {note.text}", note.exempt_until))
        if not choices:
            until = [n.exempt_until for n in notes if n.exempt_until is not None]
            plan.notes[job.id] = Note("; ".join(n.text for n in notes), min(until, default=None))
            continue
        _cost, host, victims = min(choices, key=lambda c: c[0])
        future = futures[host.name]
        for v in victims:
            future.release(v, v.gpu_ids)
            candidates[host.name].remove(v)
        future.take(job, future.fit(job)[0])
        plan.preemptions.append(
            Preemption(job.id, host.name, tuple(_victim(v, host, ctx) for v in victims)))
    return plan


@dataclass(frozen=True)
class _Context:
    now: float
    exempt: float
    checkpoints: Mapping[int, float]


def _on(host: Host, hosts: tuple[Host, ...], holding: Sequence[Job]) -> list[Job]:
    return list(holding) if len(hosts) == 1 else [j for j in holding if j.host == host.name]


def _future(host: Host, holding: list[Job]) -> Capacity:
    """The host once the jobs being stopped are gone."""
    cap = Capacity(host, holding)
    for job in holding:
        if job.state != JobState.RUNNING:
            cap.release(job, job.gpu_ids)
    return cap


def _take_where_it_fits(job: Job, hosts: tuple[Host, ...], futures: dict[str, Capacity]) -> bool:
    for host in hosts:
        cards, _short = futures[host.name].fit(job)
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
    ready = [j for j in lower if ctx.now - _started(j, ctx.now) >= ctx.exempt]
    ready.sort(key=lambda j: _cost(j, host, ctx))
    found = _greedy(job, future, ready)
    if found is not None:
        return _cheapest(job, future, ready, found, host, ctx), None
    exempt_ones = [j for j in lower if j not in ready]
    if exempt_ones and _fits_without(job, future, lower):
        ids = ",".join(str(j.id) for j in exempt_ones)
        until = min(_started(j, ctx.now) + ctx.exempt for j in exempt_ones)
        return None, Note(f"job(s) {ids} may be preempted for it once past their exempt "
                          "first minutes", until)
    return None, Note("stopping every job of a lower tier that may be preempted would not "
                      "free enough")


def _greedy(job: Job, future: Capacity, ready: list[Job]) -> list[Job] | None:
    """The cheapest candidates one by one until the job fits, then without those that turn
    out not to be needed (the costliest first); None if all of them are not enough."""
    trial, chosen = future.copy(), []
    for victim in ready:
        trial.release(victim, victim.gpu_ids)
        chosen.append(victim)
        if trial.fit(job)[0] is not None:
            break
    else:
        return None
    for victim in reversed(list(chosen)):
        rest = [v for v in chosen if v is not victim]
        if _fits_without(job, future, rest):
            chosen = rest
    return chosen


# Fit checks a search for a cheaper set than the greedy one may make (per waiting job and
# host): enough for the few candidates of a workstation, bounded on a big simulated cluster.
SEARCH_BUDGET = 400


def _cheapest(job: Job, future: Capacity, ready: list[Job], greedy: list[Job], host: Host,
              ctx: _Context) -> list[Job]:
    """The set of candidates of least _set_cost that makes room: branch and bound from the
    greedy answer. Adding a victim only ever raises the cost, so a set that makes room is
    never extended, and the best set is minimal: every victim in it is needed."""
    best = [_set_cost(greedy, host, ctx), greedy]
    checks = 0

    def search(i: int, chosen: list[Job]) -> None:
        nonlocal checks
        if checks >= SEARCH_BUDGET or _set_cost(chosen, host, ctx) >= best[0]:
            return
        if chosen:
            checks += 1
            if _fits_without(job, future, chosen):
                best[:] = [_set_cost(chosen, host, ctx), list(chosen)]
                return
        if i < len(ready):
            search(i + 1, chosen + [ready[i]])
            search(i + 1, chosen)

    search(0, [])
    return best[1]


def _fits_without(job: Job, future: Capacity, victims: list[Job]) -> bool:
    trial = future.copy()
    for v in victims:
        trial.release(v, v.gpu_ids)
    return trial.fit(job)[0] is not None


def _started(job: Job, now: float) -> float:
    return job.started_at if job.started_at is not None else now


def _lost_seconds(job: Job, ctx: _Context) -> float:
    since = max(_started(job, ctx.now), ctx.checkpoints.get(job.id, float("-inf")))
    return max(0.0, ctx.now - since)


def _card_share(job: Job, host: Host) -> float:
    if not job.gpu_ids:
        return 1.0
    if job.mem is None:
        return float(len(job.gpu_ids))
    totals = {c.index: c.memory_total for c in host.cards}
    return sum(min(1.0, job.mem / totals[i]) if totals.get(i) else 1.0 for i in job.gpu_ids)


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
