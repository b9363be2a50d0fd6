"""`gq stats`: the figures of a small history computed by hand, and the command's three outputs."""

from __future__ import annotations

import re

import pytest

from gq.model import Job, JobState, Tier
from gq.stats.lab import StatsInput, lab_stats, percentile
from gq.store import Store
from gq.store.samples import CardSample, JobSample

G = 1 << 30
T0 = 1_699_999_200.0  # the start of an hour
NOW = T0 + 4 * 3600


def add_job(store: Store, user: str, tier: Tier, submitted: float, gpu_ids: list[int],
            mem: int | None = None, started: float | None = None, ended: float | None = None,
            state: JobState = JobState.COMPLETED, weight: float = 1.0) -> Job:
    job = Job(id=0, user=user, command=["train"], cwd="/", priority=tier, gpus=len(gpu_ids),
              mem=mem, submitted_at=submitted)
    job.id = store.insert_job(job, submitted)
    if started is not None:
        store.transition(job.id, JobState.RUNNING, started, started_at=started,
                         gpu_ids=gpu_ids, holding=1)
    if ended is not None:
        store.transition(job.id, state, ended, ended_at=ended, holding=0)
        job = store.get_job(job.id)
        if started is not None:
            store.add_run(job, weight, ended, str(state))
    return store.get_job(job.id)


@pytest.fixture
def history(tmp_path) -> tuple[Store, StatsInput]:
    """Four 80G cards; two of them sampled once a minute for two hours; six jobs."""
    store = Store(tmp_path / "gq.db")
    for minute in range(120):
        t = T0 + 60 * minute
        hour1 = minute >= 60
        store.samples.write(t, [CardSample(0, 100 if hour1 else 50, 10 * G, 0, 50, 300.0),
                                CardSample(1, None if hour1 else 0, 5 * G, 0, 40, 100.0)],
                            [JobSample(2, 1, 5 * G, 5)] if 3 <= minute < 63 else [])
    store.samples.roll_up(T0 + 90 * 60)  # an hour and a half rolled up, the rest still raw
    add_job(store, "ann", Tier.NORMAL, T0, [0], started=T0 + 600, ended=T0 + 7200)
    add_job(store, "bob", Tier.HIGH, T0 + 100, [1], mem=20 * G, started=T0 + 160,
            ended=T0 + 3760, state=JobState.OOM, weight=0.25)
    running = add_job(store, "bob", Tier.HIGH, T0 + 200, [2], started=T0 + 500)
    add_job(store, "ann", Tier.LOW, T0 - 3600, [3], started=T0 + 7200, ended=T0 + 7300)
    add_job(store, "cy", Tier.NORMAL, T0 + 10, [0], ended=T0 + 20, state=JobState.CANCELLED)
    add_job(store, "dan", Tier.NORMAL, T0 - 7200, [3], started=T0 - 3600, ended=T0 + 1800,
            state=JobState.FAILED)
    old = store.offences.open("stray", T0 - 5000, "before the period", {}, "report", pid=9)
    store.offences.mark(old, ended_at=T0 - 4000, last_seen=T0 - 4000)
    store.offences.open("idle", T0 + 300, "mean utilisation 5%", {"tier": "high"}, "report",
                        job_id=2, user="bob")
    inp = StatsInput(since=T0 - 86400, now=NOW, card_totals={i: 80 * G for i in range(4)},
                     running=[running], interval=60.0,
                     idle_util={"high": 20.0, "normal": 20.0, "low": 20.0})
    return store, inp


