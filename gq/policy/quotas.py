"""Per-user limits: GPUs running, jobs considered, and how much of the host `high` may hold."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gq.model import Job, Tier


@dataclass(frozen=True)
class UserLimits:
    max_running_gpus: int | None = None  # None: no limit
    max_pending_jobs: int | None = None  # jobs beyond this many (in queue order) wait
    # Of the host's cards, what one user's high-tier jobs may hold; None: no such limit.
    high_share: float | None = 0.2


@dataclass(frozen=True)
class Limits:
    default: UserLimits = UserLimits()
    users: dict[str, UserLimits] = field(default_factory=dict)

    def of(self, user: str) -> UserLimits:
        return self.users.get(user, self.default)


class QuotaBook:
    """What each user holds, as the pass starts jobs, and the check against their limits."""

    def __init__(self, limits: Limits, running: list[Job], n_cards: int):
        self.limits = limits
        self.n_cards = n_cards
        self.gpus: dict[str, int] = {}
        self.high_gpus: dict[str, int] = {}
        self.considered: dict[str, int] = {}
        # No limit configured that a job could break: over() has nothing to check.
        self.unlimited = not limits.users and limits.default == UserLimits(high_share=None)
        for job in running:
            self.take(job)

    def take(self, job: Job) -> None:
        self.gpus[job.user] = self.gpus.get(job.user, 0) + job.gpus
        if job.priority == Tier.HIGH:
            self.high_gpus[job.user] = self.high_gpus.get(job.user, 0) + job.gpus

    def over(self, job: Job) -> str | None:
        """Which limit the job would break, in words; None if none. Counts it as considered."""
        if self.unlimited:
            return None
        lim = self.limits.of(job.user)
        seen = self.considered[job.user] = self.considered.get(job.user, 0) + 1
        if lim.max_pending_jobs is not None and seen > lim.max_pending_jobs:
            return f"only the first {lim.max_pending_jobs} waiting jobs of a user are considered"
        if lim.max_running_gpus is not None and job.gpus and (
            self.gpus.get(job.user, 0) + job.gpus > lim.max_running_gpus
        ):
            n = lim.max_running_gpus
            return f"{job.user} may hold at most {n} GPU{'s' * (n != 1)} at once"
        if job.priority == Tier.HIGH and job.gpus and lim.high_share is not None:
            cap = max(1, math.ceil(lim.high_share * self.n_cards))
            if self.high_gpus.get(job.user, 0) + job.gpus > cap:
                return f"{job.user}'s high-tier jobs may hold at most {cap} GPU{'s' * (cap != 1)}"
        return None
