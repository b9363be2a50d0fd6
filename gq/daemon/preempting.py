"""Acting on preemption: after a scheduling pass, stop the jobs that gq/policy/preemption.py
picks for waiting higher-tier work, and say in `gq why` what is done or why nothing is."""

from __future__ import annotations

from gq.config import Config
from gq.daemon.ending import PREEMPTED_FOR
from gq.daemon.freezing import Freezing
from gq.daemon.layout import Layout
from gq.daemon.stopping import Stopping
from gq.daemon.userfiles import checkpoint_times
from gq.model import JobState
from gq.policy import Plan, PreemptRule, SchedulerInput
from gq.policy.decide import wants_preemption
from gq.store import Store
from gq.units import iso


class Preempting:
    """Gives a pass the [preemption] settings (`config`, replaced on reload) with what it
    needs to choose victims (checkpoint times under `layout`, `freezing`'s facts), and acts on
    its choices: a freeze through `freezing`, else the signal path through `stopping`."""

    def __init__(self, store: Store, config: Config, layout: Layout, freezing: Freezing,
                 stopping: Stopping):
        self.store, self.config, self.layout = store, config, layout
        self.freezing, self.stopping = freezing, stopping

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

    def preempt_for_waiting(self, plan: Plan) -> list[tuple[int, str]]:
        """Stop the victims the pass chose; returns what `gq why` is to add to each waiting
        job's shortfall (job id, text): what is done for it, or why nothing is."""
        notes = []
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
            notes.append((p.job_id, f"preempting job(s) {ids} for it"))
        for job_id, note in plan.preempt_notes.items():
            until = f" (from {iso(note.exempt_until)})" if note.exempt_until else ""
            notes.append((job_id, f"{note.text}{until}"))
        return notes
