"""How runs end: recording each end (the stops that lead to many are gq/daemon/stopping.py's),
with each failure classified (gq/triage), out-of-memory deaths retried, and stopped runs
requeued or held."""

from __future__ import annotations

import signal
import time
from typing import Callable

from gq.config import Config
from gq.daemon.collateral import Collateral
from gq.daemon.diskfull import TRUNCATED, CutLogs
from gq.daemon.layout import Layout
from gq.policy.preemption import requeue_or_hold
from gq.daemon.oom import grown_mem
from gq.daemon.reading import Reading
from gq.daemon.runs import Supervision
from gq.daemon.runtimes import record_completed
from gq.daemon.stopping import Stopping
from gq.daemon.triage_end import stopped_triage, triage_run
from gq.daemon.views import job_label
from gq.model import Job, JobState
from gq.policy.predict import RunTimes
from gq.store import Store
from gq.triage.rules import GPU_OOM
from gq.units import format_duration, format_size

# The reason a preempted job carries while it stops; what tells a preemption from `gq requeue`.
PREEMPTED_FOR = "preempted for job"


# The ends a `gq run` asks of its job's shim (gq/daemon/attach.py), and what they are called.
CALLER_ENDS = {"hangup": "its gq run went away (killed, or its terminal closed)",
               "interrupt": "cancelled by a second Ctrl-C within 2 s"}


def is_preemption(job: Job) -> bool:
    return job.state == JobState.PREEMPTING and (job.reason or "").startswith(PREEMPTED_FOR)


# Records what a run cost, for fair share and stats: (job, ended_at, label, failure). The
# daemon's record_run: the run's share of the host, its telemetry, its user's account.
RecordRun = Callable[[Job, float, str, str | None], None]


class Ending:
    """Records each end through the store and what the run cost through `record_run`; asks
    the supervisor for what a run left behind and lets its files go; tells `notify(job_id)`
    (waiters, --notify) once it is recorded."""

    def __init__(self, store: Store, config: Config, layout: Layout, supervisor: Supervision,
                 stopping: Stopping, collateral: Collateral, reading: Reading,
                 cut_logs: CutLogs, record_run: RecordRun, run_times: RunTimes,
                 notify: Callable[[int], None], clock: Callable[[], float]):
        self.store, self.config, self.layout = store, config, layout
        self.supervisor, self.stopping, self.collateral = supervisor, stopping, collateral
        self.reading, self.cut_logs, self.record_run = reading, cut_logs, record_run
        self.run_times, self.notify = run_times, notify
        self.clock = clock

    def finish(self, job_id: int, record: dict | None, never_started: bool = False) -> None:
        """Record the end of a run: its exit status, or that it vanished or never began."""
        # A shim that died without its record did not stop the job: what is left of it
        # must go before its cards are given to another job.
        left = 0
        if record is None and not never_started:
            left = self.supervisor.end_leftovers(job_id)
        with self.store.atomic():
            self._finish(job_id, record, never_started)
            if not never_started and self.cut_logs.cut(job_id, record):
                self.store.note(job_id, self.clock(), TRUNCATED)
            if left:
                self.store.note(job_id, self.clock(), f"{left} process{'es' * (left > 1)} "
                                "of the run, left behind by its shim, killed")
        self.cut_logs.forget(job_id)
        self.supervisor.finished(job_id)
        self.notify(job_id)

    def _finish(self, job_id: int, record: dict | None, never_started: bool) -> None:
        job = self.store.get_job(job_id, env=False)
        now = self.clock()
        code = record.get("exit_code") if record else None
        ended_at = record.get("ended_at", now) if record else now
        if job.state == JobState.RUNNING and never_started:
            self.store.transition(
                job_id, JobState.PENDING, now, detail="requeued: the daemon stopped before "
                "the job began", started_at=None, gpu_ids=[], holding=0,
            )
            return
        if job.host_mem or job.freeze_op:  # frozen, or being frozen or thawed: no longer
            self.store.update(job_id, host_mem=None, freeze_op=None)
        # A job asked to stop that ended before its shim got the request ended by itself.
        by_itself = record is not None and not record.get("stopped")
        failure = None
        if job.state in (JobState.RUNNING, JobState.FROZEN) or (
                job.state == JobState.PREEMPTING and by_itself):
            label, failure = self._record_end(job, record, ended_at, now)
        elif job.state == JobState.PREEMPTING:
            label = self._requeue_stopped(job, record, never_started, now)
        else:  # stopped on request: the state was decided, the end is only now (its cards free)
            triage = stopped_triage(str(job.state), job.reason)
            failure = triage and triage.failure
            self.store.update(job_id, exit_code=code, holding=0, failure=failure,
                              failure_evidence=triage.evidence if triage else [],
                              ended_at=job.ended_at or ended_at)
            self.store.note(job_id, now, f"stopped (exit code {code})")
            label = str(job.state)
        if not never_started:  # what the run cost, for fair share and stats
            self.record_run(job, ended_at, label, failure)
            if label == "completed":
                record_completed(self.run_times, job, ended_at)

    def _record_end(self, job: Job, record: dict | None, ended_at: float, now: float
                    ) -> tuple[str, str | None]:
        """Record a run that ended by itself: its state, and why it failed if it did."""
        code = record.get("exit_code") if record else None
        detail, triage, overrun = None, None, None
        if record is None:
            new, reason = JobState.LOST, "its shim died without recording an exit status"
            triage = stopped_triage(str(new), reason)
        elif record.get("stop") in CALLER_ENDS:  # its gq run ended it (docs/run.md)
            new, reason = JobState.CANCELLED, CALLER_ENDS[record["stop"]]
        elif code == 0:
            new, reason = JobState.COMPLETED, None
        else:
            triage = triage_run(self.layout, job, record)
            if triage.failure == GPU_OOM:
                new, reason = JobState.OOM, _oom_reason(job)
                detail = triage.evidence[-1][:500] if triage.evidence else None
                overrun = self.collateral.overrun_beside(job)
                if overrun is not None:  # another job's overrun killed it, not its own --mem
                    reason += f": {overrun.words()}"
            elif record.get("warned") and not record.get("error"):  # saved on the warning?
                new, reason = JobState.TIMEOUT, _ended_on_warning(job, record)
                triage = stopped_triage(str(new), reason)
            else:
                new, reason = JobState.FAILED, _failure_reason(record)
        self.store.transition(job.id, new, now, reason=reason, detail=detail, ended_at=ended_at,
                              exit_code=code, holding=0, failure=triage and triage.failure,
                              failure_evidence=triage.evidence if triage else [])
        if new == JobState.OOM and overrun is not None:
            self.collateral.requeue_victim(job, overrun, now)
        elif new == JobState.OOM and job.oom_retries < job.retry_oom:
            self._retry_with_more_memory(job, now)
        return str(new), triage and triage.failure

    def _retry_with_more_memory(self, job: Job, now: float) -> None:
        mem = grown_mem(job.mem, job.gpus, [g.memory_total for g in self.reading.cards])
        n = job.oom_retries + 1
        self.store.transition(
            job.id, JobState.PENDING, now,
            detail=f"retry {n} of {job.retry_oom} (--retry-oom) with "
                   + ("whole cards" if mem is None else f"--mem {format_size(mem)}"),
            mem=mem, oom_retries=n, restarts=job.restarts + 1, started_at=None, ended_at=None,
            exit_code=None, gpu_ids=[], failure=None, failure_evidence=[],
        )

    def _requeue_stopped(self, job: Job, record: dict | None, never_started: bool,
                         now: float) -> str:
        """A run stopped by preemption or `gq requeue`: queue it again, or hold it once it has
        been preempted more than max_requeues times."""
        fields = dict(restarts=job.restarts + (0 if never_started else 1), started_at=None,
                      gpu_ids=[], holding=0, exit_code=None, failure=None, failure_evidence=[])
        how = "it had not started" if never_started else self._how_it_stopped(job, record)
        state, reason, detail = requeue_or_hold(job, is_preemption(job),
                                                self.config.preemption.max_requeues, how)
        if reason is not None:
            fields["reason"] = reason
        self.store.transition(job.id, state, now, detail=detail, **fields)
        return "preempted" if is_preemption(job) else "requeued"

    def _how_it_stopped(self, job: Job, record: dict | None) -> str:
        if record is None:
            return "its shim died without recording an exit status"
        if record.get("killed"):
            return killed_words(job.signal, record, self.stopping.grace_of(job))
        return f"it exited (exit code {record.get('exit_code')}) after {job.signal}"


