"""Starting runs as a service (gq/daemon/starting.py Starting), without a daemon or a process: a
store in a temporary directory, the fake supervisor (what it is asked; the spawner's answers
each test sets) and a fixed clock (tests/support/services.py). The same with a real spawner and
shims: tests/integration/test_daemon_jobs.py, tests/integration/test_crash_safety.py."""

from __future__ import annotations

import asyncio

from gq.daemon.shim import CANCEL
from gq.daemon.supervisor import Shim, SpawnError, SpawnUnknown
from gq.model import JobState
from tests.support.services import G, NOW, Services


def test_a_start_records_the_run_before_its_shim_and_gives_it_its_cards(tmp_path):
    s = Services(tmp_path)
    job = s.job(JobState.PENDING, mem=20 * G)
    s.starting.start(s.store.get_job(job.id), [0])
    run = s.store.get_job(job.id)
    assert (run.state, run.started_at, run.gpu_ids) == (JobState.RUNNING, NOW, [0])
    assert s.supervisor.asked == [("spawn", job.id)] and job.id in s.runs.shims
    spec = s.supervisor.specs[job.id]
    env = spec["env"]
    assert (env["CUDA_VISIBLE_DEVICES"], env["GQ_GPU_MEM"], env["GQ_NUM_GPUS"]) == (
        "0", str(20 * G), "1")
    assert env["GQ_RUN_TOKEN"] == spec["token"]
    assert spec["stdout"] == str(s.layout.stdout(job.id, job.user))


def test_a_job_whose_shim_cannot_start_fails_and_its_waiters_are_told(tmp_path):
    s = Services(tmp_path)
    job = s.job(JobState.PENDING)
    s.supervisor.spawn_error = SpawnError("fork: out of memory")
    s.starting.start(s.store.get_job(job.id), [0])
    failed = s.store.get_job(job.id)
    assert failed.state == JobState.FAILED
    assert failed.reason == "could not start: fork: out of memory"
    assert failed.ended_at == NOW and not s.store.is_holding(job.id)
    assert s.told == [job.id] and job.id not in s.runs.shims


def test_a_shim_the_spawner_died_starting_is_left_to_the_next_tick(tmp_path):
    """It may run or not: the run's files tell, at the next tick (Recovery.settle_or_retry)."""
    s = Services(tmp_path)
    job = s.job(JobState.PENDING)
    s.supervisor.spawn_error = SpawnUnknown("the shim spawner died while starting a shim")
    s.starting.start(s.store.get_job(job.id), [0])
    assert s.store.get_job(job.id).state == JobState.RUNNING
    assert s.runs.unadopted == {job.id} and s.told == []


def cancelled_while_starting(s: Services, job_id: int, answer: Shim | SpawnError) -> None:
    """Start the job with an event loop (the spawner answers later), cancel it meanwhile, then
    let the spawner answer with `answer`."""
    loop = asyncio.new_event_loop()
    try:
        s.starting.attach(loop)
        s.starting.start(s.store.get_job(job_id), [0])
        assert s.supervisor.asked == [("request", job_id)]
        s.stopping.stop(s.store.get_job(job_id), JobState.CANCELLED, "cancelled by ann")
        s.supervisor.answers.append((job_id, answer))
        s.starting.on_spawned()
    finally:
        loop.close()


def test_a_job_cancelled_while_its_shim_was_being_started_is_stopped_once_it_is(tmp_path):
    """With the event loop, the spawner answers later: a cancel in between finds no shim to
    ask, so the shim is asked when the answer comes."""
    s = Services(tmp_path)
    job = s.job(JobState.PENDING)
    shim = Shim(job.id, pid=100_000 + job.id, pidfd=-1)
    cancelled_while_starting(s, job.id, shim)
    assert s.runs.shims == {job.id: shim}
    assert s.supervisor.asked == [("request", job.id), ("ask", job.id, CANCEL)]


def test_a_cancelled_job_whose_shim_could_not_start_stays_cancelled(tmp_path):
    s = Services(tmp_path)
    job = s.job(JobState.PENDING)
    cancelled_while_starting(s, job.id, SpawnError("fork: out of memory"))
    after = s.store.get_job(job.id)
    assert (after.state, after.reason) == (JobState.CANCELLED, "cancelled by ann")
    assert not s.store.is_holding(job.id)
