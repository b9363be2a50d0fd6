"""How a replay's users declare time limits (`gq sim --time-model`): as a factor of the run
time, not at all, or as batch-system logs show people do it (`modal`)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from gq.sim.conversion import MIN_TIME_LIMIT
from gq.units import format_duration

# The round values people pick for --time (Tsafrir, Etsion and Feitelson, "Modeling user
# runtime estimates", 2005: a handful of values cover most jobs of a log).
MODAL_VALUES = tuple(v * 60.0 for v in (15, 30, 60, 120, 240, 480, 720, 1440, 2880, 4320,
                                        10080))
# How far above its run time a user aims before rounding up: 1.5x to 15x, spread evenly on a
# log scale by a hash of the job (logs show most jobs use a small share of their limit).
LOW, HIGH = 1.5, 15.0


@dataclass(frozen=True)
class TimeModel:
    kind: str  # factor | none | modal
    factor: float = 0.0

    def limit(self, duration: float, key: str) -> float | None:
        """The --time a user would have given a job of this run time (None: none)."""
        if self.kind == "none":
            return None
        if self.kind == "factor":
            return max(duration * self.factor, MIN_TIME_LIMIT) if self.factor > 0 else None
        share = int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        aim = max(duration, 1.0) * LOW * (HIGH / LOW) ** share
        for value in MODAL_VALUES:
            if value >= aim:
                return value
        return math.ceil(aim / MODAL_VALUES[-1]) * MODAL_VALUES[-1]

    def describe(self) -> str:
        if self.kind == "none":
            return "none declared"
        if self.kind == "factor":
            return (f"{self.factor:g}x the run time" if self.factor > 0 else "none declared")
        return ("modal: round values 1.5x to 15x the run time ("
                + ", ".join(format_duration(v) for v in MODAL_VALUES[:4]) + ", ...)")


def parse_time_model(text: str) -> TimeModel:
    """'factor:2', 'none' or 'modal'."""
    s = text.strip().lower()
    if s in ("none", "modal"):
        return TimeModel(s)
    kind, _, value = s.partition(":")
    if kind == "factor":
        try:
            factor = float(value)
        except ValueError:
            factor = -1.0
        if math.isfinite(factor) and factor >= 0:
            return TimeModel("factor", factor)
    raise ValueError(f"--time-model {text!r}: expected factor:F (F 0 or more), none or modal")
