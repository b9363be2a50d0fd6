"""The daemon's services (gq/daemon/core.py builds them the same way) for unit tests: a store in
a temporary directory, the fake supervisor of tests/support/fakes/supervisor.py, a fixed clock,
one simulated card, and lists of what the services reported (runs recorded, jobs whose waiters
were told, freezes resumed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gq.config import Config
from gq.config.telemetry import Action
from gq.daemon.collateral import Collateral
from gq.daemon.diskfull import CutLogs
from gq.daemon.ending import Ending
from gq.daemon.layout import Layout
from gq.daemon.reading import Reading
from gq.daemon.recovery import Recovery
from gq.daemon.runs import Runs
from gq.daemon.runtimes import load_run_times
from gq.daemon.stopping import Stopping
from gq.model import Gpu, Job, JobState
from gq.store import Store
from tests.support.fakes.supervisor import FakeSupervisor

G = 1 << 30
NOW = 1_000.0


class Services:
    def __init__(self, tmp_path: Path, max_requeues: int = 5):
        self.config = Config(host_cpus=4, host_ram=None)
        self.config.preemption = replace(self.config.preemption, max_requeues=max_requeues)
        self.layout = Layout(tmp_path / "home")
        self.layout.logs.mkdir(parents=True)
        self.store = Store(tmp_path / "gq.db")
        self.supervisor = FakeSupervisor()
        self.exited: list[int] = []  # shims Runs saw exit
        self.runs = Runs(self.supervisor, on_exit=self.exited.append)
        self.reading = Reading(cards=[Gpu(0, "GPU-0", "sim", 80 * G, "0")])
        clock = lambda: NOW  # noqa: E731
        self.stopping = Stopping(self.store, self.config, self.runs, self.reading, clock)
        self.collateral = Collateral(self.store, self.reading, self.stopping,
                                     lambda kind, tier: Action("report"))
        self.recorded: list[tuple[int, float, str, str | None]] = []
        self.told: list[int] = []
        self.ending = Ending(
            self.store, self.config, self.layout, self.supervisor, self.stopping,
            self.collateral, self.reading, CutLogs(self.layout.logs),
            lambda job, ended_at, label, failure: self.recorded.append(
                (job.id, ended_at, label, failure)),
            load_run_times(self.store.history, NOW), self.told.append, lambda: None, clock)
        self.resumed: list[int] = []  # jobs whose freeze or thaw was handed on
        self.recovery = Recovery(self.store, self.supervisor, self.runs, self.ending,
                                 lambda job: self.resumed.append(job.id), clock)

    def job(self, state: JobState = JobState.RUNNING, **fields) -> Job:
        """A job of one card: pending, or started at 10.0 and then moved to `state`."""
        job_id = self.store.insert_job(Job(id=0, user="ann", uid=1000, command=["train"],
                                           cwd="/tmp", gpus=1), at=0.0)
        if state == JobState.PENDING:
            self.store.update(job_id, **fields)
            return self.store.get_job(job_id)
        self.store.transition(job_id, JobState.RUNNING, 10.0, started_at=10.0, gpu_ids=[0],
                              holding=1)
        if state != JobState.RUNNING or fields:
            self.store.transition(job_id, state, 500.0, **fields)
        return self.store.get_job(job_id)
