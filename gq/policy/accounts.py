"""Accounts (teams): fair share per account and per user, and what a job costs in it.

A job is charged its dominant share of its host: the largest of its part of the cards (a slice
counts as its part of the card's memory), of the CPU cores and of the host memory, in card
equivalents (times the host's cards). A job that holds one 20G slice but half the cores is
charged half the host, so a team cannot take every card, or every core, with jobs that look
small by one measure.

Fair share follows Slurm's classic effective usage, one level of accounts deep: a user's usage
is their own plus an equal part of the rest of their account's,

    effective(u) = usage(u) + (usage(account) - usage(u)) / users of the account
    fair(u)      = share(account) / users of the account
    factor(u)    = 2 ^ -(effective(u) / fair(u))

with usages as parts of all usage, an account's share as its part of the shares of the accounts
with usage, and users counted among those with usage. A user in no configured account is an
account of their own, so that without [accounts] the factor is exactly the per-user one. A
user who has used nothing gets their account's factor, 2 ^ -(usage(account) / share(account)),
or 1 if the account has used nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gq.model import Job
from gq.policy.cardshare import cards_held

if TYPE_CHECKING:
    from gq.policy.types import Host


@dataclass(frozen=True)
class AccountLimits:
    max_running_gpus: int | None = None  # GPUs the account's jobs may hold at once
    # Of all the cards (in card equivalents, see above), what the account's jobs may hold.
    max_share: float | None = None


@dataclass(frozen=True)
class Accounts:
    members: dict[str, str] = field(default_factory=dict)  # user -> account
    shares: dict[str, float] = field(default_factory=dict)  # account -> share (default 1)
    limits: dict[str, AccountLimits] = field(default_factory=dict)

    def of(self, user: str) -> str:
        """The user's account: their own name when no account lists them."""
        return self.members.get(user, user)

    def share(self, account: str) -> float:
        return self.shares.get(account, 1.0)

    @property
    def limited(self) -> bool:
        return any(lim != AccountLimits() for lim in self.limits.values())


def dominant_weight(job: Job, host: Host, gpu_ids=None) -> float:
    """What the job costs while it runs, in card equivalents of its host (see the module
    docstring). `gpu_ids`: the cards it holds or would hold (default: its own)."""
    cards = cards_held(job, {c.index: c.memory_total for c in host.cards}, gpu_ids)
    n = max(len(host.cards), 1)
    share = max(cards / n, job.cpus / host.cpus if host.cpus else 0.0,
                (job.ram or 0) / host.ram if host.ram else 0.0)
    return share * n


@dataclass(frozen=True)
class ShareFactors:
    """Each user's fair-share factor (0..1), with accounts."""

    users: dict[str, float]  # users with usage
    newcomers: dict[str, float]  # account -> the factor of a member who has used nothing
    accounts: Accounts

    def of(self, user: str) -> float:
        known = self.users.get(user)
        if known is not None:
            return known
        return self.newcomers.get(self.accounts.of(user), 1.0)


def share_factors(usage: dict[str, float], accounts: Accounts) -> ShareFactors:
    total = sum(usage.values())
    by_account: dict[str, list[str]] = {}
    for user in usage:
        by_account.setdefault(accounts.of(user), []).append(user)
    shares = sum(accounts.share(a) for a in by_account)
    users, newcomers = {}, {}
    for account, members in by_account.items():
        fair_account = accounts.share(account) / shares if shares > 0 else 1.0
        used = (sum(usage[u] for u in members) / total) if total > 0 else 0.0
        n = len(members)
        for u in members:
            mine = usage[u] / total if total > 0 else 0.0
            effective = mine + (used - mine) / n
            users[u] = 2.0 ** (-effective / (fair_account / n))
        newcomers[account] = 2.0 ** (-used / fair_account)
    return ShareFactors(users, newcomers, accounts)


def share_report(usage: dict[str, float], accounts: Accounts) -> list[dict]:
    """What `gq fairshare` shows, as Slurm's sshare does: per account, and per user within it,
    the share, the decayed usage (card-seconds, and as a part of all usage: raw, and effective
    as the module docstring defines it) and the factor the scheduling pass gives (from
    share_factors: the same numbers). Configured accounts without usage are listed too."""
    factors = share_factors(usage, accounts)
    total = sum(usage.values())
    part = (lambda v: v / total) if total > 0 else (lambda v: 0.0)
    members: dict[str, set[str]] = {a: set() for a in accounts.shares}
    for user, account in accounts.members.items():
        members.setdefault(account, set()).add(user)
    for user in usage:
        members.setdefault(accounts.of(user), set()).add(user)
    with_usage = {accounts.of(u) for u in usage}
    shares = sum(accounts.share(a) for a in with_usage)
    configured = set(accounts.members.values()) | set(accounts.shares)
    out = []
    for account in sorted(members):
        users = sorted(members[account])
        used = part(sum(usage.get(u, 0.0) for u in users))
        active = sum(1 for u in users if u in usage)
        out.append({
            "account": account, "configured": account in configured,
            "share": accounts.share(account),
            "norm_share": accounts.share(account) / shares if account in with_usage else None,
            "usage_card_seconds": sum(usage.get(u, 0.0) for u in users), "norm_usage": used,
            "factor": factors.newcomers.get(account, 1.0),
            "users": [{"user": u, "usage_card_seconds": usage.get(u, 0.0),
                       "norm_usage": part(usage.get(u, 0.0)),
                       "effective_usage": (part(usage[u]) + (used - part(usage[u])) / active
                                           if u in usage else None),
                       "factor": factors.of(u)} for u in users]})
    return out
