"""Acting on preemption: after a scheduling pass, stop the jobs that gq/policy/preemption.py
picks for waiting higher-tier work, and say in `gq why` what is done or why nothing is."""

from __future__ import annotations

import os

from gq.daemon.ending import PREEMPTED_FOR
from gq.daemon.userfiles import job_file_owner, open_owned
from gq.model import Job, JobState, Reason
from gq.policy import Plan, SchedulerInput
from gq.policy.preemption import plan_preemptions
from gq.policy.schedule import allowed_cards
from gq.units import iso


class Preempting:
    """Part of Daemon (gq/daemon/core.py)."""

    def preempt_for_waiting(self, inp: SchedulerInput, plan: Plan) -> None:
        candidates = [j for j in inp.running if j.state == JobState.RUNNING and j.preemptible]
        if not candidates:
            return
        lowest = max(j.priority.rank for j in candidates)
        if not any(plan.reasons.get(j.id) == Reason.RESOURCES and j.priority.rank < lowest
                   for j in inp.pending):
            return
        # In queue order: the plan records reasons in the order the pass read the queue.
        waiting = [inp.pending.jobs[i] for i, r in plan.reasons.items() if r == Reason.RESOURCES]
        cfg = self.config.preemption
        decided = plan_preemptions(inp.host, waiting, inp.running, inp.now, cfg.exempt,
                                   self.checkpoint_times(candidates),
                                   allowed={j.id: allowed_cards(inp, j, inp.host)
                                            for j in waiting})
        tiers = {j.id: j.priority for j in waiting}
        for p in decided.preemptions:
            for victim in p.victims:
                self.preempt(victim.job_id, f"{PREEMPTED_FOR} {p.job_id} ({tiers[p.job_id]})")
            ids = ",".join(str(v.job_id) for v in p.victims)
            self._add_shortfall(p.job_id, f"preempting job(s) {ids} for it")
        for job_id, note in decided.notes.items():
            until = f" (from {iso(note.exempt_until)})" if note.exempt_until else ""
            self._add_shortfall(job_id, f"{note.text}{until}")

    def _add_shortfall(self, job_id: int, text: str) -> None:
        before = self.shortfalls.get(job_id)
        self.shortfalls[job_id] = f"{before}; {text}" if before else text

    def preempt(self, job_id: int, reason: str) -> None:
        job = self.store.get_job(job_id)
        self.stop(job, JobState.PREEMPTING, reason, preemptions=job.preemptions + 1)

    def checkpoint_times(self, jobs: list[Job]) -> dict[int, float]:
        """When each job last wrote into its GQ_CHECKPOINT_DIR (the directory, or a file in
        it): the work since then is what preempting it loses."""
        out = {}
        for job in jobs:
            newest = None
            # In the user's own directory: entered only if theirs, never through a link.
            fd = open_owned(self.layout.checkpoint_dir(job.id, job.user),
                            *job_file_owner(self.layout, job), directory=True)
            if fd is None:
                continue
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        mtime = entry.stat(follow_symlinks=False).st_mtime
                        newest = mtime if newest is None else max(newest, mtime)
                newest = max(newest or 0.0, os.fstat(fd).st_mtime)
            except OSError:
                pass
            finally:
                os.close(fd)
            if newest is not None:
                out[job.id] = newest
        return out
