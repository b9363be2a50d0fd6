"""A fake of the process boundary (gq/daemon/runs.py Supervision) for the daemon's services in
unit tests: it starts nothing, answers what each test sets, and records what it is asked."""

from __future__ import annotations

import signal

from gq.daemon.supervisor import RunStatus, Shim


class FakeSupervisor:
    def __init__(self):
        self.asked: list[tuple] = []
        self.statuses: dict[int, RunStatus] = {}  # job id -> its run's status (else NEVER_STARTED)
        self.records: dict[int, dict] = {}  # job id -> the exit record its shim left
        self.live: dict[int, Shim] = {}  # job id -> the shim adopt() finds
        self.runs: dict[int, int] = {}  # job id -> the run number of its run files
        self.leftovers = 0

    def status(self, job_id: int) -> RunStatus:
        return self.statuses.get(job_id, RunStatus.NEVER_STARTED)

    def exit_record(self, job_id: int) -> dict | None:
        return self.records.get(job_id)

    def adopt(self, job_id: int) -> Shim | None:
        self.asked.append(("adopt", job_id))
        return self.live.get(job_id)

    def ask(self, shim: Shim, request: signal.Signals) -> None:
        self.asked.append(("ask", shim.job_id, request))

    def release(self, shim: Shim) -> None:
        self.asked.append(("release", shim.job_id))

    def end_leftovers(self, job_id: int) -> int:
        self.asked.append(("end_leftovers", job_id))
        return self.leftovers

    def finished(self, job_id: int) -> None:
        self.asked.append(("finished", job_id))

    def run_ids(self) -> list[int]:
        return sorted(self.statuses)

    def run_number(self, job_id: int) -> int | None:
        return self.runs.get(job_id)

    def forget(self, job_id: int) -> None:
        self.asked.append(("forget", job_id))
