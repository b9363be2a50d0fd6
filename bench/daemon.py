"""Benchmark what a large queue and a long history cost the daemon itself (issue 24):

- held: its CPU over a quiet window with 5,000 held jobs and nothing running, against the
  same daemon empty (target: under 1% of a core);
- top: its CPU while `gq top`'s source polls it once a second (the TUI's poller, headless:
  the `top` operation), over 5,000 queued jobs (pending behind a running one, then held),
  against the same window with no client and with the replies gq top asked for before the
  operation (target: under 5% of a core);
- rss: its resident memory over 10,000 ended jobs (written through the store before it
  starts), after it answered gq ls, gq ls --all, gq ls --all --json, gq show and gq stats;
  the high-water mark, against an empty daemon's (target: under 60 MB).

    python bench/daemon.py [--only held|top|rss] [--window S] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from functools import partial

import psutil
from _harness import TempDaemon, gq_script, machine, print_table, verdict
from _history import add_ended_jobs
from held import cpu_share

from gq.cli.submit_args import request_args
from gq.protocol.ops import every_listed
from gq.tui.source import DaemonSource

HELD_TARGET, TOP_TARGET, RSS_TARGET = 0.01, 0.05, 60 << 20
QUEUED = 5000


def held(window: float) -> dict:
    with TempDaemon(cpus=16, sim_gpus="4x80G") as d:
        proc = psutil.Process(d.proc.pid)
        time.sleep(2)  # start-up done
        empty = cpu_share(proc, window)
        with d.connect() as c:
            c.call("submit", **request_args({"gpus": "0", "hold": True}, ["true"]),
                   array={"indices": list(range(QUEUED)), "limit": None})
        time.sleep(2)  # the submit's own pass done
        return {"empty": empty, "held": cpu_share(proc, window)}


def poll(source: DaemonSource, stop: threading.Event, errors: list) -> None:
    """gq top's poller: a fetch a second."""
    while not stop.is_set():
        snap = source.fetch(time.time())
        if snap.error:
            errors.append(snap.error)
        stop.wait(1.0)


def with_client(proc: psutil.Process, socket: str, window: float, top: bool) -> float:
    source = DaemonSource(socket)
    source._top = top  # False: the replies gq top asked for before the top operation
    stop, errors = threading.Event(), []
    source.fetch(time.time())  # the first, full answer: before the window, as at start-up
    thread = threading.Thread(target=poll, args=(source, stop, errors), daemon=True)
    thread.start()
    try:
        return cpu_share(proc, window)
    finally:
        stop.set()
        thread.join()
        if errors:
            raise RuntimeError(f"gq top's source failed: {errors[0]}")


def top(window: float, held: bool) -> dict:
    """5,000 jobs pending behind a running one (each pass reads them), or held (no pass
    does): the daemon with no client, with gq top, and with gq top as it asked before."""
    with TempDaemon(cpus=16, sim_gpus="1x80G", config='[daemon]\ntick = "1s"\n') as d:
        proc = psutil.Process(d.proc.pid)
        with d.connect() as c:
            running = c.call("submit", **request_args({"gpus": "1"}, ["sleep", "3600"]))["id"]
            c.call("submit", **request_args({"gpus": "1", "hold": held}, ["true"]),
                   array={"indices": list(range(QUEUED)), "limit": None})
            jobs = every_listed(c.call)
        assert len(jobs) == QUEUED + 1 and jobs[0]["id"] == running
        time.sleep(3)  # the passes after the submit done
        quiet = cpu_share(proc, window)
        polled = with_client(proc, d.socket, window, top=True)
        before = with_client(proc, d.socket, window, top=False)
        return {"quiet": quiet, "top": polled, "replies": before}


def rss(env_gq: str) -> dict:
    def status(pid: int) -> dict:
        fields = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(value.split()[0]) << 10
        return fields

    with TempDaemon(cpus=16, sim_gpus="1x80G") as empty:
        time.sleep(1)
        baseline = status(empty.proc.pid)
    with TempDaemon(cpus=16, sim_gpus="1x80G",
                    prepare=partial(add_ended_jobs, count=10_000)) as d:
        at_start = status(d.proc.pid)
        for argv in (["ls"], ["ls", "--all"], ["ls", "--all", "--json"], ["show", "5000"],
                     ["why", "9999"], ["stats", "--since", "30d"]):
            subprocess.run([env_gq, *argv], env=d.env, stdout=subprocess.DEVNULL, check=True)
        after = status(d.proc.pid)
    return {"empty": baseline, "start": at_start, "after": after}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("held", "top", "rss"))
    ap.add_argument("--window", type=float, default=20.0, help="seconds of each CPU window")
    ap.add_argument("--json", action="store_true")
    opts = ap.parse_args()
    wanted = [opts.only] if opts.only else ["held", "top", "rss"]
    figures: dict = {**machine(), "window": opts.window, "load_before": os.getloadavg()[0]}
    if "held" in wanted:
        figures["held"] = held(opts.window)
    if "top" in wanted:
        figures["top"] = top(opts.window, held=False)
        figures["top_held"] = top(opts.window, held=True)
    if "rss" in wanted:
        figures["rss"] = rss(gq_script())
    figures["load_after"] = os.getloadavg()[0]
    if opts.json:
        print(json.dumps(figures))
        return 0
    print(f"gq daemon benchmark, {figures['date']}; python {figures['python']}; "
          f"{figures['cores']} cores; load average {figures['load_before']:.2f} before, "
          f"{figures['load_after']:.2f} after; CPU windows of {opts.window:g} s")
    rows = []
    if "held" in figures:
        h = figures["held"]
        rows += [("daemon CPU, idle", "", ""),
                 ("nothing queued", f"{h['empty']:.2%}", "of a core"),
                 (f"{QUEUED} held, nothing running", f"{h['held']:.2%}",
                  f"target: under {HELD_TARGET:.0%}  {verdict(h['held'] < HELD_TARGET)}")]
    for key, what in (("top", "pending behind a running job"), ("top_held", "held")):
        if key not in figures:
            continue
        t = figures[key]
        rows += [(f"daemon CPU, {QUEUED} queued, {what}", "", ""),
                 ("no client", f"{t['quiet']:.2%}", "of a core: its passes and ticks"),
                 ("gq top open (the top operation, 1/s)", f"{t['top']:.2%}",
                  f"target: under {TOP_TARGET:.0%}  {verdict(t['top'] < TOP_TARGET)}; "
                  f"{t['top'] - t['quiet']:+.2%} for gq top"),
                 ("gq top as before (ping, list, gpus, offenders, samples)",
                  f"{t['replies']:.2%}", f"{t['replies'] - t['quiet']:+.2%} for gq top")]
    if "rss" in figures:
        r = figures["rss"]
        mb = 1 << 20
        rows += [("daemon memory (RSS)", "", ""),
                 ("an empty daemon", f"{r['empty']['VmRSS'] / mb:.1f} MB", ""),
                 ("10,000 ended jobs, at start", f"{r['start']['VmRSS'] / mb:.1f} MB", ""),
                 ("... after ls, ls --all, --json, show, why, stats",
                  f"{r['after']['VmRSS'] / mb:.1f} MB",
                  f"high-water {r['after']['VmHWM'] / mb:.1f} MB; target: under "
                  f"{RSS_TARGET / mb:.0f} MB  {verdict(r['after']['VmHWM'] < RSS_TARGET)}")]
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
