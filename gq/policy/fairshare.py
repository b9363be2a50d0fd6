"""Fair share and age: the order of jobs within a tier.

Usage is card-seconds (a whole card for an hour is 3,600; a 20G slice of an 80G card a quarter
of that), decayed so that it halves every `half_life`. A user's fair-share factor is
2^-(usage share / fair share), as in Slurm's classic formula: 1 for a user who used nothing,
0.5 for one who used exactly their share, lower beyond. Age counts from when a job became
eligible (its dependencies met), capped, so old jobs rise but cannot overtake a tier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Score:
    """Why a job stands where it does in its tier; higher goes first."""

    total: float
    fairshare: float  # the user's factor, 0..1
    age: float  # 0..1 of the cap
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


def fairshare_factors(usage: dict[str, float], users: set[str]) -> dict[str, float]:
    """2^-(share of usage / fair share) for each of `users`, every user with an equal share."""
    everyone = users | set(usage)
    total = sum(usage.values())
    fair = 1.0 / max(len(everyone), 1)
    out = {}
    for user in everyone:
        share = usage.get(user, 0.0) / total if total > 0 else 0.0
        out[user] = 2.0 ** (-share / fair)
    return out


def score(job: Job, eligible_since: float, factors: dict[str, float], usage: dict[str, float],
          now: float, cfg: FairShareConfig) -> Score:
    age = min(max(now - eligible_since, 0.0), cfg.age_cap) / cfg.age_cap if cfg.age_cap else 0.0
    fair = factors.get(job.user, 1.0)
    total = cfg.weight_fairshare * fair + cfg.weight_age * age
    return Score(total, fair, age, usage.get(job.user, 0.0))
