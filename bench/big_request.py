"""Benchmark another user's `gq ls` while one user sends the largest submit the limits allow."""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading

from _harness import TempDaemon, gq_script, machine, print_table, round_options, time_command

from gq.config import AccessConfig
from gq.daemon.submit_limits import ROW_BYTES

TARGET_RATIO = 3.0  # `gq ls` while the big request is served, at most 3x a quiet one
LIMITS = AccessConfig()  # the defaults: what any user may send


def largest_submit(cwd: str) -> dict:
    """A held array of [daemon] max_submit_jobs elements whose environment is as large as
    max_submit_bytes and the request line limit (max_request) let it be."""
    jobs = LIMITS.max_submit_jobs
    room = min(LIMITS.max_submit_bytes - jobs * ROW_BYTES - 4096, LIMITS.max_request - 4096)
    env = {"PATH": "/usr/bin:/bin", "BIG": "x" * (room - (room >> 6))}
    return {"command": ["true"], "cwd": cwd, "env": env, "gpus": 1, "hold": True,
            "array": {"indices": list(range(jobs))}}


def run(rounds: int) -> dict:
    ls = [gq_script(), "ls", "-u", "another-user"]  # their own jobs: none; the daemon's work
    with TempDaemon(os.cpu_count() or 1) as daemon:
        args = largest_submit(daemon.home)
        size = len(json.dumps(args))
        time_command(ls, daemon.env)  # warm
        quiet, during, served = [], [], []

        def flood() -> None:
            with daemon.connect(timeout=600) as conn:
                ids = conn.call("submit", **args)["array_jobs"]
                served.append(len(ids))
                conn.call("cancel", ids=[str(ids[0])])  # the whole array: a big request too

        for _ in range(rounds):
            quiet.append(time_command(ls, daemon.env))
            sender = threading.Thread(target=flood)
            sender.start()
            while sender.is_alive():
                during.append(time_command(ls, daemon.env))
            sender.join()
        quiet.append(time_command(ls, daemon.env))
    if len(served) != rounds:
        raise RuntimeError(f"{rounds - len(served)} of the big submits failed")
    q, d = statistics.median(quiet), statistics.median(during)
    return {"rounds": rounds, "elements": LIMITS.max_submit_jobs, "request_bytes": size,
            "quiet_ms": round(q * 1e3, 1), "during_ms": round(d * 1e3, 1),
            "during_max_ms": round(max(during) * 1e3, 1), "samples_during": len(during),
            "ratio": round(d / q, 2), "target_ratio": TARGET_RATIO}


def main() -> int:
    opts, rounds, _ = round_options(__doc__)
    rounds = 2 if opts.quick else 6
    figures = {**machine(), **run(rounds)}
    if opts.json:
        print(json.dumps(figures))
        return 0
    ok = figures["ratio"] <= TARGET_RATIO
    print(f"gq big-request benchmark, {figures['date']}; {figures['cores']} cores")
    print_table([
        (f"one user: {figures['rounds']} times a held array of {figures['elements']} elements "
         f"({figures['request_bytes'] >> 10} KB request), then its cancel", "", ""),
        ("gq ls -u another-user, quiet (median)", f"{figures['quiet_ms']:.0f} ms", ""),
        ("the same, while the big requests are served (median)",
         f"{figures['during_ms']:.0f} ms",
         f"max {figures['during_max_ms']:.0f} ms of {figures['samples_during']}"),
        ("ratio", f"{figures['ratio']:.2f}x",
         f"target: at most {TARGET_RATIO:g}x  {'ok' if ok else 'MISSED'}"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
