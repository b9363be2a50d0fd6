"""Learned run times: the predictor from literals, and what a real daemon says of its jobs'
expected ends after 0, 1, 2 and 5 completed runs of a fingerprint."""

from __future__ import annotations

import re
import sys

from tests.support.hosts import wait_for

from gq.model import Job, JobState
from gq.policy import Card, Host, SchedulerInput, schedule
from gq.policy.predict import RunTimes, fingerprint, predict, prediction_errors

# --- from literals ----------------------------------------------------------------------------


def test_the_fingerprint_is_the_user_the_script_and_the_gpus_not_the_arguments():
    a = fingerprint("ann", ["python3", "-u", "train.py", "--lr", "0.1"], 2)
    b = fingerprint("ann", ["/usr/bin/python3.11", "train.py", "--lr", "0.3"], 2)
    assert (a.program, a.script, a.label) == ("python3", "train.py", "train.py")
    assert a.script == b.script and a.gpus == b.gpus
    assert fingerprint("ann", ["./run.sh", "x"], 1).label == "run.sh"
    assert fingerprint("ann", ["sh", "-c", "sleep 1"], 1).label == "sh -c"
    assert fingerprint("bob", ["python", "train.py"], 2) != fingerprint("ann", ["python",
                                                                              "train.py"], 2)
    assert fingerprint("ann", ["python", "train.py"], 1) != fingerprint("ann", ["python",
                                                                              "train.py"], 2)


def test_predictions_after_0_1_2_and_5_runs():
    assert predict([], "train.py").seconds is None
    assert predict([], "train.py").basis == "unknown: no completed run of train.py yet"
    one = predict([600.0], "train.py")
    assert (one.seconds, one.runs, one.basis) == (600.0, 1, "like your last run of train.py")
    two = predict([600.0, 1200.0], "train.py")
    assert (two.seconds, two.basis) == (900.0, "like your last 2 runs of train.py")
    five = predict([10.0, 20.0, 30.0, 600.0, 1200.0], "train.py")
    assert (five.seconds, five.runs) == (900.0, 2)  # the last two only, as EASY++


def test_a_job_that_outlives_its_prediction_is_predicted_longer_but_never_past_its_time():
    p = predict([600.0], "train.py", elapsed=700.0)
    assert p.seconds == 1200.0 and "doubled as it outlived 10 min" in p.basis
    assert predict([600.0], "train.py", elapsed=2500.0).seconds == 4800.0
    assert predict([600.0], "train.py", elapsed=700.0, limit=1000.0).seconds == 1000.0


def test_prediction_errors_score_each_run_against_the_runs_before_it():
    fp = fingerprint("ann", ["python", "train.py"], 1)
    runs = [(fp, 100.0, 1.0), (fp, 300.0, 2.0), (fp, 200.0, 3.0)]
    assert prediction_errors(runs) == [(2.0, 200.0), (3.0, 0.0)]


def test_backfill_and_reservations_use_the_prediction_of_a_job_without_time():
    """A job on card 0, predicted to end in 10 min: a waiting two-card job is reserved then,
    and a 30-minute job cannot backfill onto card 1 before it; with no prediction, the
    day-long default lets it."""
    running = Job(1, "ann", ["python", "train.py"], "/", state=JobState.RUNNING, gpus=1,
                  gpu_ids=[0], started_at=0.0)
    big = Job(2, "bob", ["x"], "/", gpus=2, submitted_at=1.0, time_limit=60.0)  # first: short
    small = Job(3, "cy", ["y"], "/", gpus=1, time_limit=1800.0, submitted_at=2.0)
    book = RunTimes()
    book.record(fingerprint("ann", ["python", "train.py"], 1), 600.0)
    host = Host(64, cards=(Card(0, 80 << 30), Card(1, 80 << 30)))
    inp = SchedulerInput(host, [big, small], [running], now=0.0,
                         predicted=book.limits([running, big, small], 0.0))
    plan = schedule(inp)
    assert plan.forecasts[2].start == 600.0 and plan.forecasts[2].after == 1
    assert plan.starts == []  # job 3 would still hold card 1 at 600 s
    assert inp.end_known(running)
    guess = schedule(SchedulerInput(host, [big, small], [running], now=0.0))
    assert guess.forecasts[2].start == 86400.0
    assert [s.job_id for s in guess.starts] == [3]