def killed_words(sent: str, record: dict, grace: float) -> str:
    """What happened when to a run killed at the end of its grace, from its shim's own
    times: "killed: SIGTERM at 12:00:01, SIGKILL 4s later". A record of an older shim, without
    them, says the grace it had."""
    signalled, killed = record.get("signalled_at"), record.get("killed_at")
    if signalled is None or killed is None:
        return f"killed, still running {format_duration(grace)} after {sent}"
    at = time.strftime("%H:%M:%S", time.gmtime(signalled))
    late = max(0.0, killed - signalled)
    return (f"killed: {sent} at {at} UTC, still running, SIGKILL "
            f"{f'{late:.1f}s' if late < 60 else format_duration(late)} later")


def _oom_reason(job: Job) -> str:
    text = "out of GPU memory"
    if job.peak_mem:
        text += f", peak {format_size(job.peak_mem)}"
    if job.mem:
        text += f" (--mem {format_size(job.mem)})"
    return text


def _ended_on_warning(job: Job, record: dict) -> str:
    """A job that ended, not cleanly, after its time-limit signal: it ran out of time as its
    --signal planned, usually having saved a checkpoint; say so, and how it goes on."""
    how = f" (killed by {_signal_name(record['signal'])})" if record.get("signal") else ""
    return (f"it ended{how} after its time-limit signal {job.signal}, "
            f"{format_duration(job.signal_before or 0)} before the limit; if it saved a "
            f"checkpoint, `gq requeue {job_label(job)}` continues it")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _failure_reason(record: dict) -> str | None:
    if record.get("error"):  # it never ran: no log, no such command, no account...
        return record["error"][:500]
    if record.get("signal"):
        return f"killed by signal {record['signal']}"
    if record.get("exit_code") is None:
        return "exit status unknown"
    return None
