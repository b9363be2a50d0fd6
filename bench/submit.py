"""Benchmark `gq submit` latency against `python -c pass`; the daemon's dispatch rate against
task-spooler's (`tsp -S 2`) in the same run; and the daemon's CPU per job with a short and with
a long queue of waiting jobs."""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import psutil
from _harness import (
    SIM_GPUS, TempDaemon, gq_script, interleaved, machine, print_table, remove_later, verdict,
)

from gq.cli.submit_args import request_args
from gq.protocol.ops import every_listed

SUBMIT_ARGS = ["submit", "--hold", "-g", "0", "--", "true"]  # held: the queue never runs them
TARGET_RATIO = 3.0  # gq submit at most 3x a bare interpreter start
TARGET_RATE = 150.0  # jobs/s, first submit to last completion
TARGET_VS_TSP = 0.5  # gq's end-to-end rate at least half of `tsp -S 2`'s, same run
TARGET_QUEUED = 1.3  # daemon CPU per job with the long queue at most 1.3x that with the short
QUEUED = (100, 5000)  # jobs waiting (for a busy card) while the trivial jobs run
SLOTS = 2  # CPU-only jobs at once: [host] cpus for gq, -S for tsp


def submit_latency(cpus: int, rounds: int, warmup: int) -> dict:
    """Median wall time of a real `gq submit` process and of `python -c pass`, interleaved."""
    commands = {"gq": [gq_script(), *SUBMIT_ARGS], "python": [sys.executable, "-c", "pass"]}
    with TempDaemon(cpus) as daemon:
        medians = interleaved(commands, daemon.env, rounds, warmup)
    gq_ms, py_ms = medians["gq"] * 1e3, medians["python"] * 1e3
    return {"rounds": rounds, "warmup": warmup, "gq_submit_ms": round(gq_ms, 2),
            "python_pass_ms": round(py_ms, 2), "ratio": round(gq_ms / py_ms, 2),
            "target_ratio": TARGET_RATIO}


def wait_all(conn, ids: list[int], part: int = 5000) -> collections.Counter:
    """Block until every job in ids has ended, and count how they ended: `wait` answers with
    the jobs it was asked for, as they ended, a part at a time (no listing of the history)."""
    ended: collections.Counter = collections.Counter()
    for at in range(0, len(ids), part):
        ended.update(j["state"] for j in conn.call("wait", ids=[str(i) for i in ids[at:at + part]]))
    return ended


def dispatch(cpus: int, jobs: int) -> dict:
    """Submit `jobs` CPU-only `true` jobs over one connection; time acks and completions.
    Then `tsp -S 2` runs the same jobs, before and after gq's, for the ratio."""
    tsp_before = tsp_rate(jobs, cpus)
    args = request_args({"gpus": "0"}, ["true"])
    with TempDaemon(cpus) as daemon, daemon.connect(timeout=300) as conn:
        start = time.perf_counter()
        ids = [conn.call("submit", **args)["id"] for _ in range(jobs)]
        acked = time.perf_counter() - start
        states = wait_all(conn, ids)
        done = time.perf_counter() - start
    if states["completed"] != jobs:
        raise RuntimeError(f"not all {jobs} jobs completed: {dict(states)}")
    tsp_after = tsp_rate(jobs, cpus)
    floor = spawn_rate(jobs, cpus)
    rate = jobs / done
    out = {"jobs": jobs, "submit_per_s": round(jobs / acked, 1), "jobs_per_s": round(rate, 1),
           "elapsed_s": round(done, 3), "spawn_floor_per_s": round(floor, 1),
           "vs_floor": round(rate / floor, 3), "target_jobs_per_s": TARGET_RATE}
    if tsp_before is not None and tsp_after is not None:
        tsp = (tsp_before + tsp_after) / 2
        out.update(tsp_per_s=round(tsp, 1), tsp_runs_per_s=[round(tsp_before, 1),
                                                            round(tsp_after, 1)],
                   vs_tsp=round(rate / tsp, 3), target_vs_tsp=TARGET_VS_TSP)
    return out


