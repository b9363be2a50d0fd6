"""The published baselines from literals: Tiresias' 2D-LAS, QSSF and the shortest-job oracle."""

from __future__ import annotations

from gq.model import Job, JobState, Reason, Tier
from gq.policy import Card, Host, SchedulerInput, decide
from gq.policy.shortest_first import qssf
from gq.policy.tiresias import QUEUE_LIMITS, queue_of, tiresias
from gq.sim.history import FingerprintRunTime, UserMeanRunTime

G, NOW = 1 << 30, 100_000.0


def cards(n: int) -> Host:
    return Host(cpus=64, cards=tuple(Card(i, 80 * G) for i in range(n)))


def waiting(id, gpus=1, at=0.0, user="ann", mem=None) -> Job:
    return Job(id=id, user=user, command=["x"], cwd="/", gpus=gpus, mem=mem, submitted_at=at)


def running(id, gpu_ids, started, at=0.0, mem=None) -> Job:
    return Job(id=id, user="bob", command=["x"], cwd="/", gpus=len(gpu_ids), mem=mem,
               gpu_ids=list(gpu_ids), state=JobState.RUNNING, started_at=started,
               submitted_at=at, preemptible=True)


# ---- Tiresias ------------------------------------------------------------------------------

def test_queues_by_attained_card_seconds():
    assert QUEUE_LIMITS == (3600.0, 36000.0)
    assert [queue_of(s) for s in (0, 3599, 3600, 35999, 36000, 1e9)] == [0, 0, 1, 1, 2, 2]


def test_a_new_job_preempts_one_that_has_had_more_than_the_first_queue():
    # Job 1 has run on 2 cards for an hour: 7200 card-seconds, queue 1. Job 2 is new (queue 0)
    # and needs both cards: job 1 is stopped for it.
    inp = SchedulerInput(cards(2), [waiting(2, gpus=2, at=NOW - 10)],
                         [running(1, (0, 1), NOW - 3600)], now=NOW)
    plan = tiresias(inp)
    assert plan.starts == []
    assert [(p.job_id, [v.job_id for v in p.victims]) for p in plan.preemptions] == [(2, [1])]
    assert plan.preemptions[0].victims[0].lost_card_seconds == 7200.0


def test_within_a_queue_nobody_is_stopped_and_service_of_earlier_runs_counts():
    # Job 1 has had 30 minutes of one card (queue 0): a new job waits rather than stop it.
    job = waiting(2, gpus=1, at=NOW - 10)
    inp = SchedulerInput(cards(1), [job], [running(1, (0,), NOW - 1800)], now=NOW)
    plan = tiresias(inp)
    assert plan.preemptions == [] and plan.reasons[2] == Reason.RESOURCES
    # Had it 40 minutes in an earlier run, it is in queue 1 now (70 minutes): it is stopped.
    inp = SchedulerInput(cards(1), [job], [running(1, (0,), NOW - 1800)], now=NOW,
                         attained={1: 2400.0})
    assert [v.job_id for v in tiresias(inp).preemptions[0].victims] == [1]


def test_the_least_served_waiting_job_starts_first_then_submit_order():
    # One free card; job 3 was stopped after 2 hours (queue 1), jobs 4 and 5 never ran.
    pending = [waiting(3, at=0.0), waiting(5, at=20.0), waiting(4, at=10.0)]
    plan = tiresias(SchedulerInput(cards(1), pending, [], now=NOW, attained={3: 7200.0}))
    assert [s.job_id for s in plan.starts] == [4]


def test_a_slice_counts_its_share_of_the_card():
    # Job 1 holds 40G of an 80G card for 2 hours: 3600 card-seconds, queue 1, and is stopped
    # for a new job that needs the card whole.
    inp = SchedulerInput(cards(1), [waiting(2, at=NOW)],
                         [running(1, (0,), NOW - 7200, mem=40 * G)], now=NOW)
    assert [v.job_id for v in tiresias(inp).preemptions[0].victims] == [1]
    inp.running[0].started_at = NOW - 7100  # 3550 card-seconds: still queue 0
    assert tiresias(inp).preemptions == []


# ---- QSSF and the oracle -------------------------------------------------------------------

def test_qssf_orders_by_cards_times_the_run_time_the_predictor_expects():
    # ann's jobs have run 10 minutes on average, bob's 5 hours: bob's 1-card job goes after
    # ann's 4-card one (4 x 10 min < 1 x 5 h); the predictor is a parameter.
    history = UserMeanRunTime()
    for run_time in (300.0, 900.0):
        history.observe(waiting(0, user="ann"), run_time)
    history.observe(waiting(0, user="bob"), 5 * 3600.0)
    pending = [waiting(1, gpus=1, at=0.0, user="bob"), waiting(2, gpus=4, at=5.0, user="ann")]
    plan = qssf(SchedulerInput(cards(4), pending, [], now=NOW), predict=history)
    assert [s.job_id for s in plan.starts] == [2]
    assert history(pending[0]) == 5 * 3600.0 and history(pending[1]) == 600.0
    # A user without history is expected to run as long as everyone's jobs did on average.
    assert history(waiting(3, user="cy")) == (300.0 + 900.0 + 5 * 3600.0) / 3
    flat = qssf(SchedulerInput(cards(4), pending, [], now=NOW), predict=lambda j: 60.0)
    assert [s.job_id for s in flat.starts] == [1]  # 1 card x 1 min first


def test_qssf_by_default_predicts_with_the_daemons_rule_then_the_users_mean():
    # Same user, name and GPUs: the mean of the last two runs (gq/policy/predict.py); a name
    # never seen ended: the user's mean over all their jobs.
    history = FingerprintRunTime()
    for name, run_time in (("train.py", 100.0), ("train.py", 300.0), ("train.py", 500.0),
                           ("eval.py", 5000.0)):
        history.observe(Job(id=0, user="ann", command=[], cwd="/", name=name), run_time)
    assert history(Job(id=1, user="ann", command=[], cwd="/", name="train.py")) == 400.0
    assert history(Job(id=2, user="ann", command=[], cwd="/", name="new.py")) == 1475.0
    assert history(Job(id=3, user="ann", command=[], cwd="/", name="train.py", gpus=2)) == 1475.0


def test_the_oracle_starts_the_shortest_true_run_time_first_and_fills_what_is_left():
    truth = {1: 7200.0, 2: 60.0, 3: 600.0}
    pending = [waiting(1, gpus=2, at=0.0), waiting(2, gpus=2, at=1.0), waiting(3, gpus=1, at=2.0)]
    inp = SchedulerInput(cards(3), pending, [], now=NOW,
                         expected_run_time=lambda j: truth[j.id])
    plan = decide(inp, "sjf-oracle")
    assert [s.job_id for s in plan.starts] == [2, 3]
    assert plan.reasons[1] == Reason.RESOURCES


def test_tiers_do_not_order_the_baselines():
    pending = [waiting(1, at=0.0), Job(id=2, user="ann", command=["x"], cwd="/", gpus=1,
                                        submitted_at=5.0, priority=Tier.HIGH)]
    inp = SchedulerInput(cards(1), pending, [], now=NOW, expected_run_time=lambda j: 60.0)
    for policy in ("sjf-oracle", "qssf", "tiresias"):
        assert [s.job_id for s in decide(inp, policy).starts] == [1], policy
