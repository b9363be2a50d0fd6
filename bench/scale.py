"""A lab's busiest day (issue #38): how `gq ls`, `gq ls --all`, `gq show`, `gq why`, a third
client's ping while another lists, and the daemon's memory grow with the jobs waiting and the
jobs that ended today, as ratios against the same daemon when it was empty, measured in the
same run, with Python's own start (`python -c pass`) printed beside each.

One daemon grows through the levels. Its waiting jobs are arrays of `true` held behind a job
that holds the only card (submitted through the real daemon, 10,000 a submit). Its ended jobs
ran for real (arrays of `true` on 32 CPU slots) up to --real; beyond, they are written through
the store's own API (gq/store, as the daemon writes an array) while the daemon is stopped: the
output says how many of each. All of them are the benchmark user's, who lists: the worst case
of the default `gq ls`, which lists the caller's recently ended jobs (a user daemon serves only
its owner; other users' waiting jobs cost a listing the same, from the same index).

    python bench/scale.py [--levels 1k,10k] [--real 10000] [--rounds 10] [--json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import pwd
import statistics
import subprocess
import sys
import threading
import time

import psutil
from _harness import TempDaemon, gq_script, machine, print_table, time_command, verdict

import gq as gq_package
from gq.cli.listing import PAGE, TABLE
from gq.cli.submit_args import request_args
from gq.model import ArrayPart, Job, JobState
from gq.store import Store

LEVELS = {"0.1k": (100, 1_000), "1k": (1_000, 10_000), "10k": (10_000, 100_000), "100k": (100_000, 1_000_000)}
ARRAY = 10_000  # elements a submit (the daemon's max_submit_jobs)
SLOTS = 32  # CPU slots for the real ended jobs
CONFIG = '[daemon]\nshow_ended = "1d"\n'
TARGET_RATIO, TARGET_ALL, TARGET_PING, TARGET_RSS, TARGET_PER_JOB = 2.0, 3.0, 0.050, 150e6, 2048


class Daemon(TempDaemon):
    """A TempDaemon that can be stopped and started again on the same GQ_HOME."""

    def stop(self) -> None:
        with self.connect() as conn:
            conn.call("shutdown")
        self.proc.wait(timeout=60)

    def start(self) -> None:
        from gq.paths import daemon_log

        with open(daemon_log(self.home), "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "gq", "daemon", "run"],
                                         env=self.env, cwd=self.home, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)
        self._wait_ready()

    def rss(self) -> int:
        return psutil.Process(self.proc.pid).memory_info().rss


def add_waiting(daemon: Daemon, count: int) -> int:
    """`count` more jobs waiting for the card (arrays of up to ARRAY); the last one's id."""
    args = request_args({"gpus": "1"}, ["true"])
    last = 0
    with daemon.connect(timeout=600) as conn:
        while count > 0:
            n = min(count, ARRAY)
            last = conn.call("submit", **args, array={"indices": list(range(n)),
                                                     "limit": None})["id"] + n - 1
            count -= n
    return last


def run_ended(daemon: Daemon, count: int) -> None:
    """`count` jobs of `true` that really run (CPU-only, SLOTS at once) and end."""
    args = request_args({"gpus": "0"}, ["true"])
    with daemon.connect(timeout=3600) as conn:
        while count > 0:
            n = min(count, ARRAY)
            first = conn.call("submit", **args, array={"indices": list(range(n)),
                                                      "limit": None})["id"]
            conn.call("wait", ids=[str(first)])  # the array's id: all of its elements
            count -= n


