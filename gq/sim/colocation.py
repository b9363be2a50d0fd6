"""What sharing a card does to speed: a model fitted to measured pairs, and the sharing figures.

Source: the public artifact of the Lucid scheduler (Hu et al., ASPLOS'23), repository
`S-Lab-System-Group/Lucid`: `simulation/data/colocate_info.csv` (1,388 pairs of training jobs run
together on one GPU, each job's speed together over its speed alone) joined on (model, dataset,
batch size, amp) with `simulation/analyzer/single_data.csv` (66 workloads alone: NVML SM
utilisation among others). S-Lab License 1.0; only the figures below, fitted from them on
2026-12-01, are in this project (docs/sim.md, "Sharing a card").

The model, by the two jobs' SM utilisation alone, summed (u1 + u2, percent): a pair in a band
runs each job at the band's mean speed, and has one job below 0.8x its speed alone with the
band's measured probability. Bands are narrow enough that the measured figures of the two rules
(memory only: 18.8% of pairs slowed; u1 + u2 <= 100: 1.1% slowed, 1.98x the work of one card)
come back from the model when it is evaluated on the measured pairs. With profiles drawn
independently (below), heavy jobs meet more often than in the measured mix, so memory-only
packing slows more pairs (about 26%) than the 18.8% measured.

A shared job is drawn a profile: its SM utilisation alone, from the 66 measured profiles
(their minimum, deciles and maximum, interpolated), with a seeded generator.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from dataclasses import dataclass

# (upper edge of u1 + u2 alone, %; mean speed of a job in such a pair, relative to alone;
#  share of such pairs with a job below 0.8x; pairs measured)
BANDS = (
    (50.0, 1.000, 0.000, 216),
    (75.0, 1.008, 0.000, 263),
    (100.0, 0.970, 0.028, 322),
    (125.0, 0.926, 0.160, 287),
    (150.0, 0.843, 0.557, 185),
    (175.0, 0.752, 0.904, 83),
    (200.0, 0.699, 0.875, 32),
)
# SM utilisation alone of the 66 profiles, %: minimum, the nine deciles, maximum.
UTIL_PROFILE = (5.6, 10.2, 13.3, 31.2, 41.8, 47.8, 57.8, 73.3, 86.1, 99.2, 100.0)
SLOW = 0.8  # a job below this fraction of its speed alone is slowed down
SHARE_UTIL_MAX = 100.0  # the daemon's default [scheduler] share_util_max


def draw_util(rng: random.Random) -> float:
    """A shared job's SM utilisation alone, drawn from the measured profiles."""
    x = rng.random() * (len(UTIL_PROFILE) - 1)
    i = min(int(x), len(UTIL_PROFILE) - 2)
    lo, hi = UTIL_PROFILE[i], UTIL_PROFILE[i + 1]
    return lo + (hi - lo) * (x - i)


def band(total_util: float) -> tuple[float, float, float, int]:
    i = min(bisect_left([b[0] for b in BANDS], total_util), len(BANDS) - 1)
    return BANDS[i]


@dataclass(frozen=True)
class Pair:
    work: float  # the two jobs' speeds together, in cards' worth of work alone
    slowed: bool  # one of them below SLOW


def pair(u1: float, u2: float, rng: random.Random) -> Pair:
    """Two jobs sharing a card, drawn from the model."""
    _edge, speed, slowed, _n = band(u1 + u2)
    return Pair(2 * speed, rng.random() < slowed)


def sharing_figures(util_max: float | None, pairs: int = 20000, seed: int = 1) -> dict:
    """Pairs of shared jobs (profiles drawn), admitted by memory alone (`util_max` None: any
    pair whose memory fits) or only when their utilisations sum to at most `util_max`:
    the share of pairs admitted, of admitted pairs slowed below 0.8x, and the work the
    admitted pairs do per card-hour, in cards' worth (1.0: one job alone)."""
    rng = random.Random(seed)
    admitted = slowed = 0
    work = 0.0
    for _ in range(pairs):
        u1, u2 = draw_util(rng), draw_util(rng)
        if util_max is not None and u1 + u2 > util_max:
            continue
        p = pair(u1, u2, rng)
        admitted += 1
        slowed += p.slowed
        work += p.work
    return {"rule": "memory only" if util_max is None else f"utilisation <= {util_max:g}%",
            "pairs": pairs, "admitted": admitted / pairs,
            "slowed_below_0_8": slowed / admitted if admitted else 0.0,
            "work_per_card_hour": work / admitted if admitted else 0.0}


class Sharing:
    """Co-location in a replay. Each slice (a job with --mem) is drawn a profile, its SM
    utilisation alone, from a generator seeded by the replay's seed and the job's number. When
    a slice starts on a card other slices use, it forms a pair with each of them, drawn slowed
    or not by the model. While a card holds several slices, each runs at the speed of the band
    of their utilisations summed: a job's run is stretched by the slowest of its cards as they
    stand when it starts (a first-order model: later arrivals do not re-time it). Work on a
    shared card is the jobs' speeds summed, per card-second shared."""

    def __init__(self, seed: int = 1):
        self.seed = seed
        self.util: dict[int, float] = {}  # job id -> SM utilisation alone, %
        self.on_card: dict[tuple[str, int], set[int]] = {}
        self.since: dict[tuple[str, int], float] = {}
        self.pairs = self.slowed = 0
        self.shared_seconds = self.work_seconds = 0.0

    def profile(self, job_id: int) -> float:
        util = self.util.get(job_id)
        if util is None:
            util = self.util[job_id] = draw_util(random.Random(self.seed * 1_000_003 + job_id))
        return util

    def start(self, job_id: int, host: str, cards, now: float) -> float:
        """A slice starts on `cards`: the speed it runs at (1.0 alone)."""
        own = self.profile(job_id)
        rng = random.Random(self.seed * 7_919 + job_id * 31 + int(now))
        speed = 1.0
        for card in cards:
            key = (host, card)
            self._advance(key, now)
            there = self.on_card.setdefault(key, set())
            for other in there:
                self.pairs += 1
                self.slowed += pair(own, self.util[other], rng).slowed
            there.add(job_id)
            speed = min(speed, self._speed(there))
        return speed

    def end(self, job_id: int, host: str, cards, now: float) -> None:
        for card in cards:
            key = (host, card)
            self._advance(key, now)
            self.on_card.get(key, set()).discard(job_id)

    def _speed(self, jobs: set[int]) -> float:
        return 1.0 if len(jobs) < 2 else band(sum(self.util[j] for j in jobs))[1]

    def _advance(self, key: tuple[str, int], now: float) -> None:
        jobs = self.on_card.get(key, ())
        if len(jobs) >= 2:
            dt = now - self.since.get(key, now)
            self.shared_seconds += dt
            self.work_seconds += dt * len(jobs) * self._speed(jobs)
        self.since[key] = now

    def figures(self) -> dict:
        return {"pairs": self.pairs,
                "slowed_below_0_8": self.slowed / self.pairs if self.pairs else 0.0,
                "shared_card_hours": self.shared_seconds / 3600,
                "work_per_card_hour": (self.work_seconds / self.shared_seconds
                                       if self.shared_seconds else 0.0)}
