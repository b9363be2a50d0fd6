"""Freezing a preempted job instead of signalling it (docs/preemption.md#freezing): which
victims are frozen, within the host memory that [preemption] freeze_ram leaves, and which
frozen jobs are thawed where.

A victim is frozen when its --preempt-mode (else its tier's [preemption] mode) says `freeze`,
or says `auto` and it has written no checkpoint (a job that saves its work takes the signal
path and leaves the host memory to those that do not), and the facts allow it: one process
holding memory on its one card, a card whose driver can checkpoint, and room for its device
memory in the host memory frozen jobs may hold and in what the host has free. Otherwise it
takes the signal path, and the choice says why, in words the daemon records.

A frozen job holds no card and no core but keeps its host memory. It waits in its tier's queue
like a pending job (the same order, the same backfill protection) for a card it can be restored
onto: its own, or, where the driver can move it, one of the same model; a slice needs its
frozen memory free there, a whole-card job the card empty. It never preempts anything itself,
and is not thawed while jobs on its host are being stopped (what they free is meant for the
jobs they are stopped for).

Pure: the daemon and `gq sim` call it through decide() (gq/policy/decide.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gq.model import PREEMPT_MODES, Job, JobState, clone
from gq.policy.types import Host, SchedulerInput

FREEZE, SIGNAL, AUTO = PREEMPT_MODES


@dataclass(frozen=True)
class JobFacts:
    """What the daemon measured of a running job: its processes holding memory on its cards
    and the bytes they hold (None: unknown), and why its card cannot checkpoint (None: it can)."""

    processes: int | None
    device_mem: int | None
    card_problem: str | None = None


@dataclass(frozen=True)
class FreezeRule:
    """[preemption] mode per tier; freeze_ram: the host memory all frozen jobs of a host may
    hold (bytes; None: no limit of gq's); host_free: what the host has free now (None: not
    known, not checked); facts: per running job; remap: a thaw may use another card of the
    same model."""

    modes: Mapping[str, str] = field(default_factory=dict)
    freeze_ram: int | None = 0
    host_free: int | None = None
    facts: Mapping[int, JobFacts] = field(default_factory=dict)
    remap: bool = False


@dataclass(frozen=True)
class Choice:
    """How one victim makes way: frozen (holding `host_mem` bytes of host memory), or the
    signal path; `reason` says which and why, in words."""

    freeze: bool
    reason: str
    host_mem: int = 0


def mode_of(job: Job, rule: FreezeRule) -> str:
    return job.preempt_mode or rule.modes.get(str(job.priority), SIGNAL)


def why_not(job: Job, rule: FreezeRule, checkpointed: bool) -> str | None:
    """Why the job cannot be frozen (None: it can, host memory permitting)."""
    mode = mode_of(job, rule)
    if mode == SIGNAL:
        return "its preempt mode is signal"
    if mode == AUTO and checkpointed:
        return "it saves checkpoints, so auto sends it the signal"
    if len(job.gpu_ids) != 1:
        return (f"it holds {len(job.gpu_ids)} cards: only a single process on one card is "
                "frozen")
    facts = rule.facts.get(job.id)
    if facts is None or facts.processes is None:
        return "its processes on its card are not known yet"
    if facts.card_problem:
        return f"GPU {job.gpu_ids[0]}: {facts.card_problem}"
    if facts.processes == 0:
        return "no process of it holds memory on its card: nothing to freeze"
    if facts.processes > 1:
        return (f"{facts.processes} of its processes use its card (multi-process, NCCL): only "
                "a single process is frozen")
    if facts.device_mem is None:
        return "how much memory it holds on its card is not known"
    return None


def held_ram(jobs: Sequence[Job]) -> int:
    """The host memory frozen jobs hold, and jobs being frozen or thawed (set when a freeze is
    decided, cleared when the thaw is done)."""
    return sum(j.host_mem or 0 for j in jobs)


def choose(victims: Sequence[Job], inp: SchedulerInput, rule: FreezeRule,
           checkpoints: Mapping[int, float]) -> dict[int, Choice]:
    """Freeze or signal, for each victim in order, each frozen one taking its share of its
    host's room (freeze_ram less what frozen jobs hold there; the host's free memory)."""
    room = _room(inp, rule)
    out = {}
    for job in victims:
        host = _host_of(job, inp)
        why = why_not(job, rule, job.id in checkpoints)
        size = rule.facts[job.id].device_mem if why is None else 0
        if why is None:
            why = too_big(size, room.get(host, (None, None)))
        if why is not None:
            out[job.id] = Choice(False, why)
            continue
        budget, free = room.get(host, (None, None))
        room[host] = (None if budget is None else budget - size,
                      None if free is None else free - size)
        out[job.id] = Choice(True, f"frozen to host memory ({_gib(size)})", size)
    return out


def freezable(candidates: Sequence[Job], inp: SchedulerInput, rule: FreezeRule,
              checkpoints: Mapping[int, float]) -> set[int]:
    """The candidates that could each be frozen now: preempting them loses no work."""
    room = _room(inp, rule)
    return {j.id for j in candidates if why_not(j, rule, j.id in checkpoints) is None
            and too_big(rule.facts[j.id].device_mem, room.get(_host_of(j, inp), (None, None)))
            is None}


def _room(inp: SchedulerInput, rule: FreezeRule) -> dict[str, tuple[int | None, int | None]]:
    """Per host name: (what freeze_ram leaves, what the host has free); None: no bound."""
    holding = [*inp.frozen, *inp.running]
    out = {}
    for host in inp.hosts:
        held = held_ram([j for j in holding if _host_of(j, inp) == host.name])
        budget = None if rule.freeze_ram is None else rule.freeze_ram - held
        out[host.name] = (budget, rule.host_free)
    return out


def too_big(size: int, room: tuple[int | None, int | None]) -> str | None:
    """Why `size` bytes of frozen state do not fit in (what freeze_ram leaves, what the host
    has free); None: they do."""
    budget, free = room
    if budget is not None and size > budget:
        return (f"its {_gib(size)} on the card do not fit in the host memory [preemption] "
                f"freeze_ram leaves ({_gib(max(budget, 0))})")
    if free is not None and size > free:
        return f"its {_gib(size)} on the card do not fit in the host's free memory ({_gib(free)})"
    return None


def _host_of(job: Job, inp: SchedulerInput) -> str:
    return inp.hosts[0].name if len(inp.hosts) == 1 else job.host


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


# ---- thawing ------------------------------------------------------------------------------

def for_pass(inp: SchedulerInput, remap: bool) -> tuple[SchedulerInput, list[Job]]:
    """The input a pass sees with frozen jobs: each host's memory less what its frozen jobs
    (and those being frozen or thawed) hold, and a thaw request per frozen job, to be queued
    with the pending jobs for the pass."""
    thawing = [j for j in inp.running if j.state == JobState.RUNNING and j.host_mem
               and j.mem is not None and j.frozen_cards]
    if thawing:  # a slice being thawed needs what it held, whatever its --mem
        bumped = {j.id: _holding_what_it_held(j) for j in thawing}
        inp = replace(inp, running=[bumped.get(j.id, j) for j in inp.running])
    if not inp.frozen:
        return inp, []
    by_name = {h.name: h for h in inp.hosts}
    single = len(inp.hosts) == 1
    # What jobs being stopped free is meant for the jobs they are stopped for: no thaw takes it
    # meanwhile (a frozen victim would be thawed straight back where it was).
    stopping = {"" if single else j.host for j in inp.running if j.state == JobState.PREEMPTING}
    requests = [thaw_request(j, inp.hosts[0] if single else by_name[j.host], remap,
                             None if single else j.host) for j in inp.frozen
                if (single or j.host in by_name) and ("" if single else j.host) not in stopping]
    holders = [*inp.frozen, *(j for j in inp.running if j.host_mem)]
    hosts = tuple(_less_memory(h, [j for j in holders if single or j.host == h.name])
                  for h in inp.hosts)
    if all(a is b for a, b in zip(hosts, inp.hosts)):
        return inp, requests
    return replace(inp, host=hosts[0] if not isinstance(inp.host, tuple) else hosts), requests


def _holding_what_it_held(job: Job) -> Job:
    held = max(int(c.get("mem") or 0) for c in job.frozen_cards)
    if held <= (job.mem or 0):
        return job
    bumped = clone(job)
    bumped.mem = held
    return bumped


def _less_memory(host: Host, jobs: list[Job]) -> Host:
    if host.ram is None or not jobs:
        return host
    held = held_ram(jobs) + sum(j.ram or 0 for j in jobs if j.state == JobState.FROZEN)
    return replace(host, ram=max(0, host.ram - held))


def thaw_request(job: Job, host: Host, remap: bool, pinned: str | None = None) -> Job:
    """The frozen job as a waiting request: for the cards it may be restored onto, with room
    for the memory it had on each; its --ram it holds still (the host's is less by it)."""
    home = {c["index"] for c in job.frozen_cards}
    models = {c.get("name") for c in job.frozen_cards}
    onto = {c.index for c in host.cards if c.index in home
            or (remap and len(home) == 1 and c.model in models)}
    request = clone(job)
    request.state, request.reason, request.gpu_ids, request.deps = (
        JobState.PENDING, None, [], {})
    request.ram, request.pinned, request.gpus_max = None, pinned, None
    request.gpus = max(1, len(home))
    request.avoid_gpus = job.avoid_gpus | frozenset(c.index for c in host.cards
                                                    if c.index not in onto)
    held = max((int(c.get("mem") or 0) for c in job.frozen_cards), default=0)
    if job.mem is not None:
        request.mem = max(job.mem, held)
    return request
