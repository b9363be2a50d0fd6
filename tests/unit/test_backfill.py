"""Best fit and backfill with reservations: big jobs never starve behind small ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Job, JobState, Reason, Tier
from gq.policy import Card, Host, PendingQueue, SchedulerInput, schedule
from gq.policy.placement import Capacity
from tests.support.examples import examples

G = 1 << 30
H = 3600.0


def job(id, gpus=1, mem=None, cpus=1, limit=None, at=None, started=None, gpu_ids=(),
        tier=Tier.NORMAL):
    state = JobState.RUNNING if started is not None else JobState.PENDING
    return Job(id=id, user="u", command=["x"], cwd="/", gpus=gpus, mem=mem, cpus=cpus,
               time_limit=limit, submitted_at=float(id if at is None else at), state=state,
               started_at=started, gpu_ids=list(gpu_ids), priority=tier)


def host(n_cards=2, gb=80, cpus=64):
    return Host(cpus=cpus, cards=tuple(Card(i, gb * G) for i in range(n_cards)))


def run(h, pending, running=(), now=0.0, **kw):
    return schedule(SchedulerInput(h, list(pending), list(running), {}, now, **kw))


def test_best_fit_keeps_whole_cards_free():
    running = [job(9, mem=50 * G, started=0, gpu_ids=[1])]
    plan = run(host(2), [job(1, mem=20 * G)], running)
    assert plan.starts[0].gpu_ids == (1,)  # the fuller card, not the empty one


def test_the_head_job_gets_a_reservation_and_only_short_jobs_backfill():
    running = [job(9, limit=1 * H, started=0, gpu_ids=[0])]
    big, long_small, short_small = job(1, gpus=3), job(2), job(3, limit=0.5 * H)
    plan = run(host(3), [big, long_small, short_small], running, now=60)
    assert plan.forecasts[1].start == 1 * H and plan.forecasts[1].gpu_ids == (0, 1, 2)
    assert plan.reasons[1] == Reason.RESOURCES
    assert plan.reasons[2] == Reason.PRIORITY and "job 1" in plan.shortfalls[2]
    assert [s.job_id for s in plan.starts] == [3]


def test_a_job_on_cards_the_reservation_does_not_need_may_run_long():
    running = [job(9, cpus=3, limit=1 * H, started=0, gpu_ids=[0])]
    # Job 1 waits for cores; at 1h it gets card 0 and leaves 2 cores spare.
    plan = run(host(2, cpus=4), [job(1, cpus=2), job(2)], running)
    assert plan.forecasts[1].gpu_ids == (0,)
    assert [(s.job_id, s.gpu_ids) for s in plan.starts] == [(2, (1,))]


def test_memory_backfill_uses_the_reservation_slack():
    running = [job(9, mem=60 * G, limit=1 * H, started=0, gpu_ids=[0])]
    # Job 1 needs 70G on card 0 at 1h; 10G are left over then for a long job, not 20G.
    plan = run(host(1), [job(1, mem=70 * G), job(2, mem=20 * G), job(3, mem=10 * G)], running)
    assert plan.forecasts[1].start == 1 * H
    assert plan.reasons[2] == Reason.PRIORITY
    assert [s.job_id for s in plan.starts] == [3]


def test_no_reservation_when_memory_outside_gq_never_frees():
    h = Host(cpus=8, cards=(Card(0, 80 * G, external_used=70 * G),))
    plan = run(h, [job(1, mem=20 * G), job(2, mem=5 * G)])
    assert 1 not in plan.forecasts and plan.reasons[1] == Reason.RESOURCES
    assert [s.job_id for s in plan.starts] == [2]


@pytest.mark.parametrize("stream_user", [
    # Its own user: the small jobs rank above it by length only.
    lambda n: "u",
    # Every small job from a user who has used nothing, the big one from the heaviest user:
    # fair share (weight 1) outweighs anything age (0.25) can add, so without the rule that an
    # overdue job goes first it would wait for ever.
    lambda n: f"fresh{n}",
], ids=["same-user", "lighter-users"])
def test_a_big_job_does_not_starve_behind_a_stream_of_small_ones(stream_user):
    """Replay: 4 cards, one-card jobs with 1h limits arriving every 10 minutes, for ever, and
    ranking above it; a 4-card job queued at t=5m with a 2h limit must start once it has
    waited its own limit and the jobs running then have ended."""
    h = host(4)
    usage = {"u": 1000 * H}
    running: list[Job] = []
    pending: list[Job] = [job(1000, gpus=4, limit=2 * H, at=300)]
    next_id, big_started = 1, None
    for step in range(0, 60):
        now = step * 600.0
        running = [j for j in running if j.started_at + j.time_limit > now]
        small = job(next_id, limit=1 * H, at=now)
        small.user = stream_user(next_id)
        pending.append(small)
        next_id += 1
        plan = run(h, pending, running, now=now, usage=usage)
        for s in plan.starts:
            j = next(p for p in pending if p.id == s.job_id)
            pending.remove(j)
            j.started_at, j.gpu_ids, j.state = now, list(s.gpu_ids), JobState.RUNNING
            running.append(j)
            if j.id == 1000:
                big_started = now
        if big_started is not None:
            break
    assert big_started is not None and big_started <= 300 + 2 * H + 1 * H + 600


# ---- the invariant, over random inputs -----------------------------------------------------

@st.composite
def scenarios(draw):
    n_cards = draw(st.integers(1, 4))
    h = host(n_cards, cpus=draw(st.integers(2, 12)))
    running, pending = [], []
    free_cards = list(range(n_cards))
    for i in range(draw(st.integers(0, n_cards))):
        card = free_cards.pop(0)
        mem = draw(st.sampled_from([None, 20 * G, 40 * G]))
        running.append(job(100 + i, mem=mem, limit=draw(st.sampled_from([None, H, 3 * H])),
                           started=0, gpu_ids=[card]))
    for i in range(1, draw(st.integers(1, 12)) + 1):
        gpus = draw(st.integers(0, n_cards))
        mem = draw(st.sampled_from([None, 10 * G, 30 * G, 70 * G])) if gpus else None
        pending.append(job(i, gpus=gpus, mem=mem, cpus=draw(st.integers(1, 3)),
                           limit=draw(st.sampled_from([None, 0.5 * H, 2 * H, 30 * H])),
                           tier=draw(st.sampled_from(list(Tier)))))
    # Learned run times (EASY++): some jobs, declared or not, are predicted to run less.
    predicted = {}
    for j in running + pending:
        seconds = draw(st.sampled_from([None, None, 60.0, 0.25 * H, 3 * H]))
        if seconds is not None:
            predicted[j.id] = min(seconds, j.time_limit or seconds)
    return h, running, pending, predicted


@settings(max_examples=examples(300), deadline=None)
@given(scenarios())
def test_backfill_never_delays_a_reservation(scenario):
    """If every job ends when the plan expects (the smaller of its --time and its predicted
    run time, else the default), no start of the pass delays a reservation."""
    h, running, pending, predicted = scenario
    now, default = 600.0, 24 * H

    def planned(j):
        return predicted.get(j.id) or j.time_limit or default

    plan = run(h, pending, running, now=now, default_limit=default, predicted=predicted)
    by_id = {j.id: j for j in pending}
    started = [(by_id[s.job_id], s.gpu_ids, now + planned(by_id[s.job_id]))
               for s in plan.starts]
    held = [(j, tuple(j.gpu_ids), max((j.started_at + planned(j)), now + 60))
            for j in running]
    earlier = []
    for job_id, forecast in plan.forecasts.items():  # in queue order: dicts keep it
        cap = Capacity(h, [])
        for j, cards, end in held + started:
            if end > forecast.start:  # still holding resources when the reservation begins
                cap.take(j, cards)
        for j, cards in earlier:
            cap.take(j, cards)
        reserved = by_id[job_id]
        assert reserved.cpus <= cap.cpus_free
        for i in forecast.gpu_ids:
            card = cap.cards[i]
            assert (not card.jobs) if reserved.mem is None else card.free >= reserved.mem
        earlier.append((reserved, forecast.gpu_ids))


def test_multi_card_jobs_stay_within_linked_cards():
    islands = (0, 0, 1, 1, 1, 1)  # a pair and a quad
    h = Host(cpus=64, cards=tuple(Card(i, 80 * G, 0, isl) for i, isl in enumerate(islands)))
    plan = run(h, [job(1, gpus=2), job(2, gpus=4)])
    assert {s.job_id: s.gpu_ids for s in plan.starts} == {1: (0, 1), 2: (2, 3, 4, 5)}
    busy = [job(9, started=0, gpu_ids=[0])]  # the pair is broken: 2 cards come from the quad
    plan = run(h, [job(1, gpus=2)], busy)
    assert plan.starts[0].gpu_ids == (2, 3)
    spread = [job(8, started=0, gpu_ids=[2]), job(9, started=0, gpu_ids=[4])]
    plan = run(h, [job(1, gpus=4)], spread)  # no island has 4 free: any 4 will do
    assert plan.starts[0].gpu_ids == (0, 1, 3, 5)


def test_a_cluster_places_jobs_within_one_host_and_reserves_where_earliest():
    a = Host(cpus=8, cards=(Card(0, 80 * G), Card(1, 80 * G)), name="a")
    b = Host(cpus=8, cards=(Card(0, 80 * G), Card(1, 80 * G)), name="b")
    busy_a = job(9, limit=1 * H, started=0, gpu_ids=[0])
    busy_a.host = "a"
    plan = schedule(SchedulerInput((a, b), [job(1, gpus=2), job(2)], [busy_a], {}, 0))
    assert [(s.job_id, s.host, s.gpu_ids) for s in plan.starts] == [(1, "b", (0, 1)),
                                                                       (2, "a", (1,))]
    late_b = job(8, gpus=2, limit=5 * H, started=0, gpu_ids=[0, 1])
    late_b.host = "b"
    plan = schedule(SchedulerInput((a, b), [job(1, gpus=2), job(2)], [busy_a, late_b], {}, 0))
    assert plan.forecasts[1].host == "a" and plan.forecasts[1].start == 1 * H
    assert plan.reasons[2] == Reason.PRIORITY  # card a:1 is reserved for job 1 from 1h
    plan = schedule(SchedulerInput((a, b), [job(1, gpus=3)], [], {}, 0))
    assert plan.reasons[1] == Reason.RESOURCES and plan.starts == []


def test_the_assumed_limit_can_depend_on_the_tier():
    running = [job(9, started=0, gpu_ids=[0], tier=Tier.LOW)]  # no --time: low runs 3 days
    plan = run(host(1), [job(1)], running, tier_limits={"low": 72 * H})
    assert plan.forecasts[1].start == 72 * H
    plan = run(host(1), [job(1)], running)
    assert plan.forecasts[1].start == 24 * H



def explained_and_quick(pending, cards, **kw):
    """The plans of a pass that explains and of one that stops reading early, on one queue."""
    plans = []
    for explain in (True, False):
        queue = PendingQueue()
        for j in pending:
            queue.add(j)
        plans.append(schedule(SchedulerInput(host(cards), queue, [], {}, 0.0, **kw), explain))
    return plans


@pytest.mark.parametrize("reservations", [1, 8])
def test_a_pass_that_stops_early_reads_again_a_shape_that_a_start_let_fit_elsewhere(
        reservations):
    # Job 3 fits first on card 2, which job 2's reservation needs whole; job 4 then takes a
    # slice of card 2, so job 5, of job 3's shape, fits first on card 3 and starts there.
    pending = [job(1, gpus=2, limit=600), job(2, gpus=3, mem=20 * G, limit=600),
               job(3, limit=H), job(4, mem=20 * G), job(5)]
    explained, quick = explained_and_quick(pending, 4, max_reservations=reservations)
    assert explained.forecasts[2].gpu_ids == (0, 1, 2)
    assert [(s.job_id, s.gpu_ids) for s in quick.starts] == [(1, (0, 1)), (4, (2,)), (5, (3,))]
    assert (explained.starts, explained.forecasts) == (quick.starts, quick.forecasts)


def test_a_pass_that_stops_early_reserves_for_a_job_that_a_start_left_nowhere_to_fit():
    # Job 4 would delay job 3's reservation on card 5; job 5 then takes card 5 (a slice), so
    # job 6, of job 4's shape, fits nowhere and is reserved a card: the quick pass reads it.
    pending = [job(1, gpus=2, limit=600), job(2, gpus=3, limit=600),
               job(3, gpus=3, mem=20 * G, limit=600), job(4, limit=H), job(5, mem=20 * G),
               job(6)]
    explained, quick = explained_and_quick(pending, 6)
    assert [s.job_id for s in quick.starts] == [1, 2, 5]
    assert quick.forecasts[6].gpu_ids == (2,)
    assert (explained.starts, explained.forecasts) == (quick.starts, quick.forecasts)
