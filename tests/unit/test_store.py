"""The store: durable jobs, checked transitions, an append-only event history."""

from __future__ import annotations

import sqlite3

import pytest

from gq.model import (
    ArrayPart, ENDED_STATES, TRANSITIONS, DepKind, IllegalTransition, Job, JobState, Notify, Tier,
    check_transition,
)
from gq.store import Store
from gq.store.schema import migrations


def new_job(**kw) -> Job:
    return Job(id=0, user="ann", command=["python", "train.py"], cwd="/tmp", **kw)


def test_insert_read_and_events(tmp_path):
    store = Store(tmp_path / "gq.db")
    job_id = store.insert_job(new_job(env={"A": "1"}), at=10.0)
    store.transition(job_id, JobState.RUNNING, 11.0, started_at=11.0, gpu_ids=[2, 3])
    store.transition(job_id, JobState.COMPLETED, 12.0, ended_at=12.0, exit_code=0)
    job = store.get_job(job_id)
    assert (job.state, job.gpu_ids, job.env, job.exit_code) == (JobState.COMPLETED, [2, 3],
                                                                {"A": "1"}, 0)
    assert [(e["old_state"], e["new_state"]) for e in store.events(job_id)] == [
        (None, "pending"), ("pending", "running"), ("running", "completed")]


def test_the_jobs_in_memory_are_their_rows_after_every_change(tmp_path):
    """A change the store knows the values of updates its cached job without reading the row
    back (Store._recache): after each, the cache is what a store opened afresh reads."""
    store = Store(tmp_path / "gq.db")

    def cached() -> dict:
        return {j.id: j for j in [*store.queue(), *store.holding_jobs()]}

    def check() -> None:
        fresh = Store(tmp_path / "gq.db")
        assert cached() == {j.id: j for j in [*fresh.queue(), *fresh.holding_jobs()]}
        fresh.close()

    a, b = (store.insert_job(new_job(gpus=1, deps={}), at=1.0) for _ in range(2))
    steps = [
        lambda: store.transition(a, JobState.RUNNING, 2.0, started_at=2.0, gpu_ids=[1],
                                 holding=1, ended_at=None, exit_code=None, peak_mem=None),
        lambda: store.update(a, peak_mem=3 << 30, host_mem=None, freeze_op=None),
        lambda: store.transition(b, JobState.HELD, 2.5, reason="held by ann"),
        lambda: store.transition(a, JobState.PREEMPTING, 3.0, reason="preempted for job 9"),
        lambda: store.transition(a, JobState.PENDING, 4.0, restarts=1, started_at=None,
                                 gpu_ids=[], holding=0, exit_code=None, failure=None,
                                 failure_evidence=[], reason="Priority"),
        lambda: store.transition(a, JobState.RUNNING, 5.0, started_at=5.0, gpu_ids=[0],
                                 holding=1),
        lambda: store.transition(a, JobState.FAILED, 6.0, ended_at=6.0, exit_code=3,
                                 holding=0, failure="oom", failure_evidence=["CUDA out of"]),
        lambda: store.transition(b, JobState.PENDING, 7.0, mem=5 << 30, oom_retries=1),
    ]
    for step in steps:
        step()
        check()
    assert set(cached()) == {b} and store.get_job(a).failure_evidence == ["CUDA out of"]


def test_illegal_transitions_are_refused_and_change_nothing(tmp_path):
    store = Store(tmp_path / "gq.db")
    job_id = store.insert_job(new_job(), at=1.0)
    with pytest.raises(IllegalTransition):
        store.transition(job_id, JobState.COMPLETED, 2.0)
    assert store.get_job(job_id).state == JobState.PENDING
    assert len(store.events(job_id)) == 1


def test_transition_table_shape():
    for state in ENDED_STATES:  # an ended job can only be requeued
        assert TRANSITIONS[state] == {JobState.PENDING}
    check_transition(JobState.RUNNING, JobState.PREEMPTING)
    with pytest.raises(IllegalTransition):
        check_transition(JobState.HELD, JobState.RUNNING)


