"""What a starting daemon does with the runs of an earlier one, as a service
(gq/daemon/recovery.py Recovery), without a daemon or a process: a store in a temporary
directory, a fake supervisor that says what each run's files say and records what it is asked,
and a fixed clock (tests/support/services.py). With real shims and a killed daemon:
tests/integration/test_crash_safety.py."""

from __future__ import annotations

from gq.daemon import shim as requests
from gq.daemon.supervisor import RunStatus, Shim
from gq.model import JobState
from tests.support.services import Services


def test_a_job_whose_shim_left_an_exit_record_has_its_end_recorded(tmp_path):
    s = Services(tmp_path)
    job = s.job()
    s.supervisor.statuses[job.id] = RunStatus.EXITED
    s.supervisor.records[job.id] = {"exit_code": 3, "ended_at": 700.0}
    s.recovery.recover()
    after = s.store.get_job(job.id)
    assert (after.state, after.exit_code, after.ended_at) == (JobState.FAILED, 3, 700.0)
    assert not s.store.is_holding(job.id) and s.told == [job.id]
    assert not s.runs.unadopted and not s.runs.shims


def test_a_live_shim_is_watched_again_and_asked_for_the_stop_decided_before_the_crash(tmp_path):
    s = Services(tmp_path)
    running, cancelled = s.job(), s.job(JobState.CANCELLED, reason="cancelled by ann")
    for job in (running, cancelled):
        s.supervisor.statuses[job.id] = RunStatus.ALIVE
        s.supervisor.live[job.id] = Shim(job.id, pid=4000 + job.id, pidfd=-1)
    s.recovery.recover()
    assert set(s.runs.shims) == {running.id, cancelled.id} and not s.runs.unadopted
    assert ("ask", cancelled.id, requests.CANCEL) in s.supervisor.asked
    assert not [a for a in s.supervisor.asked if a[0] == "ask" and a[1] == running.id]
    assert s.store.get_job(running.id).state == JobState.RUNNING and not s.told


def test_a_shim_yet_to_write_its_pid_is_settled_at_a_later_tick(tmp_path):
    s = Services(tmp_path)
    job = s.job()
    s.supervisor.statuses[job.id] = RunStatus.ALIVE  # adopt() finds no shim yet
    s.recovery.recover()
    assert s.runs.unadopted == {job.id} and not s.runs.shims
    s.supervisor.live[job.id] = Shim(job.id, pid=4242, pidfd=-1)
    s.recovery.settle_or_retry(job.id)
    assert not s.runs.unadopted and set(s.runs.shims) == {job.id}


def test_a_job_whose_shim_never_started_is_queued_again(tmp_path):
    s = Services(tmp_path)
    job = s.job()  # no run files: RunStatus.NEVER_STARTED
    s.recovery.recover()
    after = s.store.get_job(job.id)
    assert after.state == JobState.PENDING and after.gpu_ids == [] and after.started_at is None
    assert not s.recorded  # it cost nothing


def test_a_freeze_under_way_is_handed_on_and_its_shim_asked_nothing(tmp_path):
    s = Services(tmp_path)
    job = s.job(JobState.PREEMPTING, reason="preempted for job 9 (high): freezing",
                freeze_op="freeze")
    s.supervisor.statuses[job.id] = RunStatus.ALIVE
    s.supervisor.live[job.id] = Shim(job.id, pid=4242, pidfd=-1)
    s.recovery.recover()
    assert s.resumed == [job.id]
    assert not [a for a in s.supervisor.asked if a[0] == "ask"]


def test_a_run_the_store_lost_is_recovered_from_its_run_files(tmp_path):
    """A power cut lost the relaxed commit of the start: the job is pending in the store, but
    its shim ran and recorded its exit."""
    s = Services(tmp_path)
    job = s.job(JobState.PENDING)
    s.supervisor.statuses[job.id] = RunStatus.EXITED
    s.supervisor.records[job.id] = {"exit_code": 0, "ended_at": 900.0}
    s.supervisor.runs[job.id] = job.restarts
    s.recovery.recover()
    after = s.store.get_job(job.id)
    assert (after.state, after.exit_code) == (JobState.COMPLETED, 0)
    assert "recovered from its run directory" in str(s.store.events(job.id))


def test_the_files_of_an_earlier_recorded_run_are_removed(tmp_path):
    s = Services(tmp_path)
    job = s.job(JobState.PENDING, restarts=1)
    s.supervisor.statuses[job.id] = RunStatus.EXITED
    s.supervisor.runs[job.id] = 0  # run 0 ended and was recorded; run 1 waits to start
    s.recovery.recover()
    assert s.store.get_job(job.id).state == JobState.PENDING
    assert ("forget", job.id) in s.supervisor.asked
