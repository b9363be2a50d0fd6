"""What a daemon does when it starts: re-adopt the shims of an earlier one, record what ended
while none ran, and finish the stops (cancel, time limit, preemption) it had decided."""

from __future__ import annotations

import logging
from typing import Callable

from gq.daemon.diskfull import is_disk_full
from gq.daemon.ending import Ending
from gq.daemon.layout import Layout
from gq.daemon.runs import Runs, Supervision
from gq.daemon.stopping import STOP_REQUESTS
from gq.daemon.supervisor import RunStatus
from gq.model import Job, JobState
from gq.store import Store

log = logging.getLogger("gq.daemon")


# Of a system daemon, ids in users' own directories count only this far above the database's
# newest: a user may name a file there as they like, and must not use up the ids.
USER_ID_SLACK = 1_000_000


def skip_lost_ids(store: Store, layout: Layout) -> str | None:
    """Never hand out an id that has files under GQ_HOME (a new job would append to the
    old one's log), also when the database went back in time: its WAL cut, an older copy put
    back, or the file moved away. Returns what to say: those jobs are gone from the queue."""
    newest, _ = store.counters()
    on_disk = layout.highest_job_id(users_below=newest + USER_ID_SLACK if layout.system else None)
    if on_disk <= newest:
        return None
    store.skip_ids(on_disk)
    lost = f"job {on_disk}" if on_disk == newest + 1 else f"jobs {newest + 1} to {on_disk}"
    return (f"the queue went backwards: {lost} left files under {layout.home} but are not in "
            f"{layout.db} (its WAL was cut, an older copy of it put back, or it was moved "
            f"away); new jobs start at {on_disk + 1}, so none writes into their logs")


class Recovery:
    """Settles the runs whose shim the daemon does not watch: at start, and for `runs` it
    could not settle before. Reads their files through the supervisor, records their ends
    through `ending`, watches live shims through `runs`, and hands a freeze or thaw under way
    to `resume_freezing(job)` (Freezing)."""

    def __init__(self, store: Store, supervisor: Supervision, runs: Runs, ending: Ending,
                 resume_freezing: Callable[[Job], None], clock: Callable[[], float]):
        self.store, self.supervisor, self.runs, self.ending = store, supervisor, runs, ending
        self.resume_freezing, self.clock = resume_freezing, clock

    def recover(self) -> None:
        """Re-adopt the shims of an earlier daemon and record what ended while none ran."""
        with self.store.relaxed():
            self._recover_holding()
            self._recover_unrecorded_runs()

    def _recover_holding(self) -> None:
        for job in self.store.holding_jobs():
            self.settle_or_retry(job.id)

    def settle_or_retry(self, job_id: int) -> None:
        """Settle a job; should its end fail to reach the database (a full disk), it stays
        unadopted, holding its cards, and every tick tries again until it is recorded."""
        try:  # light: settling reads the job's full row only to record its end
            self.settle(self.store.light_jobs([job_id])[job_id])
        except Exception as e:
            self.runs.later(job_id)
            if is_disk_full(e):
                log.warning("job %s: recording its end failed: %s; the next tick tries again",
                            job_id, e)
            else:
                log.exception("job %s: recording its end failed; the next tick tries again",
                              job_id)

    def settle(self, job: Job) -> None:
        """For a job holding resources whose shim we do not watch: adopt the shim if it lives,
        else record what its run files say happened. Raises if the record fails: the job then
        stays where it was, to be settled again."""
        status, record = self.supervisor.run_state(job.id)
        if status is RunStatus.ALIVE:
            self.adopt(job)
            return
        if status is RunStatus.EXITED:
            self.ending.finish(job.id, record)
        elif status is RunStatus.VANISHED:
            self.ending.finish(job.id, None)
        else:
            self.ending.finish(job.id, None, never_started=True)
        self.runs.settled(job.id)  # only now: its end is in the database

    def _recover_unrecorded_runs(self) -> None:
        """Run directories of jobs the store does not know to be running: after a power cut
        the store may have lost a relaxed commit (see Store.relaxed) that the run's own files
        still witness."""
        for job_id in self.supervisor.run_ids():
            job = self.store.get_job(job_id)
            if job is not None and self.store.is_holding(job_id):
                continue
            run = self.supervisor.run_number(job_id)
            if job is None or job.state != JobState.PENDING or (run is not None and
                                                                run < job.restarts):
                self.supervisor.forget(job_id)  # an earlier run, already recorded
                continue
            now = self.clock()
            status = self.supervisor.status(job_id)
            if status in (RunStatus.ALIVE, RunStatus.EXITED):
                self.store.transition(job_id, JobState.RUNNING, now, detail="recovered from "
                                      "its run directory", started_at=now, holding=1)
                if status is RunStatus.ALIVE:
                    self.adopt(self.store.get_job(job_id))
                else:
                    self.ending.finish(job_id, self.supervisor.exit_record(job_id))
            else:
                if status is RunStatus.VANISHED:
                    self.store.update(job_id, restarts=job.restarts + 1)
                    self.store.note(job_id, now, "its run was lost in a crash; queued again")
                self.supervisor.forget(job_id)

    def adopt(self, job: Job) -> None:
        shim = self.supervisor.adopt(job.id)
        if shim is None:
            self.runs.later(job.id)  # its shim has not written its pid yet: next tick
            return
        self.runs.settled(job.id)
        log.info("re-adopted job %s (shim pid %s)", job.id, shim.pid)
        self.runs.watch(shim)
        if job.freeze_op:  # a freeze or thaw under way: finish it, and ask the shim nothing
            self.resume_freezing(job)
        elif job.state in STOP_REQUESTS:
            # The stop was decided by a daemon that died, maybe before it asked the shim; a
            # shim asked twice does it once.
            self.supervisor.ask(shim, STOP_REQUESTS[job.state])