def write_ended(home: str, count: int) -> None:
    """`count` jobs of `true` that ended in the last 12 hours, written as arrays through the
    store's API (no daemon runs on the home meanwhile)."""
    store = Store(os.path.join(home, "gq.db"))
    user, uid = pwd.getpwuid(os.getuid()).pw_name, os.getuid()
    now = time.time()
    with store.relaxed():
        for at in range(0, count, ARRAY):
            n = min(ARRAY, count - at)
            ended = now - 43_200 + 43_200 * at / count
            jobs = [Job(id=0, user=user, uid=uid, command=["true"], cwd=home, name="true",
                        state=JobState.COMPLETED, gpus=0, submitted_at=ended - 2,
                        started_at=ended - 1, ended_at=ended, exit_code=0, host="bench",
                        array=ArrayPart(0, i, n, None, {})) for i in range(n)]
            store.insert_array(jobs, ended - 2)
    store.close()


def first_page(argv: list[str], env: dict) -> float:
    """Seconds until `argv` has written its first output (its first page, block-buffered)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    proc.stdout.read(1)
    elapsed = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return elapsed


def pings_while_listing(daemon: Daemon, pings: int = 40) -> dict:
    """A third client's ping latency (median, max) while another lists every job, page after
    page (as `gq ls --all` asks them), over and over."""
    stop = threading.Event()

    def lister() -> None:
        with daemon.connect(timeout=600) as conn:
            while not stop.is_set():
                after = None
                while not stop.is_set():
                    answer = conn.call("list", all=True, columns=TABLE, page=PAGE, after=after)
                    if (after := answer["next"]) is None:
                        break

    thread = threading.Thread(target=lister, daemon=True)
    thread.start()
    times = []
    try:
        with daemon.connect() as conn:
            for _ in range(pings):
                time.sleep(0.02)
                start = time.perf_counter()
                conn.call("ping")
                times.append(time.perf_counter() - start)
    finally:
        stop.set()
        thread.join(timeout=120)
    return {"median": statistics.median(times), "max": max(times)}


def measure(busy: Daemon, empty: Daemon, gq: str, ids: dict, rounds: int) -> dict:
    """Median seconds of each command on the busy daemon and on the empty one, and of
    python -c pass, in interleaved rounds (so that the machine's load falls on all alike);
    the first page of --all; a ping while another lists, on each; the busy daemon's RSS."""
    def argv(name: str, daemon: Daemon) -> list[str]:
        job = ids["job"] if daemon is busy else ids["empty_job"]
        return {"ls": [gq, "ls"], "show": [gq, "show", job], "why": [gq, "why", job],
                "ls --all": [gq, "ls", "--all", "--json"]}[name]

    times: dict[str, list[float]] = {}
    for i in range(rounds + 1):  # the first round warms up
        for name in ("python", "ls", "ls --all", "show", "why"):
            for daemon in ((empty,) if name == "python" else (empty, busy)):
                key = "python" if name == "python" else (
                    f"{name}@{'busy' if daemon is busy else 'empty'}")
                if name == "python":
                    t = time_command([sys.executable, "-c", "pass"], empty.env)
                elif name == "ls --all":
                    t = first_page(argv(name, daemon), daemon.env)
                else:
                    t = time_command(argv(name, daemon), daemon.env)
                if i:
                    times.setdefault(key, []).append(t)
    out = {k: statistics.median(v) for k, v in times.items()}
    out["ping@empty"] = pings_while_listing(empty)
    out["ping@busy"] = pings_while_listing(busy)
    out["rss"] = busy.rss()
    out["rss@empty"] = empty.rss()
    return out


def grow(daemon: Daemon, empty: Daemon, gq: str, ids: dict, opts, results: dict) -> None:
    """Each level: real ended jobs, written ones, waiting ones; then measured against the
    empty daemon."""
    waiting, ran, written = 1, 0, 0
    for name in opts.levels.split(","):
        want_waiting, want_ended = LEVELS[name]
        real = max(min(want_ended, opts.real) - ran, 0)
        run_ended(daemon, real)
        ran += real
        if want_ended > ran + written:
            daemon.stop()
            write_ended(daemon.home, want_ended - ran - written)
            written = want_ended - ran
            daemon.start()
        before = daemon.rss()
        add_waiting(daemon, want_waiting - waiting)
        level = measure(daemon, empty, gq, ids, opts.rounds)
        level.update(name=name, waiting=want_waiting, ended_real=ran, ended_written=written,
                     per_waiting=(level["rss"] - before) / (want_waiting - waiting),
                     rss_before_waiting=before)
        waiting = want_waiting
        results["levels"].append(level)
        print(f"bench: level {name} measured", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1k,10k,100k", help="of " + ", ".join(LEVELS))
    parser.add_argument("--real", type=int, default=10_000,
                        help="ended jobs that really run, at most (the rest are written)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    gq = gq_script()
    compileall.compile_dir(os.path.dirname(gq_package.__file__), quiet=1)
    results = {"machine": machine(), "levels": []}
    with Daemon(SLOTS, "1x80G", config=CONFIG) as daemon, \
            Daemon(SLOTS, "1x80G", config=CONFIG) as empty:
        blockers, ids = [], {}
        for d in (daemon, empty):  # the same card held, one job waiting for it
            with d.connect() as conn:
                blockers.append((d, conn.call("submit", **request_args(
                    {"gpus": "1"}, ["sleep", "86400"]))["id"]))
                job = conn.call("submit", **request_args({"gpus": "1"}, ["true"]))["id"]
            ids["job" if d is daemon else "empty_job"] = str(job)
        try:
            grow(daemon, empty, gq, ids, opts, results)
        finally:  # jobs outlive their daemon: these must not
            for d, blocker in blockers:
                with d.connect() as conn:
                    conn.call("cancel", ids=[str(blocker)])
                    conn.call("wait", ids=[str(blocker)])
    if opts.json:
        print(json.dumps(results, indent=2))
        return 0
    return report(results)


def report(results: dict) -> int:
    ok = True
    rows = []
    for level in results["levels"]:
        py = level["python"]
        rows.append((f"{level['waiting']:,} waiting, {level['ended_real']:,} ended (run) + "
                     f"{level['ended_written']:,} ended (written through the store), against "
                     f"the empty daemon; python -c pass {py * 1e3:.1f} ms", "", ""))
        for key, target in (("ls", TARGET_RATIO), ("ls --all", TARGET_ALL),
                            ("show", TARGET_RATIO), ("why", TARGET_RATIO)):
            busy, empty = level[f"{key}@busy"], level[f"{key}@empty"]
            ratio = busy / empty
            ok &= ratio <= target
            first = " (first page)" if key == "ls --all" else ""
            rows.append((f"gq {key}{first}", f"{ratio:.2f}x empty",
                         f"{busy * 1e3:.1f} ms against {empty * 1e3:.1f} ms; "
                         f"{busy / py:.2f}x python; target <= {target}x: "
                         f"{verdict(ratio <= target)}"))
        ping, quiet = level["ping@busy"], level["ping@empty"]
        ok &= ping["max"] <= TARGET_PING
        rows.append(("ping while another lists", f"{ping['max'] * 1e3:.1f} ms",
                     f"max (median {ping['median'] * 1e3:.1f} ms; empty daemon: max "
                     f"{quiet['max'] * 1e3:.1f}, median {quiet['median'] * 1e3:.1f}); "
                     f"target <= 50 ms: {verdict(ping['max'] <= TARGET_PING)}"))
        per_job = level["per_waiting"]
        rss_ok = level["rss"] < TARGET_RSS and per_job < TARGET_PER_JOB
        ok &= rss_ok
        rows.append(("daemon RSS", f"{level['rss'] / 1e6:.0f} MB",
                     f"empty daemon {level['rss@empty'] / 1e6:.0f} MB; {per_job:,.0f} B per "
                     f"job added to the queue; target < 150 MB, < 2 kB a job: "
                     f"{verdict(rss_ok)}"))
    print(f"gq scale benchmark, {results['machine']}")
    print_table(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