# --- a real daemon ----------------------------------------------------------------------------


def test_the_daemon_learns_run_times_and_says_unknown_until_it_has(host):
    script = host.work / "job.sh"
    # Each run lasts half a second at least: a prediction is shown to a tenth of a second, and
    # the gate may be opened within milliseconds of the start.
    script.write_text('sleep 0.5; while [ ! -e "$1" ]; do [ -d "$(dirname "$1")" ] || exit 99; '
                      'sleep 0.02; done\n')
    runs = 0

    def run_blocker() -> tuple[int, int]:
        """The whole host taken by job.sh, and a job waiting behind it."""
        gate = host.work / f"gate{runs}"
        blocker = host.submit("-g", "4", "--", "sh", str(script), str(gate))
        host.wait_state(blocker, "running")
        waiting = host.submit("-g", "1", "--", "true")
        host.wait_reason(waiting, "Resources")
        return blocker, waiting

    blocker, waiting = run_blocker()
    shown = host.job(blocker)["prediction"]
    assert shown == {"seconds": None, "runs": 0,
                     "basis": "unknown: no completed run of job.sh yet"}
    why = host.call("why", id=str(waiting))
    assert why["expected_start"] is None
    assert (f"its start is unknown: it waits for job {blocker}, which has no --time and no "
            "completed run of job.sh to learn from") in why["why"]
    assert ", start unknown" not in why["why"]

    for want_runs in (1, 2, 5):
        while runs < want_runs:
            (host.work / f"gate{runs}").touch()
            host.wait_ended(blocker)
            host.wait_ended(waiting)
            runs += 1
            blocker, waiting = run_blocker()
        prediction = host.job(blocker)["prediction"]
        assert prediction["runs"] == min(want_runs, 2) and prediction["seconds"] > 0
        word = "your last run" if want_runs == 1 else "your last 2 runs"
        assert prediction["basis"].startswith(f"like {word} of job.sh")
        why = wait_for(lambda: (w := host.call("why", id=str(waiting)))["expected_start"]
                       and w, what="an expected start")
        assert re.search(rf"when job {blocker} ends: it runs ~\w+, like {word} of job.sh",
                         why["why"]), why["why"]
    # 5 runs of job.sh and 5 of `true`: all but the first of each had a prediction.
    stats = host.call("stats", since=3600)["predictions"]
    assert stats["runs"] == 10 and stats["predicted"] == 8
    assert stats["median_abs_error_s"] is not None
    assert "run-time predictions: 8 of 10 completed runs had one" in host.gq("stats").stdout
    (host.work / f"gate{runs}").touch()


def test_learn_mem_gives_a_job_without_mem_its_commands_last_peak(make_host):
    from tests.support.hosts import host_with

    host = host_with(make_host, '[telemetry]\ninterval = "0.2s"\n\n[scheduler]\nlearn_mem = true\n')
    burn = ["--", sys.executable, "-m", "gq.sim.burn", "--mem", "8G", "--seconds", "1"]
    first = host.gq("submit", *burn)
    assert first.stderr == ""  # no history: whole cards, as asked, and nothing to say
    first_id = int(first.stdout)
    done = host.wait_ended(first_id)
    assert done["state"] == "completed" and done["mem"] is None
    second = host.gq("submit", *burn)
    assert "memory learned: 9.8G per GPU, the 8G peak of the last 1 run" in second.stderr
    job = host.wait_ended(int(second.stdout))
    assert job["state"] == "completed" and job["mem"] == int(9.75 * (1 << 30))
    learned = host.call("stats", since=3600)["learned_mem"]
    assert learned == {"runs": 1, "over_reservation": 0.179, "oom_rate": 0.0}
    given = host.submit("-m", "20G", *burn)
    assert host.job(given)["mem"] == 20 << 30  # a --mem given is never replaced


