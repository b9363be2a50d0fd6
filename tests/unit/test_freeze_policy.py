"""Freezing in the policy (gq/policy/freezing.py through decide): which victims are frozen and
why not, the host memory frozen jobs may hold, and where frozen jobs are thawed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Job, JobState, Tier
from gq.policy import Card, Host, PreemptRule, SchedulerInput, decide
from gq.policy.freezing import FreezeRule, JobFacts, thaw_request, why_not
from gq.policy.placement import Capacity
from tests.support.examples import examples

G = 1 << 30
NOW = 10_000.0
LOW, NORMAL, HIGH = Tier.LOW, Tier.NORMAL, Tier.HIGH
AUTO = {"low": "auto", "normal": "auto", "high": "auto"}


def job(id, tier=HIGH, gpus=1, mem=None, state=JobState.PENDING, cards=(), ran=3600.0,
        host="", ram=None, **kw):
    return Job(id=id, user="u", command=["x"], cwd="/", priority=tier, gpus=gpus, mem=mem,
               state=state, gpu_ids=list(cards), host=host, ram=ram,
               started_at=NOW - ran if state != JobState.PENDING else None,
               submitted_at=NOW - ran - 10, preemptible=tier == LOW, **kw)


def running(id, cards, tier=LOW, **kw):
    return job(id, tier, gpus=len(cards), state=JobState.RUNNING, cards=cards, **kw)


def frozen(id, card, tier=LOW, mem=None, held=30 * G, name="H100", **kw):
    return job(id, tier, mem=mem, state=JobState.FROZEN, host_mem=held,
               frozen_cards=[{"index": card, "name": name, "mem": held}], **kw)


def host(models=("H100",) * 2, gb=80, ram=None, name=""):
    return Host(cpus=64, ram=ram, cards=tuple(Card(i, gb * G, model=m)
                                              for i, m in enumerate(models)), name=name)


def facts(*ids, processes=1, mem=30 * G, problem=None):
    return {i: JobFacts(processes, mem, problem) for i in ids}


def plan_of(pending, running_jobs, frozen_jobs=(), h=None, rule=None, checkpoints=None):
    inp = SchedulerInput(h or host(), list(pending), list(running_jobs), now=NOW,
                         frozen=list(frozen_jobs))
    return decide(inp, preempt=PreemptRule(0.0, checkpoints or {}, rule))


def test_a_lone_process_on_one_card_is_frozen_instead_of_signalled():
    rule = FreezeRule(AUTO, freeze_ram=100 * G, facts=facts(1))
    plan = plan_of([job(9)], [running(1, [0]), running(2, [1])], rule=rule)
    assert [[v.job_id for v in p.victims] for p in plan.preemptions] == [[1]]
    choice = plan.freezing[1]
    assert choice.freeze and choice.host_mem == 30 * G
    assert choice.reason == "frozen to host memory (30.0 GiB)"


def test_why_a_victim_takes_the_signal_path_instead():
    rule = FreezeRule({"low": "auto"}, facts={**facts(1), **facts(2, processes=3),
                                              **facts(3, processes=0),
                                              **facts(4, problem="persistence mode is off"),
                                              **facts(5, mem=None)})
    cases = [
        (running(1, [0], preempt_mode="signal"), "its preempt mode is signal"),
        (running(1, [0], preempt_mode="freeze"), None),
        (running(1, [0, 1]), "it holds 2 cards: only a single process on one card is frozen"),
        (running(2, [0]), "3 of its processes use its card (multi-process, NCCL): only a "
                          "single process is frozen"),
        (running(3, [0]), "no process of it holds memory on its card: nothing to freeze"),
        (running(4, [1]), "GPU 1: persistence mode is off"),
        (running(5, [0]), "how much memory it holds on its card is not known"),
        (running(6, [0]), "its processes on its card are not known yet"),
    ]
    for victim, why in cases:
        assert why_not(victim, rule, checkpointed=False) == why, victim
    assert why_not(running(1, [0]), rule, checkpointed=True) == (
        "it saves checkpoints, so auto sends it the signal")
    assert why_not(running(1, [0], preempt_mode="freeze"), rule, checkpointed=True) is None
    assert why_not(running(1, [0]), FreezeRule(facts=facts(1)), False) == (
        "its preempt mode is signal")  # no [preemption] mode: signal


def test_frozen_jobs_never_hold_more_host_memory_than_freeze_ram():
    rule = FreezeRule(AUTO, freeze_ram=70 * G, facts=facts(1, 2, 3, mem=30 * G))
    already = frozen(5, 1, held=30 * G)  # 40G left
    plan = plan_of([job(9, NORMAL, gpus=3)], [running(1, [0]), running(2, [2]), running(3, [3])],
                   [already], h=host(("H100",) * 4), rule=rule)
    chosen = {v.job_id for p in plan.preemptions for v in p.victims}
    assert len(chosen) == 2 and plan.thaws == []  # job 5 would delay job 9 on card 1
    frozen_ids = [i for i in chosen if plan.freezing[i].freeze]
    signalled = [i for i in chosen if not plan.freezing[i].freeze]
    assert len(frozen_ids) == len(signalled) == 1
    assert plan.freezing[signalled[0]].reason == (
        "its 30.0 GiB on the card do not fit in the host memory [preemption] freeze_ram leaves "
        "(10.0 GiB)")


def test_the_hosts_free_memory_bounds_a_freeze_too():
    rule = FreezeRule(AUTO, freeze_ram=None, host_free=20 * G, facts=facts(1))
    plan = plan_of([job(9)], [running(1, [0], ran=60), running(2, [1])], rule=rule)
    assert plan.freezing[1].reason == (
        "its 30.0 GiB on the card do not fit in the host's free memory (20.0 GiB)")


def test_a_job_that_can_be_frozen_loses_nothing_so_it_goes_first():
    rule = FreezeRule(AUTO, freeze_ram=100 * G, facts={**facts(1), **facts(2, processes=2)})
    # Job 2 ran for a minute, job 1 for hours; but job 1 can be frozen and loses nothing.
    plan = plan_of([job(9)], [running(1, [0], ran=7200), running(2, [1], ran=60)], rule=rule)
    assert [v.job_id for v in plan.preemptions[0].victims] == [1]
    without = plan_of([job(9)], [running(1, [0], ran=7200), running(2, [1], ran=60)])
    assert [v.job_id for v in without.preemptions[0].victims] == [2]


def test_a_frozen_job_is_thawed_on_its_card_once_it_is_free():
    plan = plan_of([], [running(1, [1])], [frozen(5, 0)])
    assert [(s.job_id, s.gpu_ids) for s in plan.thaws] == [(5, (0,))]
    assert plan.starts == [] and plan.reasons == {}


def test_it_waits_while_its_card_is_taken_and_only_its_model_may_stand_in():
    h = host(("H100", "A100"))
    plan = plan_of([], [running(1, [0])], [frozen(5, 0)], h=h,
                   rule=FreezeRule(remap=True))
    assert plan.thaws == [] and plan.thaw_reasons == {5: "Resources"}
    h = host(("H100", "H100"))
    assert plan_of([], [running(1, [0])], [frozen(5, 0)], h=h).thaws == []  # no remap
    plan = plan_of([], [running(1, [0])], [frozen(5, 0)], h=h, rule=FreezeRule(remap=True))
    assert [(s.job_id, s.gpu_ids) for s in plan.thaws] == [(5, (1,))]


def test_a_slice_is_thawed_only_where_its_frozen_memory_fits():
    share = running(1, [0], mem=60 * G)
    plan = plan_of([], [share], [frozen(5, 0, mem=10 * G, held=30 * G)])
    assert plan.thaws == []  # 20G free, its --mem 10G but it held 30G
    plan = plan_of([], [share], [frozen(5, 0, mem=10 * G, held=15 * G)])
    assert [(s.job_id, s.gpu_ids) for s in plan.thaws] == [(5, (0,))]


def test_higher_tiers_go_first_and_lower_ones_after():
    plan = plan_of([job(9, HIGH), job(8, LOW)], [], [frozen(5, 0, NORMAL)], h=host(("H100",)))
    assert [s.job_id for s in plan.starts] == [9] and plan.thaws == []
    plan = plan_of([job(8, LOW)], [], [frozen(5, 0, NORMAL)], h=host(("H100",)))
    assert [s.job_id for s in plan.thaws] == [5] and plan.starts == []
    assert plan.reasons == {8: "Resources"}


def test_a_frozen_job_never_preempts_to_be_thawed():
    rule = FreezeRule(AUTO, freeze_ram=100 * G, facts=facts(1))
    plan = plan_of([], [running(1, [0])], [frozen(5, 0, NORMAL)], h=host(("H100",)),
                   rule=rule)
    assert plan.preemptions == [] and plan.thaw_reasons == {5: "Resources"}


def test_host_memory_held_by_frozen_jobs_is_not_given_to_others():
    h = host(ram=100 * G)
    plan = plan_of([job(9, ram=60 * G)], [running(1, [0])], [frozen(5, 0, held=50 * G)], h=h)
    assert plan.starts == [] and plan.reasons[9] == "Resources"
    plan = plan_of([job(9, ram=40 * G)], [running(1, [0])], [frozen(5, 0, held=50 * G)], h=h)
    assert [s.job_id for s in plan.starts] == [9]


def test_in_a_cluster_a_frozen_job_is_thawed_on_its_own_host():
    hosts = (host(("H100",), name="a"), host(("H100",), name="b"))
    inp = SchedulerInput(hosts, [], [running(1, [0], host="a")], now=NOW,
                         frozen=[frozen(5, 0, host="a")])
    assert decide(inp).thaws == []  # host b's card 0 is free, but it is not its host
    inp = SchedulerInput(hosts, [], [running(1, [0], host="b")], now=NOW,
                         frozen=[frozen(5, 0, host="a")])
    assert [(s.job_id, s.host) for s in decide(inp).thaws] == [(5, "a")]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(5, 70)), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["H100", "A100"]),
                          st.integers(1, 70), st.booleans()), max_size=4),
       st.booleans())
def test_thaws_never_overcommit_a_card_nor_leave_their_model(slices, frozen_specs, remap):
    models = ("H100", "H100", "A100", "A100")
    h = host(models)
    holding = [running(i + 1, [card], mem=gb * G) for i, (card, gb) in enumerate(slices)]
    ice = [frozen(100 + i, card, mem=gb * G if sliced else None, held=gb * G,
                  name=models[card])
           for i, (card, _m, gb, sliced) in enumerate(frozen_specs)]
    plan = plan_of([], holding, ice, h=h, rule=FreezeRule(remap=remap))
    cap = Capacity(h, holding)
    by_id = {j.id: j for j in ice}
    for start in plan.thaws:
        was = by_id[start.job_id]
        (card,) = start.gpu_ids
        assert models[card] == was.frozen_cards[0]["name"]
        assert remap or card == was.frozen_cards[0]["index"]
        request = thaw_request(was, h, remap)
        assert cap.fit(request, frozenset({card}))[0] == (card,)
        cap.take(request, (card,))


def test_no_thaw_takes_what_jobs_being_stopped_free_for_others():
    stopping = job(1, LOW, mem=20 * G, state=JobState.PREEMPTING, cards=[0])
    plan = plan_of([], [stopping], [frozen(5, 1, mem=20 * G, held=20 * G)])
    assert plan.thaws == []  # card 1 is free, but job 1 is being stopped for someone
    plan = plan_of([], [running(1, [0], mem=20 * G)], [frozen(5, 1, mem=20 * G, held=20 * G)])
    assert [s.job_id for s in plan.thaws] == [5]
