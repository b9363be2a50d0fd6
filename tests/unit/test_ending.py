"""How runs end, as a service (gq/daemon/ending.py Ending), without a daemon or a process: a
store in a temporary directory, a fake supervisor that records what it is asked, and a fixed
clock (tests/support/services.py); the last test builds the Daemon object itself, which serves
nothing and starts no process. The same ends with real shims are tested in
tests/integration/test_daemon_jobs.py and tests/integration/test_preemption.py."""

from __future__ import annotations

from gq.daemon.ending import PREEMPTED_FOR
from gq.model import JobState, Reason
from tests.support.services import Services


def test_an_ended_run_has_its_exit_code_recorded_and_its_waiters_told(tmp_path):
    s = Services(tmp_path)
    ok, failed = s.job(), s.job()
    s.ending.finish(ok.id, {"exit_code": 0, "ended_at": 900.0})
    s.ending.finish(failed.id, {"exit_code": 3, "ended_at": 950.0})
    ok, failed = s.store.get_job(ok.id), s.store.get_job(failed.id)
    assert (ok.state, ok.exit_code, ok.ended_at) == (JobState.COMPLETED, 0, 900.0)
    assert (failed.state, failed.exit_code, failed.ended_at) == (JobState.FAILED, 3, 950.0)
    assert not s.store.is_holding(ok.id) and not s.store.is_holding(failed.id)
    assert s.told == [ok.id, failed.id]
    assert [(r[0], r[2]) for r in s.recorded] == [(ok.id, "completed"), (failed.id, "failed")]
    # Its run files may go; an exit record means nothing was left behind to end.
    assert s.supervisor.asked == [("finished", ok.id), ("finished", failed.id)]


def test_a_run_whose_shim_died_without_a_record_is_lost_and_its_leftovers_ended(tmp_path):
    s = Services(tmp_path)
    job = s.job()
    s.ending.finish(job.id, None)
    job = s.store.get_job(job.id)
    assert job.state == JobState.LOST and "without recording an exit status" in job.reason
    assert s.supervisor.asked == [("end_leftovers", job.id), ("finished", job.id)]
    assert s.told == [job.id]


def preempted_run_ends(s: Services, preemptions: int):
    """A run stopped for job 9, its `preemptions`-th preemption, ends as stopped (143): the
    job before and after."""
    job = s.job(JobState.PREEMPTING, reason=f"{PREEMPTED_FOR} 9 (high)", preemptions=preemptions)
    s.ending.finish(job.id, {"exit_code": 143, "stopped": True, "ended_at": 900.0})
    return job, s.store.get_job(job.id)


def test_a_preempted_run_is_queued_again(tmp_path):
    s = Services(tmp_path, max_requeues=5)
    job, after = preempted_run_ends(s, preemptions=1)
    assert after.state == JobState.PENDING
    assert after.restarts == job.restarts + 1 and after.gpu_ids == [] and after.exit_code is None
    assert not s.store.is_holding(job.id)
    assert [(r[0], r[2]) for r in s.recorded] == [(job.id, "preempted")]
    assert s.told == [job.id]


def test_a_run_preempted_more_than_max_requeues_times_is_held(tmp_path):
    s = Services(tmp_path, max_requeues=1)
    job, after = preempted_run_ends(s, preemptions=2)
    assert (after.state, after.reason) == (JobState.HELD, Reason.HELD)
    assert f"gq release {job.id}" in s.store.events(job.id)[-1]["detail"]


def test_a_preempted_run_that_ended_by_itself_is_recorded_as_its_own_end(tmp_path):
    """Asked to stop, it had ended before its shim got the request: not requeued."""
    s = Services(tmp_path)
    job = s.job(JobState.PREEMPTING, reason=f"{PREEMPTED_FOR} 9 (high)", preemptions=1)
    s.ending.finish(job.id, {"exit_code": 0, "ended_at": 900.0})
    assert s.store.get_job(job.id).state == JobState.COMPLETED


def test_a_recorded_run_makes_the_daemon_forget_what_it_learned_of_commands(tmp_path,
                                                                            monkeypatch):
    """Ending's runs and Freezing's frozen ones are recorded through Daemon.record_run, which
    forgets the utilisation learned of commands: the next pass reads it again, this run
    included. (Freezing's were not: what was learned stayed as it was until a job ended.)"""
    from gq.config import Config
    from gq.daemon.core import Daemon
    from gq.daemon.layout import Layout
    from gq.gpu import open_backend
    from gq.model import Job

    monkeypatch.setenv("GQ_SIM_GPUS", "1x80G")
    daemon = Daemon(Layout(tmp_path), Config(host_cpus=4, host_ram=None),
                    open_backend(tmp_path), "here", clock=lambda: 1000.0)
    try:
        job_id = daemon.store.insert_job(Job(id=0, user="ann", uid=1000, command=["train"],
                                             cwd="/tmp", gpus=1), at=0.0)
        daemon.store.transition(job_id, JobState.RUNNING, 10.0, started_at=10.0,
                                gpu_ids=[0], holding=1)
        daemon.known_utils["train in /tmp"] = 40.0
        daemon.record_run(daemon.store.get_job(job_id), 900.0, "frozen")
        assert daemon.known_utils == {}
    finally:
        daemon.close()