def test_the_figures_of_a_small_history_by_hand(history):
    store, inp = history
    s = lab_stats(store, inp)
    # The history begins with the first run, job 6's, an hour before T0: the period is 5 h.
    assert (s["covered_from"], s["period_seconds"], s["gpus"]) == (
        "2023-11-14T21:00:00Z", 5 * 3600.0, 4)
    u = s["utilization"]
    # Card 0: 50% then 100%; card 1: 0% then unknown. (60*50 + 60*100 + 60*0) / 180 = 50.
    assert (u["mean"], u["samples"], u["unknown_samples"]) == (50.0, 240, 60)
    assert u["by_gpu"] == {"0": 75.0, "1": 0.0}
    assert u["by_hour"] == [{"hour": "2023-11-14T22:00:00Z", "mean": 25.0},
                            {"hour": "2023-11-14T23:00:00Z", "mean": 100.0}]
    # Card-seconds: ann 6600 + 100, bob 0.25 * 3600 + 2 h 40 m 20 s running, dan 5400 (all of
    # its run after the history began). Capacity: 4 cards for 5 hours.
    assert s["gpu_hours_by_user"] == {"ann": round(6700 / 3600, 3),
                                      "bob": round((900 + 13900) / 3600, 3), "dan": 1.5}
    assert s["allocation"] == {"rate": round((6700 + 14800 + 5400) / (4 * 5 * 3600), 4),
                               "gpu_hours": round(26900 / 3600, 3), "capacity_gpu_hours": 20.0}
    # Waits of the jobs that first started in the period: high 60 s and 300 s, normal 600 s
    # and dan's hour (it started as the history begins), low 3 h.
    assert s["wait_seconds"] == {
        "high": {"jobs": 2, "mean": 180.0, "p50": 60.0, "p95": 300.0},
        "normal": {"jobs": 2, "mean": 2100.0, "p50": 600.0, "p95": 3600.0},
        "low": {"jobs": 1, "mean": 10800.0, "p50": 10800.0, "p95": 10800.0},
    }
    assert s["jobs_by_state"] == {"cancelled": 1, "completed": 2, "failed": 1, "oom": 1}
    assert s["oom"] == 1
    # Job 2 (a quarter of card 1) at 5% for 60 one-minute samples: 60 * 60 s * 0.25.
    assert s["idle_gpu_hours_by_user"] == {"bob": 0.25}
    assert s["offenders"]["by_kind"] == {"idle": 1}
    [offence] = s["offenders"]["list"]
    assert (offence["job_id"], offence["tier"], offence["since"]) == (2, "high",
                                                                     "2023-11-14T22:05:00Z")


def test_a_shorter_period_counts_only_what_falls_in_it(history):
    store, inp = history
    last_hour = StatsInput(**{**inp.__dict__, "since": NOW - 3600})
    s = lab_stats(store, last_hour)
    assert s["period_seconds"] == 3600.0
    assert s["utilization"]["mean"] is None  # no card sample in the last hour
    assert s["gpu_hours_by_user"] == {"bob": 1.0}  # the running job alone
    assert s["jobs_by_state"] == {} and s["oom"] == 0
    assert s["wait_seconds"]["high"] == {"jobs": 0, "mean": None, "p50": None, "p95": None}


def test_percentiles_are_nearest_rank():
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert [percentile(values, p) for p in (50, 90, 95, 100)] == [5.0, 9.0, 10.0, 10.0]
    assert percentile([], 50) is None


PROM_LINE = re.compile(r'^[a-z_]+\{(?:[a-z_]+="[^"]*",?)+\} -?[0-9.e+-]+$')


def test_the_command_prints_a_table_json_and_prometheus(make_host):
    host = make_host("2x80G")
    job = host.submit("--", "true")
    host.wait_ended(job)
    figures = host.call("stats", since=3600)
    assert set(figures) == {"host", "since", "until", "covered_from", "period_seconds",
                            "history_from", "gpus", "utilization", "by_pool", "allocation",
                            "wait_seconds", "jobs_by_state",
                            "oom", "gpu_hours_by_user", "idle_gpu_hours_by_user", "offenders",
                            "gpu_hours_by_account", "health", "failures", "predictions",
                            "learned_mem"}
    assert figures["jobs_by_state"] == {"completed": 1} and figures["gpus"] == 2
    table = host.gq("stats", "--since", "1h").stdout
    assert "ended jobs: completed 1" in table and "MEAN WAIT" in table
    text = host.gq("stats", "--prometheus").stdout
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert samples and all(PROM_LINE.match(line) for line in samples), text
    assert 'gq_jobs_ended{host="' in text and ',period="7d",state="completed"} 1' in text
    assert "# TYPE gq_job_wait_seconds summary" in text
    assert host.gq("stats", "--json").stdout.lstrip().startswith("{")
    bad = host.gq("stats", "--since", "soon", check=False)
    assert (bad.returncode, bad.stderr.count("\n")) == (2, 1)
    assert bad.stderr.startswith("gq: --since 'soon': expected a duration")
