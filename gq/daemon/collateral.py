"""Collateral deaths: a job that runs out of memory on a card where another job holds more than
its --mem is not charged for it. It is queued again at once, without using its --retry-oom, kept
off that card while the over-budget job runs, and its history names whose overrun killed it; the
over-budget job's offence escalates at once to its tier's [offenders] over_budget action."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gq.config.telemetry import Action
from gq.daemon.policing import Stopper
from gq.daemon.reading import Reading
from gq.model import Job, JobState
from gq.store import Store
from gq.units import format_size


@dataclass(frozen=True)
class Overrun:
    """A job holding more than its --mem on a card, as last measured."""

    job_id: int
    card: int
    held: int
    mem: int

    def words(self) -> str:
        return (f"job {self.job_id} held {format_size(self.held)} on GPU {self.card}, "
                f"{format_size(self.held - self.mem)} over its --mem {format_size(self.mem)}")


class Collateral:
    """Finds whose overrun killed a job (from the memory each job held at the last `reading`),
    requeues the victim and escalates the killer through `stopper`, with the action
    `over_budget_action(kind, tier)` names (Police.action_of: [offenders] as last loaded)."""

    def __init__(self, store: Store, reading: Reading, stopper: Stopper,
                 over_budget_action: Callable[[str, str | None], Action]):
        self.store, self.reading, self.stopper = store, reading, stopper
        self.over_budget_action = over_budget_action
        # Victim job id -> (the over-budget job, the cards kept from the victim while it runs).
        # In memory: a restarted daemon forgets, and the over-budget card still takes no new
        # slices while the job is over its budget (gq/policy/placement.py).
        self.kept_off: dict[int, tuple[int, frozenset[int]]] = {}

    def overrun_beside(self, job: Job) -> Overrun | None:
        """Another job over its budget on one of `job`'s cards at the last reading."""
        holding = {j.id: j for j in self.store.holding_jobs()}
        for card in job.gpu_ids:
            for other_id, held in sorted(self.reading.job_memory.get(card, {}).items()):
                other = holding.get(other_id)
                if other_id != job.id and other is not None and other.mem and held > other.mem:
                    return Overrun(other_id, card, held, other.mem)
        return None

    def requeue_victim(self, job: Job, overrun: Overrun, now: float) -> None:
        """The job died of another's overrun: queue it again at once, uncharged."""
        self.store.transition(
            job.id, JobState.PENDING, now,
            detail=f"requeued at once, not charged to --retry-oom: {overrun.words()}, which "
                   f"killed it; kept off GPU {overrun.card} while job {overrun.job_id} runs",
            restarts=job.restarts + 1, started_at=None, ended_at=None, exit_code=None,
            gpu_ids=[])
        self.kept_off[job.id] = (overrun.job_id, frozenset({overrun.card}))
        self.store.note(overrun.job_id, now, f"its overrun killed job {job.id}: "
                                             f"{overrun.words()}")
        self.escalate_overrun(overrun, now)

    def escalate_overrun(self, overrun: Overrun, now: float) -> None:
        """Apply the over-budget job's [offenders] over_budget action now, without waiting
        for over_budget_after or the action's `after`: it has killed a job already."""
        job = self.store.get_job(overrun.job_id)
        if job is None or job.state != JobState.RUNNING:
            return
        action = self.over_budget_action("over_budget", str(job.priority))
        why = f"over-budget: {overrun.words()}, and killed a job sharing the card"
        if action.what == "requeue":
            self.stopper.requeue_over_budget(job, max(overrun.held, job.peak_mem or 0), why)
        elif action.what == "cancel":
            self.stopper.stop(job, JobState.CANCELLED, f"cancelled by gq ({why})")

    def prune_kept_off(self, holding: list[Job]) -> None:
        """Forget the cards kept from victims whose killer no longer runs (the pass's kept
        queue, gq/daemon/kept_queue.py, gives each victim a copy avoiding its cards)."""
        running = {j.id for j in holding if j.state == JobState.RUNNING}
        for victim, (killer, _cards) in list(self.kept_off.items()):
            if killer not in running:
                del self.kept_off[victim]
