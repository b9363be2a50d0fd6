"""Benchmark `gq submit` latency against `python -c pass`, and the daemon's dispatch rate."""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

from _harness import SIM_GPUS, TempDaemon, gq_script, interleaved, machine, print_table, verdict

from gq.cli.submit_args import request_args
from gq.model import ENDED_STATES

SUBMIT_ARGS = ["submit", "--hold", "-g", "0", "--", "true"]  # held: the queue never runs them
TARGET_RATIO = 3.0  # gq submit at most 3x a bare interpreter start
TARGET_RATE = 150.0  # jobs/s, first submit to last completion
ENDED = {str(s) for s in ENDED_STATES}


def submit_latency(cpus: int, rounds: int, warmup: int) -> dict:
    """Median wall time of a real `gq submit` process and of `python -c pass`, interleaved."""
    commands = {"gq": [gq_script(), *SUBMIT_ARGS], "python": [sys.executable, "-c", "pass"]}
    with TempDaemon(cpus) as daemon:
        medians = interleaved(commands, daemon.env, rounds, warmup)
    gq_ms, py_ms = medians["gq"] * 1e3, medians["python"] * 1e3
    return {"rounds": rounds, "warmup": warmup, "gq_submit_ms": round(gq_ms, 2),
            "python_pass_ms": round(py_ms, 2), "ratio": round(gq_ms / py_ms, 2),
            "target_ratio": TARGET_RATIO}


def wait_all(conn, ids: list[int]) -> collections.Counter:
    """Block until every job in ids has ended (a later one ending says nothing of earlier ones)."""
    wanted = set(ids)
    conn.call("wait", ids=[str(ids[-1])])
    while True:
        states = {j["id"]: j["state"] for j in conn.call("list", all=True) if j["id"] in wanted}
        active = [i for i in ids if states.get(i) not in ENDED]
        if not active:
            return collections.Counter(states.values())
        conn.call("wait", ids=[str(i) for i in active])


def dispatch(cpus: int, jobs: int) -> dict:
    """Submit `jobs` CPU-only `true` jobs over one connection; time acks and completions."""
    args = request_args({"gpus": "0"}, ["true"])
    with TempDaemon(cpus) as daemon, daemon.connect(timeout=300) as conn:
        start = time.perf_counter()
        ids = [conn.call("submit", **args)["id"] for _ in range(jobs)]
        acked = time.perf_counter() - start
        states = wait_all(conn, ids)
        done = time.perf_counter() - start
    if states["completed"] != jobs:
        raise RuntimeError(f"not all {jobs} jobs completed: {dict(states)}")
    floor = spawn_rate(jobs, cpus)
    rate = jobs / done
    return {"jobs": jobs, "submit_per_s": round(jobs / acked, 1), "jobs_per_s": round(rate, 1),
            "elapsed_s": round(done, 3), "spawn_floor_per_s": round(floor, 1),
            "vs_floor": round(rate / floor, 3), "target_jobs_per_s": TARGET_RATE}


def spawn_rate(jobs: int, slots: int) -> float:
    """Baseline: `true` processes per second when Python starts them `slots` at a time."""
    start = time.perf_counter()
    for first in range(0, jobs, slots):
        procs = [subprocess.Popen(["true"]) for _ in range(min(slots, jobs - first))]
        for p in procs:
            p.wait()
    return jobs / (time.perf_counter() - start)


def report(info: dict, sub: dict, disp: dict) -> None:
    print(f"gq submit benchmark, {info['date']}; python {info['python']}; {info['cores']} cores")
    print(f"each part: a fresh daemon, [host] cpus = {info['daemon_cpus']} (os.cpu_count()), "
          f"GQ_SIM_GPUS={SIM_GPUS}")
    ratio_ok = sub["ratio"] <= TARGET_RATIO
    rate_ok = disp["jobs_per_s"] >= TARGET_RATE
    print_table([
        (f"submit latency: medians of {sub['rounds']} interleaved rounds after "
         f"{sub['warmup']} warm-up", "", ""),
        ("gq " + " ".join(SUBMIT_ARGS), f"{sub['gq_submit_ms']:.1f} ms",
         "reference: tsp ~2 ms, sbatch ~7 ms"),
        ("python -c pass", f"{sub['python_pass_ms']:.1f} ms", ""),
        ("ratio", f"{sub['ratio']:.2f}x",
         f"target: at most {TARGET_RATIO:g}x  {verdict(ratio_ok)}"),
        (f"dispatch: {disp['jobs']} jobs (gpus=0, `true`) over one connection", "", ""),
        ("submits acknowledged", f"{disp['submit_per_s']:.0f} jobs/s", ""),
        ("first submit to last completion", f"{disp['jobs_per_s']:.0f} jobs/s",
         f"target: at least {TARGET_RATE:g} jobs/s  {verdict(rate_ok)}; "
         "reference: tsp, 2 slots ~500 jobs/s"),
        (f"baseline: Popen(['true']), {info['daemon_cpus']} at a time",
         f"{disp['spawn_floor_per_s']:.0f} jobs/s", f"gq reaches {disp['vs_floor']:.2f}x of it"),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 rounds and 200 jobs")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    opts = parser.parse_args()
    rounds, warmup, jobs = (10, 2, 200) if opts.quick else (40, 3, 1000)
    cpus = os.cpu_count() or 1
    info = {**machine(), "daemon_cpus": cpus, "sim_gpus": SIM_GPUS}
    sub = submit_latency(cpus, rounds, warmup)
    disp = dispatch(cpus, jobs)
    if opts.json:
        print(json.dumps({**info, "submit": sub, "dispatch": disp}))
    else:
        report(info, sub, disp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
