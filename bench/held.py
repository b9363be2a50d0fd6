"""Benchmark what held jobs cost an idle daemon: its CPU over a quiet window with N held jobs,
against the same daemon's with none held, measured in the same run (issue 24's target: under
1% of a core with 5,000 held jobs and nothing running). For reference, the same with N jobs
waiting (not held) for cards that one running job keeps busy: the quick pass of each tick reads
a few of them, the explaining pass all of them every 30 s.

    python bench/held.py [--held N] [--window S]
"""

from __future__ import annotations

import argparse
import time

import psutil
from _harness import TempDaemon, machine

from gq.protocol.ops import every_listed

TARGET = 0.01  # of one core


def cpu_share(proc: psutil.Process, window: float) -> float:
    """The share of one core the process used over `window` seconds."""
    before = sum(proc.cpu_times()[:2])
    time.sleep(window)
    return (sum(proc.cpu_times()[:2]) - before) / window


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--held", type=int, default=5000)
    ap.add_argument("--window", type=float, default=20.0)
    args = ap.parse_args()
    print(f"bench/held.py on {machine()}")
    with TempDaemon(cpus=16, sim_gpus="4x80G", config='[daemon]\ntick = "1s"\n') as d:
        proc = psutil.Process(d.proc.pid)
        time.sleep(2)  # start-up done
        empty = cpu_share(proc, args.window)
        with d.connect() as c:
            c.call("submit", command=["true"], cwd="/", env={}, hold=True,
                   array={"indices": list(range(args.held)), "limit": None})
        time.sleep(2)  # the submit's own pass done
        held = cpu_share(proc, args.window)
        with d.connect() as c:  # the same jobs waiting: all four cards, one of them busy
            busy = c.call("submit", command=["sleep", "3600"], cwd="/", env={}, gpus=1)["id"]
            c.call("submit", command=["true"], cwd="/", env={}, gpus=4,
                   array={"indices": list(range(args.held)), "limit": None})
            c.call("cancel", ids=[str(j["id"]) for j in every_listed(c.call, states=["held"])])
        time.sleep(2)
        waiting = cpu_share(proc, args.window)
        with d.connect() as c:  # jobs outlive their daemon: this one must not
            c.call("cancel", ids=[str(busy)])
            c.call("wait", ids=[str(busy)])
    verdict = "ok" if held < TARGET else "MISSED"
    print(f"daemon CPU, idle: {empty:.2%} of a core with nothing queued, {held:.2%} with "
          f"{args.held} held (target under {TARGET:.0%}): {verdict}; for reference, "
          f"{waiting:.2%} with {args.held} waiting for busy cards and one job running")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
