"""Planning on what jobs really do (EASY++): forecasts, reservations and backfill take the
smaller of a job's --time and its learned run time, and are corrected when a running job
outlives its prediction; a prediction never stops a job (only --time does)."""

from __future__ import annotations

from gq.daemon.runtimes import start_notes
from gq.model import Job, JobState, Reason, Tier
from gq.policy import Card, Host, SchedulerInput, schedule
from gq.policy.predict import RunTimes, fingerprint_of

H = 3600.0
HOST = Host(64, cards=(Card(0, 80 << 30), Card(1, 80 << 30)))


def running(id, limit, started=0.0, card=0, command=("python", "train.py")):
    return Job(id, "ann", list(command), "/", state=JobState.RUNNING, gpus=1, gpu_ids=[card],
               started_at=started, time_limit=limit)


def waiting(id, gpus=1, limit=None, command=("x",), tier=Tier.NORMAL):
    return Job(id, "bob", list(command), "/", gpus=gpus, time_limit=limit, submitted_at=id,
               priority=tier)


def learned(*jobs_and_seconds) -> RunTimes:
    book = RunTimes()
    for job, seconds in jobs_and_seconds:
        book.record(fingerprint_of(job), seconds)
    return book


def test_the_plan_takes_the_learned_run_time_below_a_long_time_limit():
    """Job 1 declares 2h but its last runs took 40s: the two-card job 2 is expected at 40s,
    not 2h, and job 3 (low tier, after it; declared 3h, learned 30s) backfills onto card 1
    before it; planned on the --time alone, job 3 would delay job 2 and wait."""
    a = running(1, limit=2 * H)
    big = waiting(2, gpus=2)
    short = waiting(3, limit=3 * H, command=("python", "eval.py"), tier=Tier.LOW)
    book = learned((a, 40.0), (a, 40.0), (Job(0, "bob", ["python", "eval.py"], "/"), 30.0))
    inp = SchedulerInput(HOST, [big, short], [a], now=0.0,
                         predicted=book.limits([a, big, short], 0.0))
    assert inp.predicted == {1: 40.0, 3: 30.0}
    plan = schedule(inp)
    assert plan.forecasts[2].start == 40.0 and plan.forecasts[2].after == 1
    assert [s.job_id for s in plan.starts] == [3]
    assert start_notes(inp, plan.forecasts, book, fingerprint_of)[2] == (
        True, "when job 1 ends: it runs ~40s, like ann's last 2 runs of train.py")

    by_time = schedule(SchedulerInput(HOST, [big, short], [a], now=0.0))
    assert by_time.forecasts[2].start == 2 * H
    assert by_time.starts == [] and by_time.reasons[3] == Reason.PRIORITY


def test_a_job_that_outlives_its_prediction_is_planned_longer_then_to_its_time():
    a = running(1, limit=1000.0)
    big = waiting(2, gpus=2)
    book = learned((a, 40.0), (a, 40.0))

    def forecast(now):
        inp = SchedulerInput(HOST, [big], [a], now=now, predicted=book.limits([a], now))
        plan = schedule(inp)
        return plan.forecasts[2].start, start_notes(inp, plan.forecasts, book,
                                                    fingerprint_of)[2][1]

    assert forecast(10.0) == (40.0, "when job 1 ends: it runs ~40s, like ann's last 2 runs "
                                    "of train.py")
    start, note = forecast(100.0)  # outlived 40s: 80s, then 160s
    assert start == 160.0 and "doubled as it outlived 40s" in note
    assert forecast(700.0) == (1000.0, "when job 1 reaches its --time")  # 1280s > its limit


def test_a_prediction_is_never_longer_than_the_time_limit():
    a = running(1, limit=60.0)
    book = learned((a, 600.0))
    inp = SchedulerInput(HOST, [], [a], now=0.0, predicted=book.limits([a], 0.0))
    assert inp.predicted == {1: 60.0} and inp.run_time_of(a) == 60.0
    # Stated the other way: a job without --time is planned by its prediction alone.
    b = running(2, limit=None, card=1)
    assert SchedulerInput(HOST, [], [b], predicted={2: 90.0}).run_time_of(b) == 90.0


def test_a_pass_that_stops_early_still_reads_a_job_whose_prediction_lets_it_backfill():
    """Job 3 declares longer than job 2, which would delay the two-card reservation; but job 3
    is predicted to end before it begins. A pass that stops reading once a shape can only
    delay the reservation must bound the shape by its predictions too, or it never reads 3."""
    r = running(1, limit=1000.0)
    big = waiting(10, gpus=2, limit=100.0)  # the shortest --time: first in the queue
    a, b = waiting(2, limit=2000.0), waiting(3, limit=3000.0)
    inp = lambda: SchedulerInput(HOST, [big, a, b], [r], now=0.0,  # noqa: E731
                                 max_reservations=1, predicted={3: 500.0})
    full, quick = schedule(inp()), schedule(inp(), explain=False)
    assert [s.job_id for s in full.starts] == [3] and full.reasons[2] == Reason.PRIORITY
    assert quick.starts == full.starts and quick.forecasts == full.forecasts
