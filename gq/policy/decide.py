"""One scheduling decision: the plan that the daemon, `gq sim` and `--host any` only apply.

`decide(inp, policy)` holds back the elements of arrays over their `%N` limit, runs one pass of
the policy (gq's own, or a baseline), and, when preemption is on, picks the running jobs to stop
for the waiting work that got no start. Its Plan carries all of it: starts, reservations
(forecasts), held-back elements and preemption victims, with every waiting job's reason. The
callers only act on it: the daemon starts processes and signals victims, the replay moves its
virtual clock, the estimate of `--host any` reads when a job would start. So they cannot
disagree on what one pass decides.

Frozen jobs (gq/policy/freezing.py) wait in the queue for the pass as thaw requests: the plan's
`thaws` are kept apart from its starts, and its `freezing` says, for each victim, whether it is
frozen or signalled, and why.

`explain=False` (the replay, and the daemon's passes between two explaining ones) reads the
queue only as far as a start is still possible: the same starts, reservations and preemption
victims, fewer reasons. (With preemption on, such a pass reads at least as far as the waiting
jobs preemption may serve: gq/policy/schedule.py's `protect`.) Tiresias preempts by its own
rule (gq/policy/tiresias.py); the other baselines never preempt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gq.model import Job, JobState, Reason, clone
from gq.policy.arrays import throttled
from gq.policy.baselines import fifo, greedy
from gq.policy.freezing import FreezeRule, choose, for_pass, freezable
from gq.policy.preemption import MAX_WAITING, plan_preemptions
from gq.policy.schedule import allowed_cards, schedule
from gq.policy.shortest_first import qssf, sjf_oracle
from gq.policy.tiresias import tiresias
from gq.policy.types import Plan, SchedulerInput

POLICIES: dict[str, Callable[[SchedulerInput, bool], Plan]] = {
    "gq": schedule,
    "fifo": fifo,
    "greedy": greedy,
    "sjf-oracle": sjf_oracle,
    "tiresias": tiresias,
    "qssf": qssf,
}
# Those that order by a job's (true or expected) run time: the input must say it.
NEEDS_RUN_TIME = frozenset({"sjf-oracle", "qssf"})


@dataclass(frozen=True)
class PreemptRule:
    """gq's preemption ([preemption] of the daemon): a running job is exempt for `exempt`
    seconds after each start; `checkpoints`: job id -> when it last saved (epoch seconds);
    `freeze`: which victims may be frozen instead of signalled (None: none)."""

    exempt: float = 600.0
    checkpoints: Mapping[int, float] = field(default_factory=dict)
    freeze: FreezeRule | None = None


def decide(inp: SchedulerInput, policy: str = "gq", explain: bool = True,
           preempt: PreemptRule | None = None) -> Plan:
    """What to start, reserve, hold back and stop now (see the module docstring)."""
    try:
        choose_starts = POLICIES[policy]
    except KeyError:
        raise ValueError(f"unknown policy {policy!r}: expected {', '.join(POLICIES)}") from None
    queue = inp.pending
    held = throttled(queue.limited.values(), inp.running) if queue.limited else {}
    removed = [queue.remove(job_id) for job_id in held]
    remap = preempt is not None and preempt.freeze is not None and preempt.freeze.remap
    inp, thawing = for_pass(inp, remap)
    for request in thawing:
        queue.add(request)
    try:
        if policy == "gq" and preempt is not None and not explain:
            plan = schedule(inp, explain, protect=_protected(inp))
        else:
            plan = choose_starts(inp, explain)
    finally:
        for request in thawing:
            queue.remove(request.id)
        for job in removed:
            queue.add(job)
    if held:
        plan.reasons.update(held)
        plan.held_back = held
    if thawing:
        _thaws_apart(plan, {r.id for r in thawing})
    if preempt is not None and policy == "gq":
        _preempt_for_waiting(inp, plan, preempt)
    return plan


def _thaws_apart(plan: Plan, ids: set[int]) -> None:
    """The starts and reasons of thaw requests, out of those of pending jobs."""
    plan.thaws = [s for s in plan.starts if s.job_id in ids]
    plan.starts = [s for s in plan.starts if s.job_id not in ids]
    plan.thaw_reasons = {i: plan.reasons.pop(i) for i in ids if i in plan.reasons}


def wants_preemption(inp: SchedulerInput) -> bool:
    """Whether a pass could preempt at all: a preemptible job runs, and work of a higher tier
    waits (cheap; the daemon reads checkpoint times only then)."""
    ranks = [j.priority.rank for j in inp.running if j.state is JobState.RUNNING
             and j.preemptible]
    return bool(ranks) and any(r < max(ranks) for r in inp.pending.tiers())


def _protected(inp: SchedulerInput) -> tuple[int, int] | None:
    """What a pass that does not explain must read all the same: the first waiting jobs of a
    tier above the lowest preemptible one running, as many as preemption serves."""
    ranks = [j.priority.rank for j in inp.running if j.state is JobState.RUNNING
             and j.preemptible]
    return (max(ranks), MAX_WAITING) if ranks else None


def _started(inp: SchedulerInput, plan: Plan) -> list[Job]:
    """The jobs this pass starts or thaws, as holding what they take: victims are chosen for
    the resources that will be free, not those a start of the same pass has just taken."""
    frozen = {j.id: j for j in inp.frozen}
    out = []
    for start in (*plan.starts, *plan.thaws):
        job = clone(inp.pending.jobs.get(start.job_id) or frozen[start.job_id])
        job.state, job.gpu_ids, job.started_at = JobState.RUNNING, list(start.gpu_ids), inp.now
        job.host, job.preemptible = start.host or job.host, False  # not stopped in its pass
        out.append(job)
    return out


def _preempt_for_waiting(inp: SchedulerInput, plan: Plan, rule: PreemptRule) -> None:
    candidates = [j for j in inp.running if j.state is JobState.RUNNING and j.preemptible]
    if not candidates:
        return
    lowest = max(j.priority.rank for j in candidates)
    # In queue order: the plan records reasons in the order the pass read the queue.
    waiting = [inp.pending.jobs[i] for i, r in plan.reasons.items() if r == Reason.RESOURCES]
    if not any(j.priority.rank < lowest for j in waiting):
        return
    allowed = None
    if len(inp.hosts) == 1:
        allowed = {j.id: allowed_cards(inp, j, inp.hosts[0]) for j in waiting}
    checkpoints = rule.checkpoints
    if rule.freeze is not None:  # a job that can be frozen loses no work
        lossless = freezable(candidates, inp, rule.freeze, rule.checkpoints)
        checkpoints = {**rule.checkpoints, **dict.fromkeys(lossless, inp.now)}
    decided = plan_preemptions(inp.host, waiting, [*inp.running, *_started(inp, plan)],
                               inp.now, rule.exempt, checkpoints, allowed=allowed)
    plan.preemptions, plan.preempt_notes = decided.preemptions, decided.notes
    if rule.freeze is not None and decided.preemptions:
        by_id = {j.id: j for j in candidates}
        victims = [by_id[v.job_id] for p in decided.preemptions for v in p.victims]
        plan.freezing = choose(victims, inp, rule.freeze, rule.checkpoints)
