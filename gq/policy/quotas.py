"""Per-user and per-account limits: GPUs running, jobs considered, how much of the host `high`
may hold, and an account's dominant share."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gq.model import Job, Tier
from gq.policy.accounts import Accounts


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
    """What each user and account holds, as the pass starts jobs, and the check against their
    limits. `weigh(job, n)`: the job's dominant weight with n cards (gq.policy.accounts), in
    card equivalents; needed only when an account has a max_share."""

    def __init__(self, limits: Limits, running: list[Job], n_cards: int,
                 accounts: Accounts = Accounts(),
                 weigh: Callable[[Job, int], float] | None = None):
        self.limits = limits
        self.n_cards = n_cards
        self.accounts = accounts
        self.weigh = weigh
        self.gpus: dict[str, int] = {}
        self.high_gpus: dict[str, int] = {}
        self.considered: dict[str, int] = {}
        self.account_gpus: dict[str, int] = {}
        self.account_weight: dict[str, float] = {}
        # No limit configured that a job could break: over() has nothing to check.
        self.unlimited = (not limits.users and limits.default == UserLimits(high_share=None)
                          and not accounts.limited)
        for job in running:
            self.take(job)

    def take(self, job: Job, n: int | None = None) -> None:
        """Count a job that holds (or is started with) `n` cards; None: what it holds."""
        if self.unlimited:
            return
        n = job.gpus_held if n is None else n
        self.gpus[job.user] = self.gpus.get(job.user, 0) + n
        if job.priority == Tier.HIGH:
            self.high_gpus[job.user] = self.high_gpus.get(job.user, 0) + n
        account = self.accounts.of(job.user)
        if account in self.accounts.limits:
            self.account_gpus[account] = self.account_gpus.get(account, 0) + n
            if self.weigh is not None:
                self.account_weight[account] = (self.account_weight.get(account, 0.0)
                                                + self.weigh(job, n))

    def over(self, job: Job) -> str | None:
        """Which limit the job would break, in words; None if none. Counts it as considered."""
        if self.unlimited:
            return None
        lim = self.limits.of(job.user)
        seen = self.considered[job.user] = self.considered.get(job.user, 0) + 1
        if lim.max_pending_jobs is not None and seen > lim.max_pending_jobs:
            return f"only the first {lim.max_pending_jobs} waiting jobs of a user are considered"
        return self.breaks(job, job.gpus)

    def most(self, job: Job) -> int:
        """The most cards of its elastic range the job may take within the limits (at least
        its minimum, which over() has checked)."""
        if not job.gpus_max or self.unlimited:
            return job.gpus_max or job.gpus
        n = job.gpus_max
        while n > job.gpus and self.breaks(job, n) is not None:
            n -= 1
        return n

    def breaks(self, job: Job, n: int) -> str | None:
        """The limit that `job` started with `n` cards would break, in words, or None."""
        lim = self.limits.of(job.user)
        if lim.max_running_gpus is not None and n and (
            self.gpus.get(job.user, 0) + n > lim.max_running_gpus
        ):
            cap = lim.max_running_gpus
            return f"{job.user} may hold at most {cap} GPU{'s' * (cap != 1)} at once"
        if job.priority == Tier.HIGH and n and lim.high_share is not None:
            cap = max(1, math.ceil(lim.high_share * self.n_cards))
            if self.high_gpus.get(job.user, 0) + n > cap:
                return f"{job.user}'s high-tier jobs may hold at most {cap} GPU{'s' * (cap != 1)}"
        account = self.accounts.of(job.user)
        alim = self.accounts.limits.get(account)
        if alim is None:
            return None
        if alim.max_running_gpus is not None and n and (
                self.account_gpus.get(account, 0) + n > alim.max_running_gpus):
            cap = alim.max_running_gpus
            return f"account {account} may hold at most {cap} GPU{'s' * (cap != 1)} at once"
        if alim.max_share is not None and self.weigh is not None and self.n_cards:
            held = self.account_weight.get(account, 0.0) + self.weigh(job, n)
            if held > alim.max_share * self.n_cards + 1e-9:
                return (f"account {account} may hold at most {alim.max_share:.0%} of the cards "
                        "(its dominant share: cards, card memory or cores)")
        return None


def never_within_limits(job: Job, limits: Limits, n_cards: int,
                        accounts: Accounts = Accounts()) -> str | None:
    """The limit that keeps `job` from ever starting, even with nothing else running, in words;
    None when some state of the queue lets it start. Submit and `gq update` refuse such a job,
    and `gq why` says so of one that the configuration has since left behind."""
    if not job.gpus:
        return None
    empty = QuotaBook(limits, [], n_cards, accounts)  # no weigh: a max_share is not judged
    return None if empty.unlimited else empty.breaks(job, job.gpus)


def never_starts(job: Job, limits: Limits, n_cards: int,
                 accounts: Accounts = Accounts()) -> tuple[str, bool] | None:
    """Which limit keeps `job` from ever starting (never_within_limits), and whether a lower
    tier would let it start; None if it can start once the cards are free."""
    limit = never_within_limits(job, limits, n_cards, accounts)
    if limit is None:
        return None
    return limit, job.priority == Tier.HIGH and never_within_limits(
        replace(job, priority=Tier.NORMAL), limits, n_cards, accounts) is None


def never_start_refusal(job: Job, limits: Limits, n_cards: int,
                        accounts: Accounts = Accounts()) -> str | None:
    """Why the daemon refuses a job that could never start here (`gq update`; submit says
    submit_refusal); None if it can start."""
    never = never_starts(job, limits, n_cards, accounts)
    if never is None:
        return None
    return (f"{never[0]}, so it could never start; ask for fewer GPUs"
            f"{' or a lower tier' if never[1] else ''} (the limits: gq config show)")


def submit_refusal(job: Job, limits: Limits, n_cards: int,
                   accounts: Accounts = Accounts()) -> str | None:
    """The line with which submit refuses such a job, and with which `gq sim` drops one."""
    never = never_start_refusal(job, limits, n_cards, accounts)
    return None if never is None else f"-p {job.priority} -g {job.gpus}: {never}"
