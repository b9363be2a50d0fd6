"""The first-fit policy, from literals and from random jobs and cards (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import DepKind, Job, JobState, Reason, Tier
from gq.policy import Card, Host, Outcome, SchedulerInput, schedule
from tests.support.examples import examples

G = 1 << 30


def job(id, gpus=1, mem=None, cpus=1, tier=Tier.NORMAL, at=None, state=JobState.PENDING,
        deps=None, gpu_ids=()):
    return Job(id=id, user="u", command=["x"], cwd="/", gpus=gpus, mem=mem, cpus=cpus,
               priority=tier, submitted_at=float(id if at is None else at), state=state,
               deps=deps or {}, gpu_ids=list(gpu_ids))


def host(*cards_gb, cpus=64, external=None):
    external = external or {}
    return Host(cpus=cpus, cards=tuple(Card(i, gb * G, external.get(i, 0))
                                       for i, gb in enumerate(cards_gb)))


def plan_for(h, pending, running=(), outcomes=None):
    return schedule(SchedulerInput(h, list(pending), list(running), outcomes or {}, 100.0))


def test_whole_card_jobs_take_distinct_free_cards():
    plan = plan_for(host(80, 80, 80), [job(1, gpus=2), job(2), job(3)])
    starts = {s.job_id: s.gpu_ids for s in plan.starts}
    assert starts == {1: (0, 1), 2: (2,)}
    assert plan.reasons == {3: Reason.RESOURCES}


def test_memory_jobs_share_until_the_card_is_full():
    plan = plan_for(host(80), [job(1, mem=30 * G), job(2, mem=30 * G), job(3, mem=30 * G)])
    assert [s.job_id for s in plan.starts] == [1, 2]
    assert plan.reasons[3] == Reason.RESOURCES


def test_whole_card_job_never_shares_with_a_memory_job():
    running = [job(9, mem=1 * G, state=JobState.RUNNING, gpu_ids=[0])]
    plan = plan_for(host(80), [job(1)], running)
    assert plan.starts == [] and plan.reasons[1] == Reason.RESOURCES
    running = [job(9, state=JobState.RUNNING, gpu_ids=[0])]
    plan = plan_for(host(80), [job(1, mem=1 * G)], running)
    assert plan.starts == []


def test_external_memory_counts_and_unknown_fails_closed():
    h = host(80, 80, external={0: 60 * G, 1: None})
    plan = plan_for(h, [job(1, mem=30 * G), job(2, mem=10 * G), job(3)])
    assert {s.job_id: s.gpu_ids for s in plan.starts} == {2: (0,)}
    assert plan.reasons == {1: Reason.RESOURCES, 3: Reason.RESOURCES}


def test_order_is_tier_then_submit_time():
    pending = [job(1, tier=Tier.LOW, at=1), job(2, tier=Tier.HIGH, at=5), job(3, at=2)]
    plan = plan_for(host(80), pending)
    assert [s.job_id for s in plan.starts] == [2]
    assert plan.reasons == {1: Reason.RESOURCES, 3: Reason.RESOURCES}


def test_cpu_only_jobs_are_limited_by_cores():
    plan = plan_for(host(cpus=4), [job(1, gpus=0, cpus=3), job(2, gpus=0, cpus=2),
                                   job(3, gpus=0, cpus=1)])
    assert [(s.job_id, s.gpu_ids) for s in plan.starts] == [(1, ()), (3, ())]
    assert plan.reasons == {2: Reason.RESOURCES}


def test_dependencies():
    deps = {1: {DepKind.AFTER: [7]}, 2: {DepKind.AFTEROK: [7]}, 3: {DepKind.AFTERNOTOK: [7]},
            4: {DepKind.AFTEROK: [8]}}
    pending = [job(i, gpus=0, deps=d) for i, d in deps.items()]
    failed = {7: Outcome(JobState.FAILED, 1)}
    plan = plan_for(host(), pending, outcomes=failed)
    assert sorted(s.job_id for s in plan.starts) == [1, 3]
    assert plan.reasons == {2: Reason.DEPENDENCY_NEVER_SATISFIED, 4: Reason.DEPENDENCY}
    plan = plan_for(host(), pending, outcomes={7: Outcome(JobState.COMPLETED, 0)})
    assert sorted(s.job_id for s in plan.starts) == [1, 2]
    assert plan.reasons[3] == Reason.DEPENDENCY_NEVER_SATISFIED


def test_afterstart_waits_for_the_start_and_the_others_for_the_end():
    deps = {1: {DepKind.AFTERSTART: [7]}, 2: {DepKind.AFTER: [7]},
            3: {DepKind.AFTERSTART: [8]}}
    pending = [job(i, gpus=0, deps=d) for i, d in deps.items()]
    running = {7: Outcome(JobState.RUNNING, started_at=5.0)}  # started, not ended
    plan = plan_for(host(), pending, outcomes=running)
    assert [s.job_id for s in plan.starts] == [1]
    assert plan.reasons == {2: Reason.DEPENDENCY, 3: Reason.DEPENDENCY}
    cancelled = {8: Outcome(JobState.CANCELLED, ended_at=6.0)}  # never started: as Slurm's after
    assert [s.job_id for s in plan_for(host(), pending[2:], outcomes=cancelled).starts] == [3]


def test_held_jobs_wait_with_reason_held():
    plan = plan_for(host(80), [job(1, state=JobState.HELD)])
    assert plan.starts == [] and plan.reasons == {1: Reason.HELD}


def test_more_gpus_than_cards_and_no_cards():
    assert plan_for(host(80), [job(1, gpus=2)]).reasons == {1: Reason.RESOURCES}
    assert plan_for(host(), [job(1)]).reasons == {1: Reason.NO_GPUS}


# ---- invariants over random inputs -------------------------------------------------------

cards_st = st.lists(st.sampled_from([16, 24, 40, 80]), min_size=0, max_size=6)


@st.composite
def scenarios(draw):
    cards = draw(cards_st)
    n = draw(st.integers(0, 25))
    pending = []
    for i in range(1, n + 1):
        gpus = draw(st.integers(0, 3))
        mem = draw(st.one_of(st.none(), st.integers(1, 80).map(lambda g: g * G))) if gpus else None
        deps = {}
        if draw(st.booleans()) and i > 1:
            deps = {draw(st.sampled_from(list(DepKind))): [draw(st.integers(1, i - 1))]}
        pending.append(job(i, gpus=gpus, mem=mem, cpus=draw(st.integers(1, 4)),
                           tier=draw(st.sampled_from(list(Tier))), deps=deps))
    outcomes = {i: Outcome(draw(st.sampled_from([JobState.COMPLETED, JobState.FAILED])))
                for i in range(1, n + 1) if draw(st.booleans())}
    return host(*cards, cpus=draw(st.integers(1, 16))), pending, outcomes


@settings(max_examples=examples(300), deadline=None)
@given(scenarios())
def test_never_overcommits_and_never_starts_early(scenario):
    h, pending, outcomes = scenario
    plan = plan_for(h, pending, outcomes=outcomes)
    by_id = {j.id: j for j in pending}
    declared = {c.index: 0 for c in h.cards}
    whole = {c.index: 0 for c in h.cards}
    users = {c.index: 0 for c in h.cards}
    cpus = 0
    for s in plan.starts:
        j = by_id[s.job_id]
        assert len(s.gpu_ids) == j.gpus and len(set(s.gpu_ids)) == j.gpus
        cpus += j.cpus
        for i in s.gpu_ids:
            users[i] += 1
            if j.mem is None:
                whole[i] += 1
            else:
                declared[i] += j.mem
        for ids in j.deps.values():  # a dependency is never started early
            assert all(d in outcomes for d in ids)
    assert cpus <= h.cpus
    for c in h.cards:
        assert declared[c.index] <= c.memory_total  # never over-committed
        assert whole[c.index] == 0 or users[c.index] == 1  # whole cards never shared
    for j in pending:  # every job that waits says why
        assert (j.id in plan.reasons) != any(s.job_id == j.id for s in plan.starts)
