"""How runs end: stopping jobs (cancel, time limit, preemption) and recording each end, with
out-of-memory deaths recognised and retried, and stopped runs requeued or held."""

from __future__ import annotations

from gq.daemon import shim as requests
from gq.daemon.diskfull import TRUNCATED
from gq.daemon.oom import cuda_oom_line, grown_mem, run_stderr
from gq.daemon.runtimes import record_completed
from gq.model import Job, JobState, Reason
from gq.units import format_duration, format_size

# The reason a preempted job carries while it stops; what tells a preemption from `gq requeue`.
PREEMPTED_FOR = "preempted for job"


def is_preemption(job: Job) -> bool:
    return job.state == JobState.PREEMPTING and (job.reason or "").startswith(PREEMPTED_FOR)


class Ending:
    """Part of Daemon (gq/daemon/core.py)."""

    # What each stopping state asks of the job's shim.
    STOP_REQUESTS = {
        JobState.CANCELLED: requests.CANCEL,
        JobState.TIMEOUT: requests.TIME_UP,
        JobState.PREEMPTING: requests.PREEMPT,
    }

    def grace_of(self, job: Job) -> float:
        return job.grace if job.grace is not None else self.config.preemption.grace

    def stop(self, job: Job, new_state: JobState, reason: str, **fields) -> None:
        """Stop a running job: record the decision first, then have the shim act on it."""
        now = self.clock()
        if new_state != JobState.PREEMPTING:
            fields["ended_at"] = now
        self.store.transition(job.id, new_state, now, reason=reason, **fields)
        shim = self.shims.get(job.id)
        if shim is not None:
            self.supervisor.ask(shim, self.STOP_REQUESTS[new_state])
        # else: not adopted yet; adopt() asks when it finds the shim

    def enforce_time_limits(self) -> None:
        now = self.clock()
        for job in self.store.holding_jobs():
            if job.state != JobState.RUNNING or not job.time_limit or job.started_at is None:
                continue
            if now - job.started_at >= job.time_limit:
                limit = format_duration(job.time_limit)
                pool = self.config.pools.get(job.pool) if job.interactive else None
                if pool is not None and pool.past_limit == "requeue":
                    # Interactive no more: it goes on as batch work in the default pool.
                    self.stop(job, JobState.PREEMPTING, f"interactive time limit {limit} "
                              "reached: requeued as batch work", interactive=0, pool=None,
                              time_limit=None)
                else:
                    self.stop(job, JobState.TIMEOUT, f"time limit {limit} reached")

    def finish(self, job_id: int, record: dict | None, never_started: bool = False) -> None:
        """Record the end of a run: its exit status, or that it vanished or never began."""
        with self.store.atomic():
            self._finish(job_id, record, never_started)
            if not never_started and self.cut_logs.cut(job_id, record):
                self.store.note(job_id, self.clock(), TRUNCATED)
        self.cut_logs.forget(job_id)
        self.supervisor.finished(job_id)
        self.notify(job_id)

    def _finish(self, job_id: int, record: dict | None, never_started: bool) -> None:
        job = self.store.get_job(job_id)
        now = self.clock()
        code = record.get("exit_code") if record else None
        ended_at = record.get("ended_at", now) if record else now
        if job.state == JobState.RUNNING and never_started:
            self.store.transition(
                job_id, JobState.PENDING, now, detail="requeued: the daemon stopped before "
                "the job began", started_at=None, gpu_ids=[], holding=0,
            )
            return
        # A job asked to stop that ended before its shim got the request ended by itself.
        by_itself = record is not None and not record.get("stopped")
        if job.state == JobState.RUNNING or (job.state == JobState.PREEMPTING and by_itself):
            label = self._record_end(job, record, ended_at, now)
        elif job.state == JobState.PREEMPTING:
            label = self._requeue_stopped(job, record, never_started, now)
        else:  # stopped on request: the state is already final, only the facts are new
            self.store.update(job_id, exit_code=code, holding=0)
            self.store.note(job_id, now, f"stopped (exit code {code})")
            label = str(job.state)
        if not never_started:  # what the run cost, for fair share and stats
            self.store.add_run(job, self.card_weight(job), ended_at, label,
                               self.telemetry.run_record(job), share=self.charge(job),
                               account=self.config.accounts.members.get(job.user))
            if label == "completed":
                record_completed(self.run_times, job, ended_at)

    def _record_end(self, job: Job, record: dict | None, ended_at: float, now: float) -> str:
        code = record.get("exit_code") if record else None
        detail = overrun = None
        if record is None:
            new, reason = JobState.LOST, "its shim died without recording an exit status"
        elif code == 0:
            new, reason = JobState.COMPLETED, None
        elif oom := cuda_oom_line(run_stderr(self.layout.stderr(job.id, job.user),
                                             record.get("stderr_offset"),
                                             job.uid if self.layout.system else None)):
            new, reason, detail = JobState.OOM, _oom_reason(job), oom[:500]
            overrun = self.overrun_beside(job)
            if overrun is not None:
                reason += f": {overrun.words()}"
        else:
            new, reason = JobState.FAILED, _failure_reason(record)
        self.store.transition(job.id, new, now, reason=reason, detail=detail, ended_at=ended_at,
                              exit_code=code, holding=0)
        if new == JobState.OOM and overrun is not None:
            self.requeue_collateral(job, overrun, now)
        elif new == JobState.OOM and job.oom_retries < job.retry_oom:
            self._retry_with_more_memory(job, now)
        return str(new)

    def _retry_with_more_memory(self, job: Job, now: float) -> None:
        mem = grown_mem(job.mem, job.gpus, [g.memory_total for g in self.cards])
        n = job.oom_retries + 1
        self.store.transition(
            job.id, JobState.PENDING, now,
            detail=f"retry {n} of {job.retry_oom} (--retry-oom) with "
                   + ("whole cards" if mem is None else f"--mem {format_size(mem)}"),
            mem=mem, oom_retries=n, restarts=job.restarts + 1, started_at=None, ended_at=None,
            exit_code=None, gpu_ids=[],
        )

    def _requeue_stopped(self, job: Job, record: dict | None, never_started: bool,
                         now: float) -> str:
        """A run stopped by preemption or `gq requeue`: queue it again, or hold it once it has
        been preempted more than max_requeues times."""
        fields = dict(restarts=job.restarts + (0 if never_started else 1), started_at=None,
                      gpu_ids=[], holding=0, exit_code=None)
        how = "it had not started" if never_started else self._how_it_stopped(job, record)
        cap = self.config.preemption.max_requeues
        if is_preemption(job) and job.preemptions > cap:
            self.store.transition(
                job.id, JobState.HELD, now, reason=Reason.HELD,
                detail=f"held, not requeued: preempted {job.preemptions} times, more than "
                       f"[preemption] max_requeues = {cap} ({how}); `gq release {job.id}` "
                       "queues it again", **fields)
        else:
            self.store.transition(job.id, JobState.PENDING, now, detail=f"requeued: {how}",
                                  **fields)
        return "preempted" if is_preemption(job) else "requeued"

    def _how_it_stopped(self, job: Job, record: dict | None) -> str:
        if record is None:
            return "its shim died without recording an exit status"
        if record.get("killed"):
            return (f"killed, still running {format_duration(self.grace_of(job))} after "
                    f"{job.signal}")
        return f"it exited (exit code {record.get('exit_code')}) after {job.signal}"


def _oom_reason(job: Job) -> str:
    text = "out of GPU memory"
    if job.peak_mem:
        text += f", peak {format_size(job.peak_mem)}"
    if job.mem:
        text += f" (--mem {format_size(job.mem)})"
    return text


def _failure_reason(record: dict) -> str | None:
    if record.get("error"):  # it never ran: no log, no such command, no account...
        return record["error"][:500]
    if record.get("signal"):
        return f"killed by signal {record['signal']}"
    if record.get("exit_code") is None:
        return "exit status unknown"
    return None
