"""Stopping as a service (gq/daemon/stopping.py), on a store in a temporary directory with the
fake supervisor (tests/support/services.py): no end is recorded while a run can still hold its
cards, a stopping job says why it is not ended, and a shim stuck in the kernel before its job
began is killed. The same with real shims on a hung mount: tests/integration/test_job_files.py
and test_system_mode.py."""

from __future__ import annotations

from gq.daemon.stopping import SETTLE
from gq.daemon.supervisor import Shim
from gq.daemon.views import brief_json, job_json
from gq.model import JobState
from tests.support.services import NOW, Services


def test_a_cancelled_run_is_stopping_until_its_end_is_recorded(tmp_path):
    s = Services(tmp_path)
    s.config.kill_wait = 30.0
    job = s.job()
    s.stopping.stop(job, JobState.CANCELLED, "cancelled by ann")
    job = s.store.get_job(job.id)
    assert (job.state, job.ended_at, job.stop_asked_at) == (JobState.CANCELLED, None, NOW)
    assert job.is_stopping and s.store.is_holding(job.id)
    for view in (job_json(job), brief_json(job)):
        assert (view["state"], view["stop"], view["ended_at"]) == ("stopping", "cancelled", None)
    assert s.stopping.describe(job) == (
        "cancelled by ann; stopping: SIGTERM sent at 00:16:40 UTC, SIGKILL at 00:17:10 if it is "
        "still running; its cards are held until its processes are gone")
    s.stopping.clock = lambda: NOW + 30 + SETTLE + 40
    assert s.stopping.describe(job) == (
        "cancelled by ann; still stopping 41s after its SIGKILL was due (00:17:10 UTC), its "
        "cards held: its shim (pid 1) is running")
    assert s.stopping.describe(job, detail=False).endswith(
        f"its cards held: `gq show {job.id}` says by what")  # a listing reads no /proc
    s.ending.finish(job.id, {"exit_code": 137, "stopped": True, "ended_at": NOW + 31})
    job = s.store.get_job(job.id)
    assert (job.state, job.exit_code, job.ended_at) == (JobState.CANCELLED, 137, NOW + 31)
    assert not job.is_stopping and not s.store.is_holding(job.id)
    assert job_json(job)["state"] == "cancelled" and job_json(job)["stop"] is None


def test_a_shim_stuck_before_its_job_began_is_killed_once_seen_twice_past_the_kill(tmp_path):
    s = Services(tmp_path)
    s.config.kill_wait = 1.0
    stuck, moving, preempted = s.job(), s.job(), s.job(grace=1.0)
    for job in (stuck, moving, preempted):
        s.runs.watch(Shim(job.id, 4000 + job.id, pidfd=-1))
    for job in (stuck, moving):
        s.stopping.stop(job, JobState.CANCELLED, "cancelled by ann")
    s.stopping.preempt(preempted.id, "requeued by ann")
    s.supervisor.stuck[stuck.id] = 4000 + stuck.id
    s.supervisor.stuck[preempted.id] = 4000 + preempted.id
    s.stopping.free_stuck()  # before its SIGKILL was due: nothing
    s.stopping.clock = lambda: NOW + 1 + SETTLE
    s.stopping.free_stuck()  # seen stuck once: it may be a moment's disk wait
    assert ("kill_shim", stuck.id) not in s.supervisor.asked
    s.stopping.free_stuck()
    assert [a for a in s.supervisor.asked if a[0] == "kill_shim"] == [
        ("kill_shim", stuck.id), ("kill_shim", preempted.id)]  # the preempted: its grace is over
    events = s.store.events(stuck.id)
    assert "was blocked in the kernel before the job began" in events[-1]["detail"]
