"""What Slurm says of this login's jobs, read with one `squeue` call per poll for all of them,
and kept (ended jobs too) so that `show`, `wait` and `logs` answer after Slurm forgets a job.

Finished jobs: squeue reports a job for MinJobAge (300 s by default) after it ends, which a
poll every few seconds always sees. A job that a restarted daemon never saw end is asked of
`sacct` (one call for all such jobs); without accounting (no slurmdbd) it is `lost`."""

from __future__ import annotations

import threading
import time
from typing import Any

from gq.remote.spec import Unreachable
from gq.slurm.accounting import sacct_jobs
from gq.slurm.states import utc, ENDED, exit_code, gq_reason, gq_state, in_words
from gq.units import iso

# squeue -O fields; the free-text ones last, so that a '|' in them cannot shift the others
FIELDS = ("JobID State Reason exit_code SubmitTime StartTime EndTime TimeLimit NumCPUs "
          "Requeue RestartCnt Account NodeList "
          "tres-per-node UserName Partition STDOUT STDERR WorkDir Comment Name").split()
SQUEUE = ["env", "TZ=UTC", "squeue", "--me", "--noheader", "--states=all",
          "-O", ",".join(f"{f}:|" for f in FIELDS)]


def seconds(limit: str) -> float | None:
    """'1-02:03:04', '03:04', '5' (minutes) -> seconds; UNLIMITED -> None."""
    if not limit or limit in ("UNLIMITED", "INFINITE", "N/A", "NOT_SET"):
        return None
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    h, m, s = ([0] * (3 - len(parts)) + parts) if len(parts) > 1 else (0, parts[0], 0)
    return float((int(days or 0) * 24 + h) * 3600 + m * 60 + s)


def parse_row(line: str) -> dict[str, str] | None:
    values = line.rstrip("\n").split("|", len(FIELDS) - 1)
    if len(values) < len(FIELDS) or not values[0].strip().isdigit():
        return None
    row = dict(zip(FIELDS, (v.strip() for v in values)))
    row["Name"] = row["Name"].removesuffix("|")
    return row


def gpus_of(tres: str) -> int:
    """'gres:gpu:2', 'gres/gpu:2', 'gres:gpu:a100:2' -> 2; no GPU -> 0."""
    for part in tres.split(","):
        words = part.replace("/", ":").split(":")
        if "gpu" in words:
            last = words[-1]
            return int(last) if last.isdigit() else 1
    return 0


def job_from_row(row: dict[str, str], extra: dict[str, Any]) -> dict[str, Any]:
    """A job as gq's JSON has it (design.md), with Slurm's own words under `slurm`."""
    sid = int(row["JobID"])
    state = gq_state(row["State"], row["Reason"])
    started = utc(row["StartTime"])
    pending = state in ("pending", "held")
    return {
        "id": sid, "name": row["Name"], "user": row["UserName"], "host": None,
        "state": state, "reason": gq_reason(state, row["Reason"]),
        "priority": extra.get("priority", "normal"), "gpus": gpus_of(row["tres-per-node"]),
        "mem": None, "cpus": int(row["NumCPUs"]) if row["NumCPUs"].isdigit() else None,
        "command": extra.get("command", []), "cwd": row["WorkDir"],
        "submitted_at": iso(utc(row["SubmitTime"])),
        "started_at": None if pending else iso(started),
        "ended_at": iso(utc(row["EndTime"])) if state in ENDED else None,
        "exit_code": exit_code(row["exit_code"]) if state in ENDED else None,
        "restarts": int(row["RestartCnt"]) if row["RestartCnt"].isdigit() else 0,
        "gpu_ids": [],
        "ram": None, "time_limit": seconds(row["TimeLimit"]), "deps": {},
        "array": None, "pool": None, "gpus_max": None, "interactive": False,
        "account": None if row["Account"] in ("", "(null)") else row["Account"],
        "preemptible": row["Requeue"] == "1",
        "signal": extra.get("signal", "SIGTERM"), "signal_before": extra.get("signal_before"),
        "signal_group": False, "grace": None, "preemptions": 0, "retry_oom": 0,
        "oom_retries": 0, "peak_mem": None, "expected_start": iso(started) if pending else None,
        "stdout": _expand(row["STDOUT"], sid, row), "stderr": _expand(row["STDERR"], sid, row),
        "slurm": {"state": row["State"], "reason": row["Reason"],
                  "partition": row["Partition"], "comment": row["Comment"],
                  "nodes": row["NodeList"] or None},
    }


