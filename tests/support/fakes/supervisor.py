"""A fake of the process boundary (gq/daemon/runs.py Supervision, gq/daemon/starting.py Spawning)
for the daemon's services in unit tests: it starts nothing, answers what each test sets, and
records what it is asked."""

from __future__ import annotations

import signal
from pathlib import Path

from gq.daemon.shim import ShimSpec
from gq.daemon.supervisor import RunStatus, Shim, SpawnError


class FakeSupervisor:
    def __init__(self):
        self.asked: list[tuple] = []
        self.statuses: dict[int, RunStatus] = {}  # job id -> its run's status (else NEVER_STARTED)
        self.records: dict[int, dict] = {}  # job id -> the exit record its shim left
        self.live: dict[int, Shim] = {}  # job id -> the shim adopt() finds
        self.runs: dict[int, int] = {}  # job id -> the run number of its run files
        self.leftovers = 0
        self.stuck: dict[int, int] = {}  # job id -> the pid of its shim, stuck in the kernel
        self.specs: dict[int, ShimSpec] = {}  # job id -> the spec of the shim spawn() "started"
        self.spawn_error: OSError | None = None  # what spawn() raises, if set
        # Asked without waiting (a daemon's loop): the spawner is never started here.
        self.generation = 0
        self.reader_fd: int | None = None
        self.answers: list[tuple[int, Shim | SpawnError]] = []  # what answer() gives, in turn

    def status(self, job_id: int) -> RunStatus:
        return self.statuses.get(job_id, RunStatus.NEVER_STARTED)

    def exit_record(self, job_id: int) -> dict | None:
        return self.records.get(job_id)

    def run_state(self, job_id: int) -> tuple[RunStatus, dict | None]:
        status = self.status(job_id)
        return status, (self.exit_record(job_id) if status is RunStatus.EXITED else None)

    def adopt(self, job_id: int) -> Shim | None:
        self.asked.append(("adopt", job_id))
        return self.live.get(job_id)

    def ask(self, shim: Shim, request: signal.Signals) -> None:
        self.asked.append(("ask", shim.job_id, request))

    def mark_thawed(self, job_id: int) -> None:
        self.asked.append(("mark_thawed", job_id))

    def release(self, shim: Shim) -> None:
        self.asked.append(("release", shim.job_id))

    def end_leftovers(self, job_id: int) -> int:
        self.asked.append(("end_leftovers", job_id))
        return self.leftovers

    def cgroup_of(self, job_id: int) -> str | None:
        return None

    def stuck_before_its_job(self, job_id: int) -> int | None:
        return self.stuck.get(job_id)

    def kill_shim(self, shim: Shim) -> None:
        self.asked.append(("kill_shim", shim.job_id))

    def holders(self, job_id: int) -> str:
        return "its shim (pid 1) is running"

    def finished(self, job_id: int) -> None:
        self.asked.append(("finished", job_id))

    def run_ids(self) -> list[int]:
        return sorted(self.statuses)

    def run_number(self, job_id: int) -> int | None:
        return self.runs.get(job_id)

    def forget(self, job_id: int) -> None:
        self.asked.append(("forget", job_id))

    def spawn(self, spec: ShimSpec) -> Shim:
        self.asked.append(("spawn", spec["job_id"]))
        if self.spawn_error is not None:
            raise self.spawn_error
        self.specs[spec["job_id"]] = spec
        return Shim(spec["job_id"], pid=100_000 + spec["job_id"], pidfd=-1)

    def request(self, spec: ShimSpec) -> None:
        self.asked.append(("request", spec["job_id"]))

    def answer(self) -> tuple[int, Shim | SpawnError] | None:
        return self.answers.pop(0) if self.answers else None  # None: the spawner died

    def take_lost(self) -> list[int]:
        return []

    run_root = Path("/nonexistent/run")
    run_dir = str(run_root)