def test_wal_and_full_sync(tmp_path):
    store = Store(tmp_path / "gq.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_a_transaction_commits_as_durably_as_where_it_began_and_says_so_once(tmp_path):
    store = Store(tmp_path / "gq.db")

    def level() -> int:
        return store.db.execute("PRAGMA synchronous").fetchone()[0]

    statements: list[str] = []
    with store.db.tracer(lambda sql, params: statements.append(sql)):
        for _ in range(3):
            with store.relaxed(), store.atomic():
                assert level() == 1  # NORMAL
        with store.atomic():
            assert level() == 2  # FULL again, outside relaxed()
        with store.relaxed():
            store.insert_job(new_job(), at=1.0)  # sqlite-utils' own transactions too
            assert level() == 1
    assert [s for s in statements if s.startswith("PRAGMA synchronous=")] == [
        "PRAGMA synchronous=NORMAL", "PRAGMA synchronous=FULL", "PRAGMA synchronous=NORMAL"]


@pytest.mark.parametrize("fields", [
    {}, {"time_limit": 3600, "mem": 12.0, "gpus": 2, "preemptible": True, "grace": 30},
    {"time_limit": 90.5, "deps": {DepKind.AFTEROK: [1, 2]}, "reason": "Dependency",
     "signal_before": 60, "priority": Tier.HIGH, "umask": 0o22, "gpus_max": 4},
])
def test_a_queued_job_is_cached_as_a_read_of_its_row_would_give_it(tmp_path, fields):
    """insert_job caches the job from what it wrote, without reading the row back: the job
    must be the one the read would give (an integer into a REAL column comes back a float)."""
    store = Store(tmp_path / "gq.db")
    job_id = store.insert_job(new_job(**fields), at=10.0)
    cached = store.waiting_job(job_id)
    store._refresh(job_id)
    assert cached == store.waiting_job(job_id)
    assert [type(getattr(cached, f)) for f in fields] == \
        [type(getattr(store.waiting_job(job_id), f)) for f in fields]


def test_a_job_submitted_here_is_read_whole_from_memory_as_its_row_would_give_it(tmp_path):
    """insert_job keeps a job's command, directory and environment until it ends (get_job
    then reads no row): the job must be the one its row gives, every step of its life."""
    store = Store(tmp_path / "gq.db")
    job_id = store.insert_job(new_job(env={"A": "1", "B": "x y"}, time_limit=60,
                                      notify=Notify(command="true")), at=10.0)

    def as_read() -> tuple:
        fresh = Store(tmp_path / "gq.db")  # no memory of it: reads the row
        return fresh.get_job(job_id), fresh.get_job(job_id, env=False)

    assert (store.get_job(job_id), store.get_job(job_id, env=False)) == as_read()
    reads: list[str] = []
    store.db.conn.set_trace_callback(reads.append)
    store.get_job(job_id)
    store.db.conn.set_trace_callback(None)
    assert reads == []  # no row read
    store.get_job(job_id).env["A"] = "changed"  # a copy: set_array_env changes its own
    store.transition(job_id, JobState.RUNNING, 11.0, started_at=11.0, gpu_ids=[1], holding=1)
    assert (store.get_job(job_id), store.get_job(job_id, env=False)) == as_read()
    store.update(job_id, env={"A": "2"}, cwd="/srv")  # kept no longer: read
    assert store.get_job(job_id) == as_read()[0] and store.get_job(job_id).env == {"A": "2"}
    store.transition(job_id, JobState.COMPLETED, 12.0, ended_at=12.0, exit_code=0, holding=0)
    assert store.get_job(job_id) == as_read()[0]
    assert not store._heavy  # an ended job is read from its row


def test_committed_job_is_visible_to_another_connection_at_once(tmp_path):
    store = Store(tmp_path / "gq.db")
    job_id = store.insert_job(new_job(), at=1.0)
    other = sqlite3.connect(tmp_path / "gq.db")
    assert other.execute("SELECT user FROM jobs WHERE id = ?", [job_id]).fetchone() == ("ann",)


def test_ids_are_never_reused(tmp_path):
    store = Store(tmp_path / "gq.db")
    first = store.insert_job(new_job(), at=1.0)
    store.db.execute("DELETE FROM jobs WHERE id = ?", [first])
    store.db.conn.commit()
    assert store.insert_job(new_job(), at=2.0) == first + 1


def test_reopening_applies_no_migration_twice(tmp_path):
    Store(tmp_path / "gq.db").close()
    store = Store(tmp_path / "gq.db")
    assert [m.name for m in migrations.applied(store.db)] == [
        "m001_jobs_and_events", "m002_runs", "m003_preemption", "m004_arrays", "m005_notify",
        "m006_telemetry", "m007_peers", "m008_identity", "m009_idempotency", "m010_governance",
        "m011_slurm", "m012_slurm_jobs", "m013_failures", "m014_reservation_record",
        "m015_written_by", "m016_cleared", "m017_freeze", "m018_counters", "m019_run",
        "m020_stop_asked_at"]
    assert migrations.pending(store.db) == []


def test_peers_from_before_slurm_are_upgraded_as_gq_peers(tmp_path):
    from sqlite_utils import Database

    old = Database(tmp_path / "gq.db")
    migrations.apply(old, stop_before="m011_slurm")
    old.execute("INSERT INTO peers (name, address, added_at) VALUES ('gpu2', 'gpu2', 1.0)")
    old.conn.commit()
    old.close()
    (peer,) = Store(tmp_path / "gq.db").peers()
    assert (peer["name"], peer["kind"], peer["options"]) == ("gpu2", "gq", None)


def test_jobs_sent_to_slurm_are_kept_and_forgotten_with_their_peer(tmp_path):
    from sqlite_utils import Database

    old = Database(tmp_path / "gq.db")
    migrations.apply(old, stop_before="m012_slurm_jobs")
    old.execute("INSERT INTO peers (name, address, added_at, kind) VALUES ('hpc', '', 1, "
                "'slurm')")
    old.conn.commit()
    old.close()
    store = Store(tmp_path / "gq.db")
    sent = {"id": 7, "command": ["python", "x.py"], "priority": "low", "signal": "SIGUSR1",
            "signal_before": 60.0, "job": None}
    store.slurm_jobs.save("hpc", [sent])
    store.slurm_jobs.save("hpc", [{**sent, "job": {"id": 7, "state": "completed"}}])
    store.close()
    store = Store(tmp_path / "gq.db")
    assert store.slurm_jobs.of("hpc") == [{**sent, "job": {"id": 7, "state": "completed"}}]
    store.remove_peer("hpc")
    assert store.slurm_jobs.of("hpc") == []


def _old_database_with_a_job(path, stop_before: str, state: str = "pending") -> None:
    """A database as a gq from before `stop_before` left it, with one job of ann's."""
    from sqlite_utils import Database

    old = Database(path)
    migrations.apply(old, stop_before=stop_before)
    old.execute(
        "INSERT INTO jobs (user, uid, state, priority, gpus, cpus, command, cwd, env, deps, "
        "submitted_at) VALUES ('ann', 1000, ?, 'normal', 1, 1, '[\"x\"]', '/', '{}', "
        "'{}', 5.0)", [state]
    )
    old.conn.commit()
    old.close()


def test_a_database_from_before_runs_is_upgraded_with_its_jobs(tmp_path):
    # m002_runs: what gq 0.1.0's first cut created
    _old_database_with_a_job(tmp_path / "gq.db", "m002_runs")
    store = Store(tmp_path / "gq.db")
    assert store.db["runs"].exists()
    (job,) = store.queue()
    assert (job.user, job.command, job.submitted_at) == ("ann", [], 5.0)  # light: no command
    assert store.get_job(job.id).command == ["x"]


def test_a_database_from_before_preemption_is_upgraded_with_tier_defaults(tmp_path):
    from sqlite_utils import Database

    old = Database(tmp_path / "gq.db")
    migrations.apply(old, stop_before="m003_preemption")
    for tier in ("low", "high"):
        old.execute(
            "INSERT INTO jobs (user, uid, state, priority, gpus, mem, cpus, command, cwd, env, "
            "deps, submitted_at) VALUES ('ann', 1000, 'pending', ?, 1, 1024, 1, '[\"x\"]', "
            "'/', '{}', '{}', 5.0)", [tier])
    old.conn.commit()
    old.close()
    store = Store(tmp_path / "gq.db")
    low, high = sorted(store.queue(), key=lambda j: j.id)
    assert (low.preemptible, high.preemptible) == (True, False)  # the tier defaults
    assert (low.signal, low.grace, low.preemptions, low.retry_oom, low.peak_mem) == (
        "SIGTERM", None, 0, 0, None)
    assert low.mem == 1024 and store.get_job(low.id).command == ["x"]


def test_a_database_from_before_arrays_is_upgraded_and_its_jobs_are_single(tmp_path):
    _old_database_with_a_job(tmp_path / "gq.db", "m004_arrays", state="held")
    store = Store(tmp_path / "gq.db")
    (job,) = store.queue()
    assert job.array is None and store.get_job(job.id).notify is None
    ids = store.insert_array([new_job(array=ArrayPart(0, i, 2, 1)) for i in (0, 1)], at=6.0)
    assert ids == [job.id + 1, job.id + 2]
    assert [store.get_job(i).array for i in ids] == [ArrayPart(ids[0], i, 2, 1) for i in (0, 1)]
    assert store.array_members(ids[0]) == ids and store.array_members(job.id) == []


def test_a_database_from_before_identity_is_upgraded_and_its_jobs_keep_the_daemons_umask(
        tmp_path):
    _old_database_with_a_job(tmp_path / "gq.db", "m008_identity")
    store = Store(tmp_path / "gq.db")
    (job,) = store.queue()
    assert store.get_job(job.id).umask is None  # runs with the daemon's, as it would have
    new = store.insert_job(new_job(umask=0o027), at=6.0)
    assert store.get_job(new).umask == 0o027