def _expand(path: str, sid: int, row: dict[str, str]) -> str:
    """squeue prints the --output pattern: fill in what gq's patterns and Slurm's default use."""
    for key, value in (("%j", str(sid)), ("%A", str(sid)), ("%x", row["Name"]),
                       ("%u", row["UserName"])):
        path = path.replace(key, value)
    return path


class Tracker:
    """The login's jobs as last polled. Thread-safe: one poll at a time; callers that come
    while one runs share its answer.

    The jobs sent from here (those in `extra`) are also kept by the daemon's store: what
    changed of them since the last unsaved() is handed to it from the daemon's loop."""

    def __init__(self, backend, name: str):
        self.backend, self.name = backend, name
        self.jobs: dict[int, dict[str, Any]] = {}
        self.extra: dict[int, dict[str, Any]] = {}  # what squeue does not say: the command
        # time.monotonic() when the last poll asked squeue: what it read is at least as new
        # (not when the answer came: a job sbatch made meanwhile may not be in it)
        self.polled_at = 0.0
        self.polls = 0
        self._lock = threading.Lock()
        self._unsaved: set[int] = set()
        self._unsaved_lock = threading.Lock()

    def sent(self, sid: int, extra: dict[str, Any]) -> None:
        self.extra[sid] = extra
        self._changed(sid)

    def restore(self, sid: int, extra: dict[str, Any], job: dict[str, Any] | None) -> None:
        """A job sent before the daemon restarted, as the store kept it."""
        self.extra[sid] = extra
        if job is not None:
            self.jobs[sid] = job

    def unsaved(self) -> list[int]:
        with self._unsaved_lock:
            taken, self._unsaved = self._unsaved, set()
        return sorted(taken)

    def _changed(self, sid: int) -> None:
        with self._unsaved_lock:
            self._unsaved.add(sid)

    def fresh(self, max_age: float, timeout: float | None = 30.0) -> None:
        began = time.monotonic()
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise Unreachable(f"{self.name}: squeue did not answer in {timeout:.0f}s")
        try:
            if self.polled_at < began - max_age:
                self._poll(timeout)
        finally:
            self._lock.release()

    def _poll(self, timeout: float | None) -> None:
        asked = time.monotonic()
        answer = self.backend.run(SQUEUE, timeout=timeout)
        self.polls += 1
        if answer.rc != 0:
            raise Unreachable(f"{self.name}: squeue failed: {answer.error_line()}")
        seen = set()
        for line in answer.out.splitlines():
            row = parse_row(line)
            if row is None:
                continue
            sid = int(row["JobID"])
            seen.add(sid)
            job = job_from_row(row, self.extra.get(sid, {}))
            if sid in self.extra and job != self.jobs.get(sid):
                self._changed(sid)
            self.jobs[sid] = job
        gone = [sid for sid, j in self.jobs.items() if sid not in seen and j["state"] not in ENDED]
        if gone:
            self._ended_meanwhile(gone, timeout)
        self.polled_at = asked

    def _ended_meanwhile(self, ids: list[int], timeout: float | None) -> None:
        """Jobs squeue no longer reports: ask sacct once; without accounting they are lost."""

        found = sacct_jobs(self.backend, ids, timeout)
        for sid in ids:
            if sid in self.extra:
                self._changed(sid)
            job = self.jobs[sid]
            if sid in found:
                job.update(found[sid])
            else:
                job.update(state="lost", reason="Slurm no longer reports it (it ended over "
                           "MinJobAge ago and the cluster keeps no accounting)",
                           ended_at=job.get("ended_at") or iso(time.time()))

    def get(self, sid: int) -> dict[str, Any] | None:
        return self.jobs.get(sid)

    def why(self, job: dict[str, Any]) -> str:
        return in_words(job["state"], job["slurm"]["reason"], job.get("expected_start"))
