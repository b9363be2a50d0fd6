"""The queue's order (length and overdue jobs), the kept queue of the replay, and the pass that
stops reading the queue early: each must decide exactly what the plain pass decides."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gq.sim.replay as sim
from gq.model import DepKind, Job, JobState, Reason, Tier
from gq.policy import Card, FairShareConfig, Host, Outcome, PendingQueue, SchedulerInput, schedule
from gq.policy.fairshare import shortness
from gq.sim.cluster import parse_cluster
from gq.sim.traces import TraceJob
from tests.support.examples import examples

H, G = 3600.0, 1 << 30


def job(id, user="ann", tier=Tier.NORMAL, at=0.0, gpus=1, limit=None, deps=None, held=False,
        started=None, gpu_ids=()):
    state = JobState.HELD if held else JobState.PENDING
    if started is not None:
        state = JobState.RUNNING
    return Job(id=id, user=user, command=["x"], cwd="/", priority=tier, submitted_at=at,
               gpus=gpus, time_limit=limit, deps=deps or {}, state=state, started_at=started,
               gpu_ids=list(gpu_ids))


def one_card() -> Host:
    return Host(cpus=64, cards=(Card(0, 80 * G),))


def test_shorter_jobs_rank_higher_within_a_tier_and_the_score_says_so():
    pending = [job(1, limit=20 * H, at=0), job(2, limit=10 * 60, at=5)]
    plan = schedule(SchedulerInput(one_card(), pending, [], {}, 60.0))
    assert [s.job_id for s in plan.starts] == [2]
    assert plan.scores[2].short > plan.scores[1].short
    assert plan.scores[2].total - plan.scores[1].total == pytest.approx(
        0.25 * (shortness(600, FairShareConfig()) - shortness(20 * H, FairShareConfig())),
        abs=1e-4)  # less 5 s of age
    off = FairShareConfig(weight_short=0.0)  # the formula: age alone decides here
    plan = schedule(SchedulerInput(one_card(), pending, [], {}, 60.0, fairshare=off))
    assert [s.job_id for s in plan.starts] == [1]


def test_shortness_is_log_scaled_between_a_minute_and_a_week():
    cfg = FairShareConfig()
    assert shortness(30, cfg) == 1.0 and shortness(8 * 86400, cfg) == 0.0
    assert 0 < shortness(7 * 86400 / 2, cfg) < shortness(H, cfg) < shortness(120, cfg) < 1


def test_a_job_that_waited_longer_than_its_limit_goes_first_in_its_tier():
    usage = {"ann": 100 * H}  # ann is the heavy user: bob ranks above her by fair share
    pending = [job(1, "ann", at=0, limit=1 * H), job(2, "bob", at=100, limit=1 * H)]
    early = schedule(SchedulerInput(one_card(), pending, [], {}, 0.5 * H, usage=usage))
    assert [s.job_id for s in early.starts] == [2]
    late = schedule(SchedulerInput(one_card(), pending, [], {}, 1.5 * H, usage=usage))
    assert [s.job_id for s in late.starts] == [1]  # overdue: waited 1.5h for a 1h job
    # ...but not ahead of a higher tier, and a held job is passed over.
    urgent = job(3, "bob", Tier.HIGH, at=1 * H, limit=1 * H)
    plan = schedule(SchedulerInput(one_card(), [*pending, urgent], [], {}, 1.5 * H, usage=usage))
    assert [s.job_id for s in plan.starts] == [3]
    pending[0].state = JobState.HELD
    plan = schedule(SchedulerInput(one_card(), pending, [], {}, 1.5 * H, usage=usage))
    assert [s.job_id for s in plan.starts] == [2] and plan.reasons[1] == Reason.HELD


# ---- a kept queue orders like a fresh one ---------------------------------------------------

ops = st.lists(st.tuples(
    st.sampled_from(["add", "add", "add", "remove", "rescore"]),
    st.integers(0, 5000), st.sampled_from(list(Tier)), st.sampled_from(["ann", "bob", "cy"]),
    st.sampled_from([None, 60.0, H, 30 * H]), st.booleans(),
), min_size=1, max_size=40)


@settings(max_examples=examples(150), deadline=None)
@given(ops)
def test_a_kept_queue_orders_like_one_sorted_afresh(steps):
    kept, next_id, now, usage = PendingQueue(), 1, 0.0, {}
    outcomes = {}
    for op, at, tier, user, limit, with_dep in steps:
        now += 7.0
        if op == "add":
            deps = {DepKind.AFTER: [max(next_id - 1, 1)]} if with_dep else None
            kept.add(job(next_id, user, tier, at=float(at), limit=limit, deps=deps))
            outcomes[next_id] = Outcome(JobState.COMPLETED, 0, float(at) + 50)
            next_id += 1
        elif op == "remove" and len(kept):
            kept.remove(sorted(j.id for j in kept)[at % len(kept)])
        elif op == "rescore":
            usage = {user: float(at) * 100}  # a new dict: the caller recalculated
        inp = SchedulerInput(one_card(), kept, [], outcomes, now, usage=usage, score_time=now - 3)
        fresh = SchedulerInput(one_card(), list(kept), [], outcomes, now, usage=usage,
                               score_time=now - 3)
        could_run = lambda j: True  # noqa: E731
        assert [j.id for j in kept.ordered(inp, {}, could_run)] == \
            [j.id for j in fresh.pending.ordered(fresh, {}, could_run)]


# ---- the pass that stops early ----------------------------------------------------------------

@st.composite
def clusters(draw):
    hosts = tuple(
        Host(cpus=draw(st.integers(2, 8)), name=f"h{n}",
             cards=tuple(Card(i, 80 * G) for i in range(draw(st.integers(1, 3)))))
        for n in range(draw(st.integers(1, 3))))
    running, busy = [], set()
    for i in range(draw(st.integers(0, 5))):
        h = draw(st.sampled_from(hosts))
        free = [c.index for c in h.cards if (h.name, c.index) not in busy]
        if not free:
            continue
        busy.add((h.name, free[0]))
        r = job(100 + i, started=0, gpu_ids=[free[0]], limit=draw(st.sampled_from([None, H, 5 * H])))
        r.host = h.name
        running.append(r)
    pending = [job(i, draw(st.sampled_from(["ann", "bob"])), draw(st.sampled_from(list(Tier))),
                   at=float(draw(st.integers(0, 3000))), gpus=draw(st.integers(0, 3)),
                   limit=draw(st.sampled_from([None, 300.0, H, 10 * H])))
               for i in range(1, draw(st.integers(1, 30)) + 1)]
    return hosts, running, pending, draw(st.integers(0, 4))


@st.composite
def predictions(draw, jobs):
    """Learned run times for some of these jobs, at most their --time (as predict caps them)."""
    out = {}
    for j in jobs:
        seconds = draw(st.sampled_from([None, None, 60.0, 1200.0, 4 * H]))
        if seconds is not None:
            out[j.id] = min(seconds, j.time_limit or seconds)
    return out


@settings(max_examples=examples(300), deadline=None)
@given(clusters(), st.data())
def test_stopping_early_starts_and_reserves_exactly_what_the_full_pass_does(case, data):
    """With learned run times too: the plan takes the smaller of --time and the prediction."""
    hosts, running, pending, reservations = case
    predicted = data.draw(predictions(running + pending))
    inp = lambda: SchedulerInput(hosts, list(pending), running, {}, 3600.0,  # noqa: E731
                                 max_reservations=reservations, predicted=predicted)
    full, quick = schedule(inp()), schedule(inp(), explain=False)
    assert quick.starts == full.starts
    assert quick.forecasts == full.forecasts


def test_a_replay_that_explains_every_pass_starts_the_same_jobs(monkeypatch):
    monkeypatch.setitem(sim.POLICIES, "explained", lambda inp, preempt=None: schedule(inp))
    trace = [TraceJob(job_id=f"{i:03d}", submit_time=float(i * 7 % 400),
                      duration=30.0 + i * 13 % 500, gpus=1 + i % 3,
                      user=["ann", "bob", "cy"][i % 3], tier=list(Tier)[i % 3])
             for i in range(150)]
    trace.sort(key=lambda j: (j.submit_time, j.job_id))
    hosts = parse_cluster("2x4x80G")
    key = lambda r: sorted((j.job_id, j.start, j.host) for j in r.jobs)  # noqa: E731
    assert key(sim.replay(trace, hosts, "gq")) == key(sim.replay(trace, hosts, "explained"))


def test_stopping_early_still_finds_a_short_job_behind_a_blocked_long_one():
    # Card 1 is free but reserved from 1h for job 1; job 2 (long) would delay it; job 3, behind
    # it (its user is heavier), is short enough to run before: the quick pass must reach it.
    hosts = (Host(cpus=8, cards=(Card(0, 80 * G), Card(1, 80 * G)), name="h0"),)
    busy = job(9, started=0, gpu_ids=[0], limit=1 * H)
    busy.host = "h0"
    pending = [job(1, "ann", gpus=2, at=0, limit=1 * H), job(2, "bob", at=10, limit=10 * H),
               job(3, "cy", at=20, limit=600.0)]
    for explain in (True, False):
        plan = schedule(SchedulerInput(hosts, list(pending), [busy], {}, 60.0,
                                       max_reservations=1, usage={"cy": 1e6}), explain=explain)
        assert [s.job_id for s in plan.starts] == [3]
        assert plan.forecasts[1].start == 1 * H


# ---- ...with pools, admin reservations, elastic ranges and interactive jobs -------------------

@st.composite
def governed_clusters(draw):
    from gq.policy.accounts import AccountLimits, Accounts
    from gq.policy.pools import Pools
    from gq.policy.windows import Window

    hosts, running, pending, reservations = draw(clusters())
    pools = Pools()
    if draw(st.booleans()):
        pools = Pools({"a": frozenset({0}), "b": frozenset({1, 2}), "all": frozenset({0, 1, 2})},
                      default=draw(st.sampled_from([None, "b", "all"])))
    windows = tuple(
        Window(n, frozenset(draw(st.sets(st.integers(0, 2), min_size=1))),
               3600.0 + draw(st.sampled_from([-2 * H, 0.0, 600.0, 2 * H])),
               3600.0 + draw(st.sampled_from([H, 3 * H, 20 * H])),
               frozenset(draw(st.sets(st.sampled_from(["ann", "bob"]), max_size=1))),
               host=draw(st.sampled_from(["", *(h.name for h in hosts)])))
        for n in range(draw(st.integers(0, 2))))
    for j in pending:
        if pools.cards and draw(st.booleans()):
            j.pool = draw(st.sampled_from(["a", "b", "all", "gone"]))
        if j.gpus and draw(st.booleans()):
            j.gpus_max = j.gpus + draw(st.integers(0, 2))
        if draw(st.integers(0, 4)) == 0:
            j.interactive = True
        if j.gpus == 1 and draw(st.booleans()):
            j.mem = draw(st.sampled_from([20 * G, 50 * G]))
    accounts = Accounts()
    if draw(st.booleans()):
        accounts = Accounts(members={"ann": "t", "bob": "t"},
                            limits={"t": AccountLimits(max_running_gpus=draw(st.integers(1, 4)))})
    return hosts, running, pending, reservations, pools, windows, accounts


@settings(max_examples=examples(300), deadline=None)
@given(governed_clusters())
def test_stopping_early_is_exact_with_pools_windows_and_elastic_ranges(case):
    hosts, running, pending, reservations, pools, windows, accounts = case
    inp = lambda: SchedulerInput(hosts, list(pending), running, {}, 3600.0,  # noqa: E731
                                 max_reservations=reservations, pools=pools, windows=windows,
                                 accounts=accounts, usage={"ann": 5.0, "bob": 1.0})
    full, quick = schedule(inp()), schedule(inp(), explain=False)
    assert quick.starts == full.starts
    assert quick.forecasts == full.forecasts
    # ...and the full pass itself keeps every rule: pools, windows, elastic ranges.
    for s in full.starts:
        j = next(p for p in pending if p.id == s.job_id)
        allowed = pools.allowed(j)
        assert allowed is None or set(s.gpu_ids) <= allowed
        assert j.gpus <= len(s.gpu_ids) <= (j.gpus_max or j.gpus)
        limit = j.time_limit or 86400.0
        for w in windows:
            if j.user not in w.users and w.on(s.host) and w.overlaps(3600.0, 3600.0 + limit):
                assert not set(s.gpu_ids) & w.cards


def test_stopping_early_reads_past_a_job_kept_off_a_reserved_card():
    # Bob's long job fits nowhere (an admin keeps the card for ann from in 10 minutes), but
    # ann's job of the same shape fits: the quick pass must not take "fits nowhere" for both.
    from gq.policy.windows import Window

    w = Window(1, frozenset({0}), 4200.0, 4200.0 + H, frozenset({"ann"}))
    pending = [job(1, "bob", at=0), job(2, "ann", at=10)]
    for explain in (True, False):
        plan = schedule(SchedulerInput(one_card(), list(pending), [], {}, 3600.0,
                                       max_reservations=0, windows=(w,),
                                       usage={"ann": 5.0, "bob": 1.0}), explain=explain)
        assert [s.job_id for s in plan.starts] == [2]



# ---- the baselines stop early too -------------------------------------------------------------

@settings(max_examples=examples(300), deadline=None)
@given(governed_clusters(), st.data())
def test_the_baselines_stop_reading_early_with_the_same_starts(case, data):
    from gq.policy.baselines import fifo, greedy
    from gq.policy.tiresias import tiresias

    hosts, running, pending, _reservations, pools, windows, accounts = case
    for j in pending:
        if data.draw(st.integers(0, 5)) == 0:
            j.state = JobState.HELD
    attained = {j.id: data.draw(st.sampled_from([0.0, 1800.0, 7200.0, 72000.0]))
                for j in pending + running}  # Tiresias' queues: by service had
    inp = lambda: SchedulerInput(hosts, list(pending), running, {}, 3600.0,  # noqa: E731
                                 pools=pools, windows=windows, accounts=accounts,
                                 attained=attained)
    for policy in (fifo, greedy, tiresias):
        full, quick = policy(inp()), policy(inp(), explain=False)
        assert quick.starts == full.starts, policy.__name__
        assert quick.preemptions == full.preemptions, policy.__name__
        assert set(full.reasons) == {j.id for j in pending} - {s.job_id for s in full.starts}


def test_greedy_stops_once_no_shape_left_could_fit():
    from gq.policy.baselines import greedy

    running = [job(9, started=0, gpu_ids=[0])]
    running[0].host = ""
    pending = [job(1, at=0), job(2, at=1, gpus=0), job(3, at=2), job(4, at=3)]
    inp = lambda: SchedulerInput(one_card(), pending, running, {}, 60.0)  # noqa: E731
    full = greedy(inp())
    assert [s.job_id for s in full.starts] == [2] and set(full.reasons) == {1, 3, 4}
    # Not explaining: job 1 finds the card taken; job 2 (no GPU) starts; once job 2 is read,
    # the only shape left is job 1's, known short, so jobs 3 and 4 are not read.
    quick = greedy(inp(), explain=False)
    assert [s.job_id for s in quick.starts] == [2] and set(quick.reasons) == {1}


# ---- what a pass on a kept queue costs ------------------------------------------------------

def counting_keys(monkeypatch) -> list:
    """Calls of PendingQueue._key (scoring one job for the order), counted."""
    calls = []
    real = PendingQueue._key

    def key(self, job, inp):
        calls.append(job.id)
        return real(self, job, inp)

    monkeypatch.setattr(PendingQueue, "_key", key)
    return calls


def test_arrivals_between_recalculations_are_scored_once_each_and_a_new_usage_resorts(
        monkeypatch):
    calls = counting_keys(monkeypatch)
    queue = PendingQueue([job(i, at=float(i)) for i in range(1, 101)])
    busy = [job(999, started=0, gpu_ids=[0])]
    usage = {"ann": 10.0}

    def pass_at(now, usage, predicted=None):
        schedule(SchedulerInput(one_card(), queue, busy, {}, now, usage=usage, score_time=50.0,
                                predicted=predicted or {}), explain=False)

    pass_at(60.0, usage)
    assert len(calls) == 100  # the first pass sorts the queue
    calls.clear()
    for i in range(101, 111):
        queue.add(job(i, at=float(i)))
    pass_at(61.0, usage)
    pass_at(62.0, usage)
    assert sorted(calls) == list(range(101, 111))  # each arrival once, nothing re-sorted
    calls.clear()
    queue.rekey(5)  # its predicted run time changed: it alone is scored again
    pass_at(63.0, usage, predicted={5: 60.0})
    assert calls == [5]
    calls.clear()
    pass_at(64.0, {"ann": 20.0})  # usage recalculated (a new dict): every score changes
    assert len(calls) == 110


def test_a_rekeyed_job_takes_its_new_place():
    queue = PendingQueue([job(i, at=float(i)) for i in (1, 2, 3)])
    usage = {}

    def order(predicted):
        inp = SchedulerInput(one_card(), queue, [], {}, 10.0, usage=usage, score_time=5.0,
                             predicted=predicted)
        return [j.id for j in queue.ordered(inp, {}, lambda j: True)]

    assert order({}) == [1, 2, 3]
    assert order({3: 60.0}) == [1, 2, 3]  # not told: the kept order stands
    queue.rekey(3)  # job 3 is now predicted to be short: it ranks first
    assert order({3: 60.0}) == [3, 1, 2]
    fresh = PendingQueue(list(queue))
    inp = SchedulerInput(one_card(), fresh, [], {}, 10.0, usage=usage, score_time=5.0,
                         predicted={3: 60.0})
    assert [j.id for j in fresh.ordered(inp, {}, lambda j: True)] == [3, 1, 2]


def test_a_quick_pass_reads_none_of_a_long_blocked_shape_past_its_head():
    # One card, busy; 2,000 one-card jobs wait for it, then one CPU job that can start. The
    # quick pass reads the card job that takes the reservation (the card is then set aside:
    # no other can be reserved on it), drops the rest, and starts the CPU job.
    busy = job(9999, started=0, gpu_ids=[0], limit=H)
    waiting = [job(i, at=float(i)) for i in range(1, 2001)] + [job(2001, at=2001.0, gpus=0)]
    queue = PendingQueue(waiting)
    for explain in (False, True):
        plan = schedule(SchedulerInput(one_card(), queue, [busy], {}, 3000.0), explain=explain)
        assert [s.job_id for s in plan.starts] == [2001]
        assert list(plan.forecasts) == [1]
    read = plan.scores
    assert len(read) == 2001  # the explaining pass reads every job...
    quick = schedule(SchedulerInput(one_card(), queue, [busy], {}, 3000.0), explain=False)
    assert sorted(quick.scores) == [1, 2001]  # ...the quick one the reserved and the CPU job


def test_a_shape_read_again_after_a_start_resumes_where_the_pass_is():
    # Job 3 would delay job 1's reservation, and so would job 4 (its shape, read while the
    # shape was left aside); job 5's start revives the shape, but job 4 is behind the pass
    # by then: reading it after job 5's start would reserve it a card the full pass does not.
    hosts = (Host(cpus=2, name="h0", cards=(Card(0, 80 * G),)),
             Host(cpus=2, name="h1", cards=tuple(Card(i, 80 * G) for i in range(3))),
             Host(cpus=2, name="h2", cards=tuple(Card(i, 80 * G) for i in range(2))))
    running = []
    for i, (name, card, limit) in enumerate([("h0", 0, None), ("h1", 0, None), ("h1", 1, None),
                                             ("h2", 0, H)]):
        running.append(job(100 + i, started=0, gpu_ids=[card], limit=limit))
        running[-1].host = name
    gpus = {1: 2, 3: 1, 4: 1}
    pending = [job(i, tier=Tier.HIGH, gpus=gpus.get(i, 0)) for i in range(1, 14)]
    inp = lambda: SchedulerInput(hosts, list(pending), running, {}, 3600.0,  # noqa: E731
                                 max_reservations=2)
    full, quick = schedule(inp()), schedule(inp(), explain=False)
    assert full.reasons[4] == Reason.PRIORITY and sorted(full.forecasts) == [1, 6]
    assert (quick.starts, quick.forecasts) == (full.starts, full.forecasts)
