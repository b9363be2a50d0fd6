"""Victim selection (gq/policy/preemption.py), from literals and from random clusters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Job, JobState, Tier
from gq.policy import Card, Host
from gq.policy.placement import Capacity
from gq.policy.preemption import plan_preemptions
from tests.support.examples import examples

G = 1 << 30
NOW = 10_000.0
EXEMPT = 600.0
LOW, NORMAL, HIGH = Tier.LOW, Tier.NORMAL, Tier.HIGH


def waiting(id, tier=HIGH, gpus=1, mem=None, cpus=1):
    return Job(id=id, user="u", command=["x"], cwd="/", priority=tier, gpus=gpus, mem=mem,
               cpus=cpus, submitted_at=NOW - 1)


def running(id, cards, tier=LOW, mem=None, ran=3600.0, preemptible=True,
            state=JobState.RUNNING, host="", cpus=1):
    return Job(id=id, user="u", command=["x"], cwd="/", priority=tier, gpus=len(cards),
               mem=mem, cpus=cpus, state=state, gpu_ids=list(cards), started_at=NOW - ran,
               preemptible=preemptible, host=host)


def host(n=4, gb=80, cpus=64, name=""):
    return Host(cpus=cpus, cards=tuple(Card(i, gb * G) for i in range(n)), name=name)


def victims(plan):
    return {p.job_id: sorted(v.job_id for v in p.victims) for p in plan.preemptions}


def decide(waiting_jobs, holding, h=None, checkpoints=None):
    return plan_preemptions(h or host(), waiting_jobs, holding, NOW, EXEMPT, checkpoints)


def test_the_lowest_tier_goes_first():
    holding = [running(1, [0], NORMAL, ran=60 * 60), running(2, [1], LOW, ran=5 * 3600),
               running(3, [2], NORMAL), running(4, [3], NORMAL)]
    assert victims(decide([waiting(9)], holding)) == {9: [2]}


def test_then_the_least_work_since_the_last_start_or_checkpoint():
    holding = [running(1, [0], ran=7200), running(2, [1], ran=1800), running(3, [2], ran=3600),
               running(4, [3], ran=9000)]
    assert victims(decide([waiting(9)], holding)) == {9: [2]}
    # Job 4 ran longest but saved a checkpoint a minute ago: it loses the least.
    plan = decide([waiting(9)], holding, checkpoints={4: NOW - 60})
    assert victims(plan) == {9: [4]}
    assert plan.preemptions[0].victims[0].lost_seconds == 60


def test_work_lost_counts_cards_so_one_small_job_goes_before_a_big_one():
    holding = [running(1, [0, 1, 2], ran=1000), running(2, [3], ran=2000)]
    plan = decide([waiting(9)], holding)
    assert victims(plan) == {9: [2]}
    assert plan.preemptions[0].lost_card_seconds == 2000


def test_victims_that_turn_out_unneeded_are_dropped():
    # A 40G slice: card 0 has 30G free beside job 1 (50G), card 1 10G beside a job that stays
    # and job 2 (10G). Job 2 loses the least and is taken first, but freeing it leaves card 1
    # 20G short; job 1 is needed, and with it job 2 is not.
    holding = [running(1, [0], mem=50 * G, ran=3000), running(2, [1], mem=10 * G, ran=700),
               running(3, [1], mem=60 * G, ran=5000, preemptible=False)]
    plan = decide([waiting(9, mem=40 * G)], holding, h=host(2))
    assert victims(plan) == {9: [1]}
    from gq.policy.preemption import _greedy  # the greedy pass alone drops it too

    ready = sorted(holding[:2], key=lambda j: j.started_at, reverse=True)
    future = Capacity(host(2), holding)
    assert [j.id for j in _greedy(waiting(9, mem=40 * G), future, ready)] == [1]


def test_the_fewest_victims_among_equal_losses():
    # Two cards: two 1-card jobs or one 2-card job, all three with as much work lost (2,000
    # card-seconds either way); the single job is stopped.
    holding = [running(1, [0], ran=1000), running(2, [1], ran=1000), running(3, [2, 3],
                                                                         ran=1000)]
    assert victims(decide([waiting(9, gpus=2)], holding)) == {9: [3]}
    # With less lost by the pair, the pair goes.
    holding[2] = running(3, [2, 3], ran=1100)
    assert victims(decide([waiting(9, gpus=2)], holding)) == {9: [1, 2]}


def test_as_few_normal_jobs_as_possible_then_the_least_work():
    # For a 2-card high job: one normal job and one low job, or two normal jobs that lost less
    # in all. Normal-tier work goes last: one normal and one low are stopped.
    holding = [running(1, [0], NORMAL, ran=5000), running(2, [1], LOW, ran=5000),
               running(3, [2], NORMAL, ran=700), running(4, [3], NORMAL, ran=800)]
    assert victims(decide([waiting(9, gpus=2)], holding)) == {9: [2, 3]}


def test_exempt_jobs_are_untouched_and_the_note_says_until_when():
    holding = [running(1, [0, 1, 2, 3], ran=120)]  # started two minutes ago
    plan = decide([waiting(9)], holding)
    assert plan.preemptions == []
    note = plan.notes[9]
    assert "1" in note.text and "exempt" in note.text
    assert note.exempt_until == NOW - 120 + EXEMPT
    # An exempt job is passed over for one that is not, even if that one lost more.
    holding = [running(1, [0], ran=120), running(2, [1], ran=5000), running(3, [2, 3],
                                                                          tier=NORMAL)]
    assert victims(decide([waiting(9)], holding)) == {9: [2]}


def test_only_preemptible_jobs_of_a_lower_tier_are_stopped():
    holding = [running(1, [0], LOW, preemptible=False), running(2, [1], HIGH),
               running(3, [2], NORMAL), running(4, [3], NORMAL, preemptible=True)]
    assert victims(decide([waiting(9, tier=NORMAL)], holding)) == {}
    assert victims(decide([waiting(9, tier=HIGH)], holding)) == {9: [4]}
    # A low job never preempts, and a normal one never stops a normal one.
    assert decide([waiting(8, tier=LOW)], holding).notes == {}


def test_no_one_is_stopped_when_even_all_candidates_would_not_make_room():
    holding = [running(1, [0]), running(2, [1], NORMAL, preemptible=False),
               running(3, [2], NORMAL, preemptible=False), running(4, [3], HIGH)]
    plan = decide([waiting(9, gpus=2)], holding)
    assert plan.preemptions == [] and "would not free enough" in plan.notes[9].text


def test_jobs_already_being_stopped_count_as_gone():
    holding = [running(1, [0], state=JobState.PREEMPTING), running(2, [1]), running(3, [2]),
               running(4, [3])]
    plan = decide([waiting(9)], holding)
    assert plan.preemptions == [] and "being stopped" in plan.notes[9].text
    # ...but only once: a second waiting job does need a victim.
    assert victims(decide([waiting(9), waiting(10)], holding)) == {10: [4]}


def test_several_waiting_jobs_do_not_claim_the_same_room():
    holding = [running(i, [i], ran=1000 * (i + 1)) for i in range(4)]
    plan = decide([waiting(9), waiting(10, gpus=2), waiting(11, tier=NORMAL)], holding)
    assert victims(plan) == {9: [0], 10: [1, 2], 11: [3]}


def test_cpu_cores_are_freed_too():
    holding = [running(1, [], cpus=6, ran=900), running(2, [0], cpus=2, ran=800)]
    plan = decide([waiting(9, gpus=0, cpus=4)], holding, h=host(1, cpus=8))
    assert victims(plan) == {9: [1]}


def test_on_a_cluster_the_host_that_loses_least_is_chosen():
    a, b = host(2, name="a"), host(2, name="b")
    holding = [running(1, [0], ran=5000, host="a"), running(2, [1], ran=5000, host="a"),
               running(3, [0], ran=800, host="b"), running(4, [1], ran=900, host="b")]
    plan = plan_preemptions((a, b), [waiting(9)], holding, NOW, EXEMPT)
    assert victims(plan) == {9: [3]} and plan.preemptions[0].host == "b"


# ---- invariants, from random hosts and jobs ------------------------------------------------

@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 4))
    h = host(n, gb=80)
    holding, free = [], {i: 80 for i in range(n)}
    for k in range(draw(st.integers(0, 6))):
        card = draw(st.integers(0, n - 1))
        if draw(st.booleans()) and free[card] == 80:
            mem, free[card] = None, 0
        else:
            gb = draw(st.sampled_from([10, 20, 40]))
            if free[card] < gb:
                continue
            mem, free[card] = gb * G, free[card] - gb
        holding.append(running(
            k + 1, [card], draw(st.sampled_from(list(Tier))), mem=mem,
            ran=draw(st.sampled_from([60.0, 700.0, 3000.0])), preemptible=draw(st.booleans()),
            state=draw(st.sampled_from([JobState.RUNNING] * 4 + [JobState.CANCELLED])),
        ))
    wants = [waiting(100 + i, draw(st.sampled_from([HIGH, NORMAL])),
                     gpus=draw(st.integers(1, n)),
                     mem=draw(st.sampled_from([None, 30 * G, 70 * G])))
             for i in range(draw(st.integers(1, 3)))]
    return h, holding, sorted(wants, key=lambda w: w.priority.rank)  # in queue order


@settings(max_examples=examples(300), deadline=None)
@given(scenarios())
def test_victims_are_allowed_needed_and_enough(scenario):
    h, holding, wants = scenario
    plan = plan_preemptions(h, wants, holding, NOW, EXEMPT)
    by_id = {j.id: j for j in holding}
    gone = {j.id for j in holding if j.state != JobState.RUNNING}
    stopped = set()
    future = Capacity(h, holding)
    for j in holding:
        if j.id in gone:
            future.release(j, j.gpu_ids)
    served = {p.job_id: p for p in plan.preemptions}
    for w in wants:
        p = served.get(w.id)
        if p is None:
            note = plan.notes.get(w.id)
            if note is not None and note.text == "jobs being stopped will free what it needs":
                cards, _ = future.fit(w)
                assert cards is not None
                future.take(w, cards)
            continue
        ids = [v.job_id for v in p.victims]
        assert ids and not set(ids) & stopped, "a job is stopped twice"
        for i in ids:
            v = by_id[i]
            assert v.preemptible and v.state == JobState.RUNNING
            assert v.priority.rank > w.priority.rank
            assert NOW - v.started_at >= EXEMPT
        for i in ids:  # minimal: without any one of them, it would not fit
            trial = future.copy()
            for other in ids:
                if other != i:
                    trial.release(by_id[other], by_id[other].gpu_ids)
            assert trial.fit(w)[0] is None, f"victim {i} was not needed"
        for i in ids:
            future.release(by_id[i], by_id[i].gpu_ids)
        cards, _ = future.fit(w)
        assert cards is not None, "the victims do not make room"
        future.take(w, cards)
        stopped |= set(ids)
