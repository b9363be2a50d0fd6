"""The time-limit and requeue rules alone (gq/daemon/limits.py): plain jobs and a fixed time in,
what to do with each out. The daemon applying them is tested end to end in
tests/integration/test_time_and_oom.py and tests/integration/test_preemption.py."""

from __future__ import annotations

from gq.config.governance import PoolsConfig, parse_pools
from gq.daemon.limits import Stop, time_limit_stops
from gq.policy.preemption import requeue_or_hold
from gq.model import Job, JobState, Reason


def job(job_id: int, state=JobState.RUNNING, started=100.0, limit=60.0, **kw) -> Job:
    return Job(id=job_id, user="ann", command=["x"], cwd="/", state=state, started_at=started,
               time_limit=limit, **kw)


def test_a_running_job_past_its_time_is_stopped_as_timeout_and_no_other():
    jobs = [job(1), job(2, started=130.0), job(3, limit=None), job(4, state=JobState.PENDING),
            job(5, state=JobState.PREEMPTING), job(6, started=None)]
    assert time_limit_stops(jobs, 160.0, PoolsConfig()) == [
        Stop(1, JobState.TIMEOUT, "time limit 1m00s reached")]
    assert time_limit_stops(jobs, 159.9, PoolsConfig()) == []  # not before its limit


def test_an_interactive_run_past_its_pools_limit_goes_on_as_batch_work_where_the_pool_says_so():
    def pools(past_limit: str) -> PoolsConfig:
        return parse_pools({"desk": {"cards": [0], "interactive": True, "max_time": "1h",
                                     "past_limit": past_limit}})

    attached = {"key": "0" * 32, "tty": True, "no_hangup": False}  # gq run: its caller waits
    jobs = [job(1, interactive=True, pool="desk"), job(2, pool="desk"),
            job(3, interactive=True, pool="desk", attach=attached)]
    one, two, run = time_limit_stops(jobs, 1000.0, pools("requeue"))
    assert (one.state, one.fields) == (JobState.PREEMPTING,
                                       {"interactive": 0, "pool": None, "time_limit": None})
    assert one.reason == "interactive time limit 1m00s reached: requeued as batch work"
    assert two.state == JobState.TIMEOUT  # batch work in that pool: stopped
    assert run.state == JobState.TIMEOUT  # an attached run ends, never requeued
    assert [s.state for s in time_limit_stops(jobs, 1000.0, pools("stop"))] == [
        JobState.TIMEOUT, JobState.TIMEOUT, JobState.TIMEOUT]


def test_a_preempted_run_is_requeued_until_it_has_been_preempted_too_often():
    assert requeue_or_hold(job(1, preemptions=5), True, 5, "it exited") == (
        JobState.PENDING, None, "requeued: it exited")
    state, reason, detail = requeue_or_hold(job(1, preemptions=6), True, 5, "it exited")
    assert (state, reason) == (JobState.HELD, Reason.HELD)
    assert "preempted 6 times, more than [preemption] max_requeues = 5" in detail
    assert "gq release 1" in detail
    # `gq requeue` (not a preemption) never holds, however often
    assert requeue_or_hold(job(1, preemptions=9), False, 5, "asked")[0] == JobState.PENDING
