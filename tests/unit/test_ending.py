"""How runs end, as a service (gq/daemon/ending.py Ending), without a daemon or a process: a
store in a temporary directory, a fake supervisor that records what it is asked, and a fixed
clock. The same ends with real shims are tested in tests/integration/test_daemon_jobs.py and
tests/integration/test_preemption.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gq.config import Config
from gq.config.telemetry import Action
from gq.daemon.collateral import Collateral
from gq.daemon.diskfull import CutLogs
from gq.daemon.ending import PREEMPTED_FOR, Ending
from gq.daemon.layout import Layout
from gq.daemon.reading import Reading
from gq.daemon.runs import Runs
from gq.daemon.runtimes import load_run_times
from gq.daemon.stopping import Stopping
from gq.model import Gpu, Job, JobState, Reason
from gq.store import Store
from tests.support.fakes.supervisor import FakeSupervisor

G = 1 << 30
NOW = 1_000.0


class Ends:
    """An Ending with what it was given at hand: the store, the fake supervisor, and what it
    reported (runs recorded, jobs whose waiters were told)."""

    def __init__(self, tmp_path: Path, max_requeues: int = 5):
        self.config = Config(host_cpus=4, host_ram=None)
        self.config.preemption = replace(self.config.preemption, max_requeues=max_requeues)
        layout = Layout(tmp_path / "home")
        layout.logs.mkdir(parents=True)
        self.store = Store(tmp_path / "gq.db")
        self.supervisor = FakeSupervisor()
        runs = Runs(self.supervisor, on_exit=lambda job_id: None)
        reading = Reading(cards=[Gpu(0, "GPU-0", "sim", 80 * G, "0")])
        clock = lambda: NOW  # noqa: E731
        stopping = Stopping(self.store, self.config, runs, reading, clock)
        collateral = Collateral(self.store, reading, stopping,
                                lambda kind, tier: Action("report"))
        self.recorded: list[tuple[int, float, str, str | None]] = []
        self.told: list[int] = []
        self.ending = Ending(
            self.store, self.config, layout, self.supervisor, stopping, collateral, reading,
            CutLogs(layout.logs),
            lambda job, ended_at, label, failure: self.recorded.append(
                (job.id, ended_at, label, failure)),
            load_run_times(self.store.history, NOW), self.told.append, lambda: None, clock)

    def running_job(self, **fields) -> Job:
        job_id = self.store.insert_job(Job(id=0, user="ann", uid=1000, command=["train"],
                                           cwd="/tmp", gpus=1), at=0.0)
        self.store.transition(job_id, JobState.RUNNING, 10.0, started_at=10.0, gpu_ids=[0],
                              holding=1)
        if fields:
            self.store.transition(job_id, fields.pop("state", JobState.RUNNING), 500.0,
                                  **fields)
        return self.store.get_job(job_id)


def test_an_ended_run_has_its_exit_code_recorded_and_its_waiters_told(tmp_path):
    ends = Ends(tmp_path)
    ok, failed = ends.running_job(), ends.running_job()
    ends.ending.finish(ok.id, {"exit_code": 0, "ended_at": 900.0})
    ends.ending.finish(failed.id, {"exit_code": 3, "ended_at": 950.0})
    ok, failed = ends.store.get_job(ok.id), ends.store.get_job(failed.id)
    assert (ok.state, ok.exit_code, ok.ended_at) == (JobState.COMPLETED, 0, 900.0)
    assert (failed.state, failed.exit_code, failed.ended_at) == (JobState.FAILED, 3, 950.0)
    assert not ends.store.is_holding(ok.id) and not ends.store.is_holding(failed.id)
    assert ends.told == [ok.id, failed.id]
    assert [(r[0], r[2]) for r in ends.recorded] == [(ok.id, "completed"), (failed.id, "failed")]
    # Its run files may go; an exit record means nothing was left behind to end.
    assert ends.supervisor.asked == [("finished", ok.id), ("finished", failed.id)]


def test_a_run_whose_shim_died_without_a_record_is_lost_and_its_leftovers_ended(tmp_path):
    ends = Ends(tmp_path)
    job = ends.running_job()
    ends.ending.finish(job.id, None)
    job = ends.store.get_job(job.id)
    assert job.state == JobState.LOST and "without recording an exit status" in job.reason
    assert ends.supervisor.asked == [("end_leftovers", job.id), ("finished", job.id)]
    assert ends.told == [job.id]


def test_a_preempted_run_is_queued_again(tmp_path):
    ends = Ends(tmp_path, max_requeues=5)
    job = ends.running_job(state=JobState.PREEMPTING, reason=f"{PREEMPTED_FOR} 9 (high)",
                           preemptions=1)
    ends.ending.finish(job.id, {"exit_code": 143, "stopped": True, "ended_at": 900.0})
    after = ends.store.get_job(job.id)
    assert after.state == JobState.PENDING
    assert after.restarts == job.restarts + 1 and after.gpu_ids == [] and after.exit_code is None
    assert not ends.store.is_holding(job.id)
    assert [(r[0], r[2]) for r in ends.recorded] == [(job.id, "preempted")]
    assert ends.told == [job.id]


def test_a_run_preempted_more_than_max_requeues_times_is_held(tmp_path):
    ends = Ends(tmp_path, max_requeues=1)
    job = ends.running_job(state=JobState.PREEMPTING, reason=f"{PREEMPTED_FOR} 9 (high)",
                           preemptions=2)
    ends.ending.finish(job.id, {"exit_code": 143, "stopped": True, "ended_at": 900.0})
    after = ends.store.get_job(job.id)
    assert (after.state, after.reason) == (JobState.HELD, Reason.HELD)
    assert f"gq release {job.id}" in ends.store.events(job.id)[-1]["detail"]


def test_a_preempted_run_that_ended_by_itself_is_recorded_as_its_own_end(tmp_path):
    """Asked to stop, it had ended before its shim got the request: not requeued."""
    ends = Ends(tmp_path)
    job = ends.running_job(state=JobState.PREEMPTING, reason=f"{PREEMPTED_FOR} 9 (high)",
                           preemptions=1)
    ends.ending.finish(job.id, {"exit_code": 0, "ended_at": 900.0})
    assert ends.store.get_job(job.id).state == JobState.COMPLETED