def tsp_rate(jobs: int, slots: int) -> float | None:
    """Jobs per second of task-spooler (`tsp`, Debian's name for `ts`) with `slots` slots: a
    `tsp true` process per job, from the first submit until every job is finished. None if
    it is not installed."""
    binary = shutil.which("tsp") or shutil.which("ts")
    if binary is None:
        return None
    home = tempfile.mkdtemp(prefix="tsp-", dir="/tmp")  # its socket and output files
    env = {**os.environ, "TS_SOCKET": f"{home}/ts.sock", "TMPDIR": home,
           "TS_MAXFINISHED": str(jobs + 10)}
    env.pop("TS_SAVELIST", None)

    def tsp(*args: str) -> str:
        return subprocess.run([binary, *args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, check=True).stdout

    try:
        tsp("-S", str(slots))
        start = time.perf_counter()
        last = [tsp("true") for _ in range(jobs)][-1].strip()
        subprocess.run([binary, "-w", last], env=env, stdout=subprocess.DEVNULL)
        while True:
            states = [line.split()[1] for line in tsp("-l").splitlines()[1:] if line.strip()]
            if states.count("finished") >= jobs:
                return jobs / (time.perf_counter() - start)
            time.sleep(0.002)
    finally:
        subprocess.run([binary, "-K"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        remove_later(home)


def queued_cpu(waiting: int, jobs: int) -> dict:
    """The daemon's CPU (utime + stime, from /proc) per trivial job while `waiting` jobs wait
    for a busy card: one job holds the only card, `waiting` one-card jobs queue behind it
    (reason Resources; an array, in one submit), then `jobs` CPU-only `true` jobs are
    submitted over one connection and waited for. [host] cpus leaves SLOTS cores for them."""
    config = "[scheduler]\nreservations = 8\n"
    with TempDaemon(SLOTS + 1, config=config) as daemon, \
            daemon.connect(timeout=600) as conn:
        proc = psutil.Process(daemon.proc.pid)
        blocker = conn.call("submit", **request_args({"gpus": "1", "time": "1h"},
                                                     ["sleep", "3600"]))["id"]
        conn.call("submit", **request_args({"gpus": "1"}, ["true"]),
                  array={"indices": list(range(waiting)), "limit": None})
        conn.call("why", id=str(blocker))  # the explaining pass has read the queue
        args = request_args({"gpus": "0"}, ["true"])
        before, start = sum(proc.cpu_times()[:2]), time.perf_counter()
        ids = [conn.call("submit", **args)["id"] for _ in range(jobs)]
        ended = conn.call("wait", ids=[str(i) for i in ids])
        elapsed = time.perf_counter() - start
        cpu = sum(proc.cpu_times()[:2]) - before
        states = collections.Counter(j["state"] for j in ended)
        still = sum(1 for j in every_listed(conn.call, states=["pending"], brief=True)
                    if j["gpus"] == 1)
        conn.call("cancel", ids=[str(blocker)])
        conn.call("wait", ids=[str(blocker)])  # jobs outlive their daemon: this one must not
    if states["completed"] != jobs or still != waiting:
        raise RuntimeError(f"{dict(states)}, {still} of {waiting} still waiting")
    return {"waiting": waiting, "jobs": jobs, "cpu_ms_per_job": round(cpu / jobs * 1e3, 3),
            "jobs_per_s": round(jobs / elapsed, 1)}


def spawn_rate(jobs: int, slots: int) -> float:
    """Baseline: `true` processes per second when Python starts them `slots` at a time."""
    start = time.perf_counter()
    for first in range(0, jobs, slots):
        procs = [subprocess.Popen(["true"]) for _ in range(min(slots, jobs - first))]
        for p in procs:
            p.wait()
    return jobs / (time.perf_counter() - start)


def queued_ratio(jobs: int, waiting: tuple[int, int]) -> dict:
    """queued_cpu with the short and the long queue, and the ratio of their CPU per job."""
    short, long = (queued_cpu(n, jobs) for n in waiting)
    return {"short": short, "long": long, "target_ratio": TARGET_QUEUED,
            "ratio": round(long["cpu_ms_per_job"] / short["cpu_ms_per_job"], 3)}


def report(info: dict, sub: dict, disp: dict, queued: dict) -> None:
    print(f"gq submit benchmark, {info['date']}; python {info['python']}; {info['cores']} cores; "
          f"load {info['load'][0]:.1f} before, {info['load_after'][0]:.1f} after")
    print(f"each part: a fresh daemon, [host] cpus = {SLOTS} (the slots; 1 more in the queued runs, "
          f"for the job holding the card), "
          f"GQ_SIM_GPUS={SIM_GPUS}")
    ratio_ok = sub["ratio"] <= TARGET_RATIO
    rate_ok = disp["jobs_per_s"] >= TARGET_RATE
    tsp_rows = [("tsp -S 2, the same jobs (a `tsp true` each), before and after",
                 f"{disp['tsp_per_s']:.0f} jobs/s",
                 "runs: " + ", ".join(f"{r:.0f}" for r in disp["tsp_runs_per_s"])),
                ("gq / tsp", f"{disp['vs_tsp']:.2f}x",
                 f"target: at least {TARGET_VS_TSP:g}x  {verdict(disp['vs_tsp'] >= TARGET_VS_TSP)}"),
                ] if "vs_tsp" in disp else [("tsp", "absent", "apt-get install task-spooler")]
    short, long = queued["short"], queued["long"]
    queued_rows = [
        (f"daemon CPU per job: {short['jobs']} trivial jobs while one-card jobs wait for the "
         "busy card", "", ""),
        (f"{short['waiting']} waiting", f"{short['cpu_ms_per_job']:.2f} ms",
         f"{short['jobs_per_s']:.0f} jobs/s"),
        (f"{long['waiting']} waiting", f"{long['cpu_ms_per_job']:.2f} ms",
         f"{long['jobs_per_s']:.0f} jobs/s"),
        ("ratio", f"{queued['ratio']:.2f}x",
         f"target: at most {TARGET_QUEUED:g}x  {verdict(queued['ratio'] <= TARGET_QUEUED)}"),
    ]
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
        *tsp_rows,
        (f"baseline: Popen(['true']), {info['daemon_cpus']} at a time",
         f"{disp['spawn_floor_per_s']:.0f} jobs/s", f"gq reaches {disp['vs_floor']:.2f}x of it"),
        *queued_rows,
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 rounds and 200 jobs")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--only", choices=["submit", "dispatch", "queued"],
                        help="run one part (the others are printed as not run)")
    opts = parser.parse_args()
    rounds, warmup, jobs = (10, 2, 200) if opts.quick else (40, 3, 1000)
    waiting = (QUEUED[0], 1000) if opts.quick else QUEUED
    cpus = os.cpu_count() or 1
    info = {**machine(), "daemon_cpus": cpus, "sim_gpus": SIM_GPUS,
            "load": [round(x, 2) for x in os.getloadavg()]}
    part = lambda name, run: run() if opts.only in (None, name) else None  # noqa: E731
    sub = part("submit", lambda: submit_latency(cpus, rounds, warmup))
    disp = part("dispatch", lambda: dispatch(SLOTS, jobs))
    queued = part("queued", lambda: queued_ratio(jobs, waiting))
    info["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if opts.json or opts.only:
        print(json.dumps({**info, "submit": sub, "dispatch": disp, "queued": queued}))
    else:
        report(info, sub, disp, queued)
    return 0


if __name__ == "__main__":
    sys.exit(main())
