"""Fair share, age and length: the order of jobs within a tier.

Usage is card-seconds (a whole card for an hour is 3,600; a 20G slice of an 80G card a quarter
of that), decayed so that it halves every `half_life`. A user's fair-share factor is
2^-(usage share / fair share), as in Slurm's classic formula: 1 for a user who used nothing,
0.5 for one who used exactly their share, lower beyond. Age counts from when a job became
eligible (its dependencies met), capped, so old jobs rise but cannot overtake a tier. Length
favours jobs that declare a short time limit (shortest-job-first cuts the average wait the most,
and it rewards an honest --time), on a log scale so that it never outweighs a capped age.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from gq.model import Job


@dataclass(frozen=True)
class RunInterval:
    """Part of a run that charges its user: `weight` cards from `start` to `end` (None: now)."""

    user: str
    weight: float
    start: float
    end: float | None


@dataclass(frozen=True)
class FairShareConfig:
    half_life: float = 7 * 86400.0
    age_cap: float = 3 * 86400.0
    weight_fairshare: float = 1.0
    weight_age: float = 0.25
    weight_short: float = 0.25
    # A limit of `short_floor` or less scores 1 for length, `short_ceiling` or more 0.
    short_floor: float = 60.0
    short_ceiling: float = 7 * 86400.0


@dataclass(frozen=True, slots=True)  # one a waiting job: no __dict__ each (#38)
class Score:
    """Why a job stands where it does in its tier; higher goes first."""

    total: float
    fairshare: float  # the user's factor, 0..1
    age: float  # 0..1 of the cap
    short: float  # 0..1: 1 for a time limit of a minute or less, 0 for a week or more
    usage: float  # the user's decayed card-seconds


def decayed_usage(intervals: list[RunInterval], now: float, half_life: float) -> dict[str, float]:
    """Each user's card-seconds, every second weighted 2^-(age of that second / half_life)."""
    k = math.log(2) / half_life
    usage: dict[str, float] = {}
    for iv in intervals:
        end = now if iv.end is None else min(iv.end, now)
        if end <= iv.start:
            continue
        # The integral of exp(-k (now - s)) ds from start to end.
        charge = (math.exp(-k * (now - end)) - math.exp(-k * (now - iv.start))) / k
        usage[iv.user] = usage.get(iv.user, 0.0) + iv.weight * charge
    return usage


def fairshare_factors(usage: dict[str, float]) -> dict[str, float]:
    """2^-(share of usage / fair share) for each user with usage, every such user due an equal
    share. A user absent from `usage` has used nothing: factor 1."""
    total = sum(usage.values())
    fair = 1.0 / max(len(usage), 1)
    return {user: 2.0 ** (-(u / total if total > 0 else 0.0) / fair) for user, u in usage.items()}


@lru_cache(maxsize=4096)  # a queue repeats a few limits; a replay asks millions of times
def shortness(limit: float, cfg: FairShareConfig) -> float:
    """1 for a time limit at or under the floor, 0 at or over the ceiling, log-linear between."""
    if limit <= cfg.short_floor:
        return 1.0
    if limit >= cfg.short_ceiling:
        return 0.0
    return 1.0 - math.log(limit / cfg.short_floor) / math.log(cfg.short_ceiling / cfg.short_floor)


def score(job: Job, eligible_since: float, limit: float, fair: float,
          usage: dict[str, float], now: float, cfg: FairShareConfig) -> Score:
    """`limit`: the job's time limit, declared or assumed for its tier; `fair`: its user's
    fair-share factor (gq.policy.accounts.share_factors)."""
    age = age_factor(eligible_since, now, cfg)
    short = shortness(limit, cfg)
    return Score(total(fair, age, short, cfg), fair, age, short, usage.get(job.user, 0.0))


def age_factor(eligible_since: float, now: float, cfg: FairShareConfig) -> float:
    return min(max(now - eligible_since, 0.0), cfg.age_cap) / cfg.age_cap if cfg.age_cap else 0.0


def total(fair: float, age: float, short: float, cfg: FairShareConfig) -> float:
    """The score: the one formula the order and `gq show` both use."""
    return cfg.weight_fairshare * fair + cfg.weight_age * age + cfg.weight_short * short
