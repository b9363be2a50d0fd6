"""The daemon's services (gq/daemon/core.py builds them the same way) for unit tests: a store in
a temporary directory, the fake supervisor of tests/support/fakes/supervisor.py, a fixed clock
(and, for the rhythm of passes, a monotonic one the test moves), one simulated card, and lists
of what the services reported (runs recorded, jobs whose waiters were told, freezes resumed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gq.config import Config
from gq.config.telemetry import Action
from gq.daemon.collateral import Collateral
from gq.daemon.diskfull import CutLogs
from gq.daemon.ending import Ending
from gq.daemon.freezing import Freezing
from gq.daemon.kept_queue import KeptQueue
from gq.daemon.layout import Layout
from gq.daemon.passes import Passes, predict_waiting
from gq.daemon.preempting import Preempting
from gq.daemon.reading import Reading
from gq.daemon.recovery import Recovery
from gq.daemon.runs import Runs
from gq.daemon.runtimes import Fingerprints, load_run_times
from gq.daemon.starting import Starting
from gq.daemon.stopping import Stopping
from gq.gpu.base import NoCards
from gq.gpu.checkpoint import Unsupported
from gq.model import Gpu, Job, JobState
from gq.policy import Card, Host, Outcome, PendingQueue, SchedulerInput
from gq.store import Store
from tests.support.fakes.supervisor import FakeSupervisor

G = 1 << 30
NOW = 1_000.0


class Monotonic:
    """A monotonic clock that stands still unless moved (`now`), or moves by `step` at each
    reading (a pass that takes time)."""

    def __init__(self, now: float = 100.0):
        self.now, self.step = now, 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now - self.step


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
        run_times = load_run_times(self.store.history, NOW)
        self.ending = Ending(
            self.store, self.config, self.layout, self.supervisor, self.stopping,
            self.collateral, self.reading, CutLogs(self.layout.logs), self.record_run,
            run_times, self.told.append, clock)
        self.starting = Starting(self.store, self.config, self.layout, NoCards(),
                                 self.supervisor, self.runs, self.reading, self.stopping,
                                 self.ending, self.told.append, clock)
        self.freezing = Freezing(self.store, self.config, self.layout,
                                 Unsupported("no checkpoints in unit tests"), self.reading,
                                 self.runs, self.stopping, lambda path: False, self.record_run,
                                 lambda: None, clock)
        self.preempting = Preempting(self.store, self.config, self.layout, self.freezing,
                                     self.stopping)
        fingerprints = Fingerprints(self.store)
        self.kept = KeptQueue(lambda job: predict_waiting(run_times, fingerprints, job))
        self.monotonic = Monotonic()
        self.passes = Passes(self.store, self.config, self.kept, self.reading, self.collateral,
                             self.starting, self.freezing, self.preempting, run_times,
                             fingerprints, self.host, self.policy_input, clock, self.monotonic)
        self.resumed: list[int] = []  # jobs whose freeze or thaw was handed on
        self.recovery = Recovery(self.store, self.supervisor, self.runs, self.ending,
                                 lambda job: self.resumed.append(job.id), clock)

    def record_run(self, job: Job, ended_at: float, label: str,
                   failure: str | None = None) -> None:
        self.recorded.append((job.id, ended_at, label, failure))

    def host(self) -> Host:
        """The host as a pass sees it (Daemon.host): the reading's cards, no memory outside gq."""
        return Host(cpus=self.config.host_cpus, ram=self.config.host_ram,
                    cards=tuple(Card(g.index, g.memory_total, model=g.name)
                                for g in self.reading.cards))

    def policy_input(self, pending: PendingQueue, running: list[Job],
                     outcomes: dict[int, Outcome], now: float, predicted: dict[int, float],
                     slices: list[Job]) -> SchedulerInput:
        """The policy's input (Daemon.policy_input), without usage, learned utilisation or
        admin reservations."""
        return SchedulerInput(self.host(), pending, running, outcomes, now,
                              default_limit=self.config.default_time, predicted=predicted,
                              max_reservations=self.config.reservations)

    def job(self, state: JobState = JobState.RUNNING, gpus: int = 1, **fields) -> Job:
        """A job of `gpus` cards: pending, or started at 10.0 and then moved to `state`."""
        job_id = self.store.insert_job(Job(id=0, user="ann", uid=1000, command=["train"],
                                           cwd="/tmp", gpus=gpus), at=0.0)
        if state == JobState.PENDING:
            self.store.update(job_id, **fields)
            return self.store.get_job(job_id)
        self.store.transition(job_id, JobState.RUNNING, 10.0, started_at=10.0, gpu_ids=[0],
                              holding=1)
        if state != JobState.RUNNING:
            self.store.transition(job_id, state, 500.0, **fields)
        elif fields:
            self.store.update(job_id, **fields)
        return self.store.get_job(job_id)
