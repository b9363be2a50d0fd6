"""Fair-share usage in a replay: recalculated on a fixed grid of simulated time.

Usage is taken as of the last multiple of `refresh` (as Slurm's PriorityCalcPeriod): a pass sees
the same figures whichever passes ran before it, which keeps skipping idle passes exact, and
between two grid points the dict is the same object, which lets the policy keep its queue sorted.
"""

from __future__ import annotations

import math
from typing import Callable

from gq.model import Job
from gq.policy import RunInterval, decayed_usage


class UsageGrid:
    def __init__(self, refresh: float, half_life: float):
        self.refresh = refresh
        self.half_life = half_life
        # Runs that ended, folded into one number per user at `folded_at`, and those since.
        self.folded: dict[str, float] = {}
        self.folded_at = 0.0
        self.ended: list[RunInterval] = []  # the replay appends each run that ends
        self.usage: dict[str, float] = {}
        self.computed_at: float | None = None

    def at(self, now: float, running: Callable[[], list[tuple[Job, float]]]) -> dict[str, float]:
        """Each user's decayed card-seconds as of the grid point at or before `now`; `running`
        gives the jobs holding cards now, with the cards they count for (asked only when the
        grid point is new)."""
        at = math.floor(now / self.refresh) * self.refresh if self.refresh > 0 else now
        if at == self.computed_at:
            return self.usage
        # Runs that ended by then only decay from there on: fold them into one figure per
        # user, which equals decayed_usage over all of them (the decay is a common factor).
        decay = 2.0 ** (-(at - self.folded_at) / self.half_life)
        folded = {u: v * decay for u, v in self.folded.items()}
        done = [iv for iv in self.ended if iv.end <= at]
        for user, value in decayed_usage(done, at, self.half_life).items():
            folded[user] = folded.get(user, 0.0) + value
        self.folded, self.folded_at = folded, at
        self.ended = [iv for iv in self.ended if iv.end > at]
        # Runs going on at `at`: the running jobs, and those that ended since (decayed_usage
        # counts each up to `at`; one that started after it counts nothing yet).
        going = self.ended + [RunInterval(j.user, w, j.started_at, None)
                              for j, w in running() if w > 0]
        usage = dict(folded)
        for user, value in decayed_usage(going, at, self.half_life).items():
            usage[user] = usage.get(user, 0.0) + value
        self.usage, self.computed_at = usage, at
        return usage
