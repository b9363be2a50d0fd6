"""Benchmark `gq run`: `gq run -- true` to its exit on an idle host against `python -c pass` in
the same run; and, for a `gq run` waiting behind a busy card, the time from the card freeing to
the job's first output on the caller's stdout."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from _harness import TempDaemon, gq_script, interleaved, machine, print_table, round_options, verdict

from gq.cli.submit_args import request_args

TARGET_RATIO = 3.0  # gq run -- true at most 3x a bare interpreter start
TARGET_FIRST_OUTPUT = 0.5  # seconds from a card freeing to a waiting run's first output


def wait_until(predicate, timeout: float = 30.0, what: str = "a condition"):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)
    return value


def first_output(daemon: TempDaemon, gq: str) -> float:
    """One round: a job holds the only card until its FIFO is closed; a `gq run -- echo`
    waits behind it; the seconds from closing the FIFO (the blocker exits at once) to the
    run's line arriving on its stdout."""
    fifo = os.path.join(daemon.home, f"fifo-{time.monotonic_ns()}")
    os.mkfifo(fifo)
    with daemon.connect() as conn:
        blocker = conn.call("submit", **request_args({}, ["cat", fifo]))["id"]
        wait_until(lambda: conn.call("show", id=str(blocker))["state"] == "running",
                   what="the blocker to run")
        writer = os.open(fifo, os.O_WRONLY)  # cat has it open: the blocker has begun
        run = subprocess.Popen([gq, "run", "--", "echo", "out"], env=daemon.env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: any(j["reason"] == "Resources" for j in conn.call(
                "list", states=["pending"])["jobs"]), what="the run to wait")
            freed = time.perf_counter()
            os.close(writer)
            line = run.stdout.readline()
            seen = time.perf_counter() - freed
            if line != b"out\n" or run.wait(timeout=30) != 0:
                raise RuntimeError(f"gq run -- echo out printed {line!r}, exit {run.returncode}")
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    return seen


def main() -> int:
    opts, rounds, warmup = round_options(__doc__)
    gq = gq_script()
    with TempDaemon(os.cpu_count() or 1) as daemon:
        medians = interleaved({"run": [gq, "run", "--", "true"],
                               "python": [sys.executable, "-c", "pass"]},
                              daemon.env, rounds, warmup)
        waits = [first_output(daemon, gq) for _ in range(max(5, rounds // 4) + 1)][1:]
    ms = {k: v * 1e3 for k, v in medians.items()}
    ratio = ms["run"] / ms["python"]
    first = statistics.median(waits)
    figures = {**machine(), "rounds": rounds, "warmup": warmup,
               "gq_run_true_ms": round(ms["run"], 2), "python_pass_ms": round(ms["python"], 2),
               "ratio": round(ratio, 2), "target_ratio": TARGET_RATIO,
               "first_output_s": round(first, 3), "first_output_max_s": round(max(waits), 3),
               "first_output_rounds": len(waits), "target_first_output_s": TARGET_FIRST_OUTPUT}
    if opts.json:
        print(json.dumps(figures))
        return 0
    print(f"gq run benchmark, {figures['date']}; python {figures['python']}; "
          f"{figures['cores']} cores; one simulated 80G card")
    print_table([
        (f"medians of {rounds} interleaved rounds after {warmup} warm-up", "", ""),
        ("gq run -- true (idle host)", f"{ms['run']:.1f} ms", "submit, start, attach, exit"),
        ("python -c pass", f"{ms['python']:.1f} ms", "the baseline, same run"),
        ("ratio", f"{ratio:.2f}x",
         f"target: at most {TARGET_RATIO:g}x  {verdict(ratio <= TARGET_RATIO)}"),
        (f"a waiting gq run, median of {len(waits)} after 1 warm-up", "", ""),
        ("card freed -> first output", f"{first * 1e3:.0f} ms",
         f"max {max(waits) * 1e3:.0f} ms; target: at most {TARGET_FIRST_OUTPUT * 1e3:.0f} ms  "
         f"{verdict(first <= TARGET_FIRST_OUTPUT)}"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
