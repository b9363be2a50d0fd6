"""Benchmark the hot commands against a bare interpreter start: each one as a process, in
interleaved rounds with `python -c pass`, on two daemons that differ only in their history
(100 and 10,000 ended jobs, written through the store before they start).

    python bench/cli.py [--quick] [--json]
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import sys
from functools import partial

from _harness import (
    TempDaemon, gq_script, machine, print_table, round_options, time_command, verdict,
)
from _history import add_ended_jobs

import gq as gq_package
from gq.cli.submit_args import request_args

ACTIVE = 20  # held jobs on each daemon: the queue `gq ls` shows
# (name, target ratio to python -c pass or None: printed only)
TARGETS = {"ls": 2.0, "show": 2.0, "why": 2.0, "gpus": 2.0, "cancel": 2.0, "submit": 2.0,
           "ls --all (10,000 ended)": 4.0}
HISTORY_TARGET = 1.2  # gq ls with 10,000 ended jobs against 100


def prepare(daemon: TempDaemon, cancels: int) -> dict[str, str]:
    """Held jobs to list (and to cancel, one a round) and an ended one to show."""
    args = request_args({"gpus": "0", "hold": True}, ["true"])
    with daemon.connect() as conn:
        for _ in range(ACTIVE):
            conn.call("submit", **args)
        held = [str(conn.call("submit", **args)["id"]) for _ in range(cancels)]
        done = conn.call("submit", **request_args({"gpus": "0"}, ["true"]))["id"]
        conn.call("wait", ids=[str(done)])
    return {"done": str(done), "held": held}


def main() -> int:
    opts, rounds, warmup = round_options(__doc__)
    gq = gq_script()
    # As installed: pip compiles gq's bytecode, which an editable checkout under
    # PYTHONDONTWRITEBYTECODE never gets (each command would compile every module it imports).
    compileall.compile_dir(os.path.dirname(gq_package.__file__), quiet=1)
    cpus = os.cpu_count() or 1
    with TempDaemon(cpus, "2x80G", prepare=partial(add_ended_jobs, count=100)) as small, \
            TempDaemon(cpus, "2x80G", prepare=partial(add_ended_jobs, count=10_000)) as big:
        jobs = prepare(small, rounds + warmup)
        prepare(big, 0)
        s, b = small.env, big.env
        commands = {
            "python -c pass": lambda i: ([sys.executable, "-c", "pass"], s),
            "ls": lambda i: ([gq, "ls"], s),
            "ls (10,000 ended)": lambda i: ([gq, "ls"], b),
            "show": lambda i: ([gq, "show", jobs["done"]], s),
            "why": lambda i: ([gq, "why", jobs["done"]], s),
            "gpus": lambda i: ([gq, "gpus"], s),
            "cancel": lambda i: ([gq, "cancel", jobs["held"][i]], s),
            "submit": lambda i: ([gq, "submit", "--hold", "-g", "0", "--", "true"], s),
            "ls --all (10,000 ended)": lambda i: ([gq, "ls", "--all"], b),
            "logs": lambda i: ([gq, "logs", jobs["done"]], s),
            "wait": lambda i: ([gq, "wait", jobs["done"]], s),
            "offenders": lambda i: ([gq, "offenders"], s),
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for i in range(warmup + rounds):
            for name, make in commands.items():
                t = time_command(*make(i))
                if i >= warmup:
                    times[name].append(t)
    ms = {name: statistics.median(ts) * 1e3 for name, ts in times.items()}
    base = ms["python -c pass"]
    ratios = {name: ms[name] / base for name in ms}
    history = ms["ls (10,000 ended)"] / ms["ls"]
    figures = {**machine(), "rounds": rounds, "warmup": warmup,
               "load_before": os.getloadavg()[0],
               "ms": {k: round(v, 2) for k, v in ms.items()},
               "ratios": {k: round(v, 2) for k, v in ratios.items()},
               "history_ratio": round(history, 3), "targets": TARGETS,
               "history_target": HISTORY_TARGET}
    if opts.json:
        print(json.dumps(figures))
        return 0
    print(f"gq CLI benchmark, {figures['date']}; python {figures['python']}; "
          f"{figures['cores']} cores; load average {os.getloadavg()[0]:.2f}")
    rows = [(f"medians of {rounds} interleaved rounds after {warmup} warm-up", "", "")]
    for name in commands:
        target = TARGETS.get(name)
        note = (f"{ratios[name]:.2f}x  target: at most {target:g}x  "
                f"{verdict(ratios[name] <= target)}" if target else f"{ratios[name]:.2f}x")
        rows.append((f"gq {name}" if name != "python -c pass" else name,
                     f"{ms[name]:.1f} ms", "" if name == "python -c pass" else note))
    rows.append(("gq ls, 10,000 ended jobs against 100", f"{history:.2f}x",
                 f"target: at most {HISTORY_TARGET:g}x  {verdict(history <= HISTORY_TARGET)}"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