def test_what_an_expected_start_rests_on_in_words():
    from gq.daemon.runtimes import start_notes
    from gq.policy import Forecast
    from gq.policy.predict import fingerprint_of

    ann = Job(1, "ann", ["python", "train.py"], "/", state=JobState.RUNNING, gpu_ids=[0],
              started_at=0.0)
    timed = Job(3, "cy", ["x"], "/", state=JobState.RUNNING, gpu_ids=[1], started_at=0.0,
                time_limit=60.0)
    bob = Job(2, "bob", ["y"], "/", submitted_at=1.0)
    host = Host(64, cards=(Card(0, 80 << 30), Card(1, 80 << 30)))
    book = RunTimes()
    forecasts = {2: Forecast(600.0, (0,), "", 1)}
    unknown = SchedulerInput(host, [bob], [ann, timed], now=0.0)
    assert start_notes(unknown, forecasts, book, fingerprint_of) == {2: (
        False, "unknown: it waits for job 1, which has no --time and no completed run of "
               "train.py to learn from")}
    book.record(fingerprint_of(ann), 600.0)
    known = SchedulerInput(host, [bob], [ann, timed], now=0.0,
                           predicted=book.limits([ann, bob], 0.0))
    assert start_notes(known, forecasts, book, fingerprint_of) == {2: (
        True, "when job 1 ends: it runs ~10m00s, like ann's last run of train.py")}
    by_time = {2: Forecast(60.0, (1,), "", 3)}
    assert start_notes(known, by_time, book, fingerprint_of)[2] == (
        True, "when job 3 reaches its --time")


def test_a_start_behind_a_long_time_limit_is_forecast_by_the_learned_run_time(make_host):
    """Job.sh declares an hour; one run of 0.8 s taught gq its run time. A job waiting behind
    the next run is expected when the learned run time says, not the --time; that run takes
    2 s, outliving its prediction: the plan is corrected (a longer prediction), the run is not
    stopped for it, and the waiting job starts within 2x of the corrected forecast (a second
    either way: JSON times are whole seconds)."""
    from datetime import datetime

    host = make_host("1x80G")
    script = host.work / "job.sh"
    script.write_text('sleep "$1"\n')
    run = ("-g", "1", "--time", "1h", "--", "sh", str(script))
    assert host.wait_ended(host.submit(*run, "0.8"))["state"] == "completed"
    blocker = host.submit(*run, "2")
    waiting = host.submit("-g", "1", "--", "true")
    why = wait_for(lambda: (w := host.call("why", id=str(waiting)))["expected_start"] and w,
                   what="an expected start")
    assert re.search(rf"when job {blocker} ends: it runs ~\w+, like your last run of job.sh",
                     why["why"]), why["why"]
    at = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()  # noqa: E731
    began = at(host.job(blocker)["started_at"])
    assert at(why["expected_start"]) - began < 60  # not the hour it declares
    corrected = wait_for(lambda: "doubled as it outlived" in (
        w := host.call("why", id=str(waiting)))["why"] and w, what="a corrected forecast")
    ending = host.call("why", id=str(blocker))["why"]
    assert re.search(r"Expected to end by \S+: it runs ~\w+, like your last run of job.sh, "
                     r"doubled as it outlived \w+ \(its --time, \w+, stops it\)", ending), ending
    forecast = at(corrected["expected_start"]) - began
    assert host.wait_ended(blocker)["state"] == "completed"  # never stopped for a prediction
    started = at(host.wait_state(waiting, "running", "completed")["started_at"]) - began
    assert forecast / 2 - 1 <= started <= 2 * forecast + 1, (forecast, started)
