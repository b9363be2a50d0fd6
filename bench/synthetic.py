"""Synthetic job traces in gq's own CSV format: a third and fourth workload beside the two
public traces, so that a policy change is not judged on one file.

    python bench/synthetic.py OUT.csv [--load 0.9] [--seed 1] [--jobs 3000] [--cards 16]

Poisson arrivals at `load` times the capacity of `cards` cards; sizes of 1, 2, 4 and 8 cards
(60/15/15/10%); log-normal run times (median 1 hour, sigma 1.2: most jobs short, a few of days);
six users of unequal weight (35/25/15/10/10/5% of the jobs); tiers high/normal/low at 20/60/20%.
No time limits: `gq sim --time-factor` declares them, as for the public traces. The numbers are
round guesses at a busy lab, not fitted to any trace; that is the point.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

SIZES = {1: 60, 2: 15, 4: 15, 8: 10}  # cards -> % of jobs
USERS = {"u0": 35, "u1": 25, "u2": 15, "u3": 10, "u4": 10, "u5": 5}
TIERS = {"high": 20, "normal": 60, "low": 20}
MEDIAN_RUN, SIGMA = 3600.0, 1.2
HEADER = "job_id,submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name"


def write_trace(path: Path, load: float, seed: int, jobs: int = 3000, cards: int = 16) -> Path:
    rng = random.Random(seed)
    mean_cards = sum(c * w for c, w in SIZES.items()) / sum(SIZES.values())
    mean_run = MEDIAN_RUN * math.exp(SIGMA ** 2 / 2)
    rate = load * cards / (mean_cards * mean_run)  # arrivals per second
    lines, t = [HEADER], 0.0
    for i in range(jobs):
        t += rng.expovariate(rate)
        run = max(60.0, rng.lognormvariate(math.log(MEDIAN_RUN), SIGMA))
        gpus = rng.choices(list(SIZES), list(SIZES.values()))[0]
        user = rng.choices(list(USERS), list(USERS.values()))[0]
        tier = rng.choices(list(TIERS), list(TIERS.values()))[0]
        lines.append(f"{i},{t:.0f},{run:.0f},{gpus},,{user},{tier},1,,")
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--cards", type=int, default=16)
    a = ap.parse_args()
    print(write_trace(a.out, a.load, a.seed, a.jobs, a.cards))


if __name__ == "__main__":
    main()
