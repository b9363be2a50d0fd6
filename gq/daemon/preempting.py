"""Acting on preemption: after a scheduling pass, stop the jobs that gq/policy/preemption.py
picks for waiting higher-tier work, and say in `gq why` what is done or why nothing is."""

from __future__ import annotations

from gq.daemon.ending import PREEMPTED_FOR
from gq.daemon.userfiles import checkpoint_times
from gq.model import JobState
from gq.policy import Plan, PreemptRule, SchedulerInput
from gq.policy.decide import wants_preemption
from gq.units import iso


class Preempting:
    """Part of Daemon (gq/daemon/core.py)."""

    def preempt_rule(self, inp: SchedulerInput) -> PreemptRule:
        """The [preemption] settings, with checkpoint times and what freezing needs to know
        read only when a pass could preempt at all (or thaw: the probe says where)."""
        cfg = self.config.preemption
        if not wants_preemption(inp):
            return PreemptRule(cfg.exempt,
                               freeze=self.freezing.freeze_rule([]) if inp.frozen else None)
        candidates = [j for j in inp.running if j.state == JobState.RUNNING and j.preemptible]
        return PreemptRule(cfg.exempt, checkpoint_times(self.layout, candidates),
                           self.freezing.freeze_rule(candidates))

    def preempt_for_waiting(self, plan: Plan) -> None:
        """Stop the victims the pass chose, and say in `gq why` what is done or why not."""
        for p in plan.preemptions:
            tier = self.store.get_job(p.job_id).priority
            for victim in p.victims:
                reason = f"{PREEMPTED_FOR} {p.job_id} ({tier})"
                choice = plan.freezing.get(victim.job_id)
                if choice is not None and choice.freeze:
                    self.freezing.freeze(victim.job_id, reason, choice)
                else:
                    quiet = choice is None or choice.reason == "its preempt mode is signal"
                    self.stopping.preempt(victim.job_id, reason,
                                 note=None if quiet else f"not frozen: {choice.reason}")
            ids = ",".join(str(v.job_id) for v in p.victims)
            self._add_shortfall(p.job_id, f"preempting job(s) {ids} for it")
        for job_id, note in plan.preempt_notes.items():
            until = f" (from {iso(note.exempt_until)})" if note.exempt_until else ""
            self._add_shortfall(job_id, f"{note.text}{until}")

    def _add_shortfall(self, job_id: int, text: str) -> None:
        before = self.shortfalls.get(job_id)
        self.shortfalls[job_id] = f"{before}; {text}" if before else text
