"""Pools: named sets of cards (the same indices on every host) that jobs are confined to."""

from __future__ import annotations

from dataclasses import dataclass, field

from gq.model import Job


@dataclass(frozen=True)
class Pools:
    """`cards`: pool name -> card indices; a card may be in several pools. `default`: the pool
    of jobs submitted without --pool; None (no pools configured): every card."""

    cards: dict[str, frozenset[int]] = field(default_factory=dict)
    default: str | None = None
    # Pools whose jobs go ahead of batch work: interactive jobs of such a pool rank first.
    interactive: frozenset[str] = frozenset()

    def name_of(self, job: Job) -> str | None:
        return job.pool or self.default

    def allowed(self, job: Job) -> frozenset[int] | None:
        """The cards the job may run on; None: any. A CPU-only job is in no pool; without
        pools, nothing is; a pool that is no longer configured, among others that are, has no
        cards (its jobs wait until it is back)."""
        if not self.cards or (job.gpus == 0 and not job.gpus_max):
            return None
        name = self.name_of(job)
        if name is None:
            return None
        return self.cards.get(name, frozenset())
