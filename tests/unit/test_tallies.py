"""The counters' table (gq/store/tallies.py): counted with the change they count, kept across a
reopen, never lower after a database is replaced by an older one (restore)."""

from __future__ import annotations

import shutil

from gq.model import ArrayPart, Job, JobState
from gq.store import Store
from gq.store.backup import restore


def new_job(**kw) -> Job:
    return Job(id=0, user="ann", command=["python", "train.py"], cwd="/tmp", gpus=2, **kw)


def test_counters_grow_with_submits_ends_and_runs_and_survive_a_reopen(tmp_path):
    store = Store(tmp_path / "gq.db")
    assert store.tallies()["jobs_submitted"] == {}
    a = store.insert_job(new_job(), 10.0)
    store.insert_array([new_job(array=ArrayPart(0, i, 3, None, {})) for i in range(3)], 10.0)
    store.transition(a, JobState.RUNNING, 11.0, started_at=11.0, gpu_ids=[0, 1])
    job = store.get_job(a)
    store.add_run(job, 1.0, 71.0, "oom", failure="gpu_oom")
    store.transition(a, JobState.OOM, 71.0, ended_at=71.0, exit_code=1)
    store.end_waiting([j for j in store.queue() if j.id != a], JobState.CANCELLED, 72.0, "x")
    b = store.insert_job(new_job(), 80.0)
    store.transition(b, JobState.RUNNING, 81.0, started_at=81.0, gpu_ids=[0, 1])
    store.transition(b, JobState.PREEMPTING, 82.0, reason="preempted for job 9")
    store.offences.open("idle", 83.0, "0% for 30m", {}, "warned", job_id=b, user="ann")
    store.close()

    found = Store(tmp_path / "gq.db").tallies()
    assert found["jobs_submitted"] == {"": 5}
    assert found["jobs_ended"] == {"oom": 1, "cancelled": 3}
    assert found["runs_failed"] == {"gpu_oom": 1} and found["oom"] == {"": 1}
    assert found["gpu_seconds"] == {"ann": 120.0}
    assert found["preemptions"] == {"signal": 1} and found["offences"] == {"idle": 1}


def test_a_restored_backup_does_not_lower_a_counter(tmp_path):
    store = Store(tmp_path / "gq.db")
    store.insert_job(new_job(), 1.0)
    store.close()
    shutil.copy(tmp_path / "gq.db", tmp_path / "backup.db")
    store = Store(tmp_path / "gq.db")
    store.insert_job(new_job(), 2.0)
    store.close()

    assert Store(tmp_path / "backup.db").tallies()["jobs_submitted"] == {"": 1}
    restore(tmp_path / "gq.db", tmp_path / "backup.db", highest_id=2)
    assert Store(tmp_path / "gq.db").tallies()["jobs_submitted"] == {"": 2}
