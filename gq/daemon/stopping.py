"""Stopping running jobs: cancel, time limit, preemption's signal path, an over-budget job
requeued with more memory. The decision is recorded first, then the run's shim asked to act;
how the run then ends is recorded by gq/daemon/ending.py. Until then the run may hold its
cards: a job decided cancelled or timed out has no end yet and shows as `stopping`, with when
its SIGKILL is due and, once that has passed, what still holds the cards (describe)."""

from __future__ import annotations

import logging
import time
from typing import Callable

from gq.config import Config
from gq.daemon import shim as requests
from gq.daemon.limits import time_limit_stops
from gq.daemon.reading import Reading
from gq.daemon.runs import Runs
from gq.model import Job, JobState
from gq.store import Store
from gq.units import format_duration, format_size

log = logging.getLogger("gq.daemon")

# What each stopping state asks of the job's shim.
STOP_REQUESTS = {
    JobState.CANCELLED: requests.CANCEL,
    JobState.TIMEOUT: requests.TIME_UP,
    JobState.PREEMPTING: requests.PREEMPT,
}

# How long after its SIGKILL was due a stopping run may take to be recorded (its shim reaps,
# writes its record, the daemon reads it) before `describe` says what still holds its cards.
SETTLE = 1.0

# A job requeued for going over its budget gets its peak plus this, rounded up to 256M.
PEAK_MARGIN = 0.10


def mem_for_peak(peak: int) -> int:
    """The --mem an over-budget job is requeued with: its peak plus 10%, rounded up to 256M."""
    step = 256 << 20
    return int(-(-int(peak * (1 + PEAK_MARGIN)) // step) * step)


class Stopping:
    """Reads the settings' grace and pools (`config`, replaced on reload) and the cards' sizes
    (`reading`); asks the shims through `runs`."""

    def __init__(self, store: Store, config: Config, runs: Runs, reading: Reading,
                 clock: Callable[[], float]):
        self.store, self.config, self.runs = store, config, runs
        self.reading, self.clock = reading, clock
        self._stuck: dict[int, int] = {}  # job id -> ticks its shim was seen stuck (free_stuck)

    def grace_of(self, job: Job) -> float:
        return job.grace if job.grace is not None else self.config.preemption.grace

    def stop(self, job: Job, new_state: JobState, reason: str, **fields) -> None:
        """Stop a running job: record the decision first, then have the shim act on it."""
        # No ended_at: the end is recorded when the run has let go of its cards (Ending).
        now = self.clock()
        self.store.transition(job.id, new_state, now, reason=reason, stop_asked_at=now,
                              **fields)
        self.runs.ask(job.id, STOP_REQUESTS[new_state])
        # not watched yet: Recovery.adopt asks when it finds the shim

    def kill_due(self, job: Job) -> float | None:
        """When the SIGKILL of a stopping run is due: kill_wait after a cancel, the job's grace
        after its time limit (and after a preemption's signal)."""
        if job.stop_asked_at is None:
            return None
        wait = self.config.kill_wait if job.state == JobState.CANCELLED else self.grace_of(job)
        return job.stop_asked_at + wait

    def describe(self, job: Job, detail: bool = True) -> str:
        """Why a stopping job (Job.is_stopping) is not ended yet, in one line. `detail`: what
        holds its cards, read from /proc (for one job: `gq show`, `gq cancel`); a listing
        points there instead."""
        due, now = self.kill_due(job), self.clock()
        said = job.reason or str(job.state)
        if due is None:
            return f"{said}; stopping"
        if now < due + SETTLE:
            return (f"{said}; stopping: SIGTERM sent at {_clock(job.stop_asked_at)} UTC, "
                    f"SIGKILL at {_clock(due)} if it is still running; its cards are held "
                    "until its processes are gone")
        holders = (self.runs.supervisor.holders(job.id) if detail
                   else f"`gq show {job.id}` says by what")
        return (f"{said}; still stopping {format_duration(now - due)} after its SIGKILL was "
                f"due ({_clock(due)} UTC), its cards held: {holders}")

    def preempt(self, job_id: int, reason: str, note: str | None = None) -> None:
        """Preemption's signal path; `note`: why the job, which may be frozen, is not."""
        job = self.store.get_job(job_id)
        if note is None:
            self.stop(job, JobState.PREEMPTING, reason, preemptions=job.preemptions + 1)
        else:
            self.stop(job, JobState.PREEMPTING, f"{reason}; {note}: signal path",
                      preemptions=job.preemptions + 1, freeze_note=note)

    def requeue_over_budget(self, job: Job, peak: int, why: str) -> None:
        """Requeue an over-budget job with its measured peak (plus 10%) as its new --mem, or
        whole cards once that is a whole card."""
        mem = mem_for_peak(peak)
        largest = min((g.memory_total for g in self.reading.cards if g.index in job.gpu_ids),
                      default=None)
        new_mem = None if largest is None or mem >= largest else mem
        shown = "whole cards" if new_mem is None else f"--mem {format_size(new_mem)}"
        log.info("job %s: requeued with %s (%s)", job.id, shown, why)
        self.stop(job, JobState.PREEMPTING, f"requeued by gq with {shown} ({why})",
                  mem=new_mem)

    def free_stuck(self) -> None:
        """A stopping run past its SIGKILL (and SETTLE) whose shim is blocked in the kernel
        before its job began (a user daemon's shim enters the job's directory itself: on a
        hung mount it waits there, beyond any signal but SIGKILL): seen so at two ticks in a
        row, the shim is killed, and the run ends as a dead shim's, its cards freed. Nothing
        of the job runs yet: no process carries its run's token."""
        now, seen = self.clock(), {}
        for job in self.store.holding_jobs():
            stopping = job.is_stopping or (job.state == JobState.PREEMPTING and not job.freeze_op)
            due = self.kill_due(job) if stopping else None
            if due is None or now < due + SETTLE:
                continue
            pid = self.runs.supervisor.stuck_before_its_job(job.id)
            if pid is None:
                continue
            seen[job.id] = self._stuck.get(job.id, 0) + 1
            if seen[job.id] >= 2 and self.runs.kill_shim(job.id):
                log.warning("job %s: its shim (pid %s) is stuck in the kernel before its job "
                            "began; killed, to free its cards", job.id, pid)
                self.store.note(job.id, now, f"its shim (pid {pid}) was blocked in the kernel "
                                "before the job began (its directory or command on a hung "
                                "mount?); killed, to free its cards")
        self._stuck = seen

    def enforce_time_limits(self) -> None:
        for stop in time_limit_stops(self.store.holding_jobs(), self.clock(), self.config.pools):
            self.stop(self.store.get_job(stop.job_id), stop.state, stop.reason, **stop.fields)


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(at))
