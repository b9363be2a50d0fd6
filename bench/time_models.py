"""How declared and learned time limits change gq's schedule: the two public traces replayed by
the gq policy with users declaring limits as `factor:2`, not at all (`none`) and as batch logs
show (`modal`), each without and with learned run times, beside an oracle that knows every run
time (`factor:1`). Target: with learning, average completion time within 1.25x the oracle's.

    python bench/time_models.py [--quick N] [--json]      (also run by bench/policy.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _harness import machine, verdict

from gq.sim.cluster import parse_cluster
from gq.sim.metrics import metrics
from gq.sim.replay import ReplayTimeout, replay
from gq.sim.time_model import TimeModel
from gq.sim.traces import read_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
CASES = [("alibaba-openb-2023-a.csv", "3x8x80G"), ("philly-mix1-a.csv", "4x8x80G")]
TARGET = 1.25  # learned average completion time at most this many times the oracle's
CAP = 600.0  # s of wall time per replay: the day-long default makes passes slow on Philly
RUNS = [  # (label, time model, learn)
    ("oracle", TimeModel("factor", 1.0), False),
    ("factor:2", TimeModel("factor", 2.0), False),
    ("none", TimeModel("none"), False),
    ("none+learn", TimeModel("none"), True),
    ("modal", TimeModel("modal"), False),
    ("modal+learn", TimeModel("modal"), True),
]


def run_case(name: str, cluster: str, quick: int | None) -> dict:
    jobs = read_trace(TRACES / name).jobs
    if quick:
        jobs = jobs[:quick]
    hosts = parse_cluster(cluster, 128)
    rows = {}
    for label, model, learn in RUNS:
        try:
            m = metrics(replay(jobs, hosts, "gq", time_model=model, learn=learn,
                               max_wall_s=CAP))
            rows[label] = {"avg_wait_s": m["avg_wait_s"], "avg_jct_s": m["avg_jct_s"],
                           "wall_s": m.get("sim_seconds")}
        except ReplayTimeout as e:
            rows[label] = {"stopped": str(e)}
    oracle = rows["oracle"].get("avg_jct_s")
    checks = {}
    for label in ("none+learn", "modal+learn"):
        jct = rows[label].get("avg_jct_s")
        ratio = jct / oracle if jct is not None and oracle else None
        checks[label] = {"jct_vs_oracle": ratio, "ok": ratio is not None and ratio <= TARGET}
    return {"trace": name, "cluster": cluster, "jobs": len(jobs), "runs": rows,
            "targets": checks}


def print_case(case: dict) -> None:
    print(f"\n{case['trace']} ({case['jobs']} jobs, {case['cluster']}), policy gq")
    print(f"  {'time limits':<13} {'avg wait':>12} {'avg completion':>15}")
    for label, row in case["runs"].items():
        if "stopped" in row:
            print(f"  {label:<13} stopped: {row['stopped']}")
            continue
        print(f"  {label:<13} {row['avg_wait_s']:>11.0f}s {row['avg_jct_s']:>14.0f}s")
    for label, check in case["targets"].items():
        ratio = check["jct_vs_oracle"]
        shown = "-" if ratio is None else f"{ratio:.3f}"
        print(f"  {label}: completion {shown}x the oracle's (target <= {TARGET:g})  "
              f"{verdict(check['ok'])}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", type=int, nargs="?", const=1000, metavar="N",
                    help="replay only the first N jobs of each trace (default 1000)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    cases = []
    for name, cluster in CASES:
        cases.append(run_case(name, cluster, args.quick))
        if not args.json:
            print_case(cases[-1])
            sys.stdout.flush()
    if args.json:
        print(json.dumps({"machine": machine(), "cases": cases}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
