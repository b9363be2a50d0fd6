"""Failures in `gq stats`: per class, per user and month, in the resource-failure indicator
and in the Prometheus text."""

from __future__ import annotations

from datetime import datetime, timezone

from gq.cli.stats_cmd import print_stats, prometheus
from gq.model import Job, JobState, Tier
from gq.stats.lab import StatsInput, lab_stats
from gq.store import Store

MAY = datetime(2026, 5, 1, tzinfo=timezone.utc).timestamp()
JUNE = datetime(2026, 6, 1, tzinfo=timezone.utc).timestamp()


def failed_run(store: Store, user: str, at: float, failure: str | None,
               state: str = "failed") -> None:
    job = Job(id=0, user=user, command=["train"], cwd="/", priority=Tier.NORMAL, gpus=1,
              submitted_at=at)
    job.id = store.insert_job(job, at)
    store.transition(job.id, JobState.RUNNING, at + 1, started_at=at + 1, gpu_ids=[0],
                     holding=1)
    store.transition(job.id, JobState(state), at + 60, ended_at=at + 60, holding=0,
                     failure=failure)
    store.add_run(store.get_job(job.id), 1.0, at + 60, state, failure=failure)


def stats(store: Store) -> dict:
    figures = lab_stats(store, StatsInput(since=MAY, now=JUNE, card_totals={0: 80 << 30},
                                          running=[], interval=10.0, idle_util={}))
    figures["host"] = "lab1"
    return figures


def test_failures_by_class_user_and_month_and_the_resource_indicator(tmp_path, capsys):
    store = Store(tmp_path / "gq.db")
    t = MAY + 86400
    failed_run(store, "ann", t, "host_oom")
    failed_run(store, "ann", t + 100, "data_error")
    failed_run(store, "bob", t + 200, "data_error")
    for n in range(7):
        failed_run(store, "bob", t + 300 + n, None, state="completed")
    got = stats(store)
    assert got["failures"]["by_class"] == {"data_error": 2, "host_oom": 1}
    assert got["failures"]["by_month"] == [
        {"month": "2026-05", "user": "ann", "failure": "data_error", "runs": 1},
        {"month": "2026-05", "user": "ann", "failure": "host_oom", "runs": 1},
        {"month": "2026-05", "user": "bob", "failure": "data_error", "runs": 1}]
    # one job in ten failed for a resource (host memory); the data errors are not resources
    (bad,) = [i for i in got["health"] if i["name"] == "bad_ends"]
    assert (bad["value"], bad["bad"], bad["jobs"], bad["status"]) == (10.0, 1, 10, "fail")
    text = prometheus(got, "30d")
    assert ('gq_failed_runs{host="lab1",period="30d",user="ann",failure="host_oom"} 1'
            in text.splitlines())
    print_stats(got)
    assert "2026-05  ann   host_oom" in capsys.readouterr().out


def test_a_mean_wait_is_rounded_not_truncated(tmp_path, capsys):
    store = Store(tmp_path / "gq.db")
    job = Job(id=0, user="ann", command=["train"], cwd="/", priority=Tier.NORMAL, gpus=1,
              submitted_at=MAY + 86400)
    job.id = store.insert_job(job, MAY + 86400)
    started = MAY + 86400 + 7.98  # waited 7.98 s
    store.transition(job.id, JobState.RUNNING, started, started_at=started, gpu_ids=[0],
                     holding=1)
    got = stats(store)
    assert got["wait_seconds"]["normal"]["mean"] == 7.98
    print_stats(got)
    (row,) = [line for line in capsys.readouterr().out.splitlines()
              if line.startswith("normal")]
    assert row.split()[1:] == ["1", "8s", "8s", "8s"]
