"""Forecast error on a live day: a slice of a shared trace run live on a daemon with simulated
cards, time compressed, and how often the last expected start a waiting job was shown came
within 2x of its real wait (issue 39, item 1: target at least 80%).

Each trace job becomes `sh MODEL.sh SECONDS` (a script per model name: what the daemon learns
run times by, as it would a lab's `train.py`), submitted when the trace says, with the --time a
user would declare (`gq sim --time-model modal`: round values 1.5x to 15x the run time); run
time, limits and arrivals are divided by `--compress`. While it runs, the queue is read every
0.1 s (`list`, as `gq ls` reads it) and each waiting job's expected start is kept; the last one
seen before it started is its forecast. A forecast is right when it is within 2x of the real
wait, give or take 10 trace seconds (10/compress live; the list gives whole seconds, so keep
compress at 10 or less for that to mean what it says):

    real / 2 - tol <= forecast wait <= 2 * real + tol

The first expected start each job was shown is scored the same way, for reference (the queue
ahead of it changes meanwhile). Jobs that started at once need no forecast; those that waited without one (past the first
[scheduler] reservations, or behind a job whose end is unknown) are counted apart.
`--no-history` gives each job a script of its own, so that nothing is learned: the plan then
rests on the --time alone (gq before EASY++).

    .venv/bin/python bench/forecast.py [--jobs 100] [--from 0] [--compress 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _harness import TempDaemon, machine, verdict

from gq.sim.time_model import TimeModel
from gq.sim.traces import read_trace

# ../shared/traces beside the repository (or beside the folder of a worktree of it).
TRACES = next((p / "shared" / "traces" for p in Path(__file__).resolve().parents[1:]
               if (p / "shared" / "traces").is_dir()), Path("../shared/traces"))
TARGET = 0.80  # of forecasts within 2x of the real wait
TOLERANCE = 10.0  # trace seconds either way
POLL = 0.1  # s between two readings of the queue
MODEL = TimeModel("modal")


def slice_of(trace: str, first: int, n: int, cards: int) -> list:
    jobs = [j for j in read_trace(TRACES / trace).jobs if j.gpus <= cards]
    return jobs[first:first + n]


def run_live(jobs: list, cards: int, compress: float, history: bool) -> dict:
    """Run the jobs live; returns per job id: submitted_at, started_at, last forecast."""
    work = Path(tempfile.mkdtemp(prefix="gq-forecast-", dir="/tmp"))
    scripts = {}
    for i, tj in enumerate(jobs):
        name = (tj.name or "job") if history else f"job{i}"
        if name not in scripts:
            scripts[name] = work / f"{name}.sh"
            scripts[name].write_text('sleep "$1"\n')
    t_first = jobs[0].submit_time
    forecasts: dict[int, float] = {}  # the last expected start seen of each job
    first: dict[int, float] = {}  # and the first
    ids: dict[int, int] = {}  # our index -> job id
    with TempDaemon(cpus=64, sim_gpus=f"{cards}x80G") as daemon, daemon.connect() as conn:
        began = time.monotonic()
        queued = 0
        while True:
            now = time.monotonic() - began
            while queued < len(jobs) and (jobs[queued].submit_time - t_first) / compress <= now:
                tj = jobs[queued]
                name = (tj.name or "job") if history else f"job{queued}"
                answer = conn.call(
                    "submit", command=["sh", str(scripts[name]), f"{tj.duration / compress:.2f}"],
                    cwd=str(work), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                    gpus=tj.gpus, cpus=1, priority="normal", name=name,
                    time_limit=MODEL.limit(tj.duration, tj.job_id) / compress)
                ids[queued] = answer["id"] if isinstance(answer, dict) else int(answer)
                queued += 1
            answer = conn.call("list", columns=["id", "state"], states=["pending"])
            for job_id, (start, _basis) in answer["starts"].items():
                forecasts[int(job_id)] = start
                first.setdefault(int(job_id), start)
            active = conn.call("list", columns=["id", "state"])["rows"]
            if queued == len(jobs) and not active:
                break
            time.sleep(POLL)
        rows = conn.call("list", all=True, columns=["id", "submitted_at", "started_at"])
    cols = rows["columns"]
    out = {}
    for row in rows["rows"]:
        job = dict(zip(cols, row))
        out[job["id"]] = {"submitted_at": _epoch(job["submitted_at"]),
                          "started_at": _epoch(job["started_at"]),
                          "forecast": forecasts.get(job["id"]),
                          "first_forecast": first.get(job["id"])}
    return out


def _epoch(value) -> float | None:
    if value is None or isinstance(value, (int, float)):
        return value
    from datetime import datetime
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def score(runs: dict, compress: float) -> dict:
    tol = TOLERANCE / compress
    at_once = waited_unknown = 0
    right, ratios, first_right = [], [], []
    for r in runs.values():
        real = r["started_at"] - r["submitted_at"]
        if r["forecast"] is None:
            if real <= 1.0:  # whole seconds: started by the next reading or so
                at_once += 1
            else:
                waited_unknown += 1
            continue
        said = r["forecast"] - r["submitted_at"]
        right.append(real / 2 - tol <= said <= 2 * real + tol)
        early = r["first_forecast"] - r["submitted_at"]
        first_right.append(real / 2 - tol <= early <= 2 * real + tol)
        ratios.append((said + tol) / (real + tol))
    return {"jobs": len(runs), "started_at_once": at_once, "waited_without_forecast":
            waited_unknown, "forecast": len(right),
            "within_2x": round(sum(right) / len(right), 3) if right else None,
            "first_within_2x": round(sum(first_right) / len(first_right), 3) if right else None,
            "median_forecast_over_real": round(statistics.median(ratios), 2) if ratios else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="philly-mix1-a.csv")
    parser.add_argument("--from", dest="first", type=int, default=0, help="first job of the slice")
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--cards", type=int, default=8)
    parser.add_argument("--compress", type=float, default=10.0)
    parser.add_argument("--no-history", action="store_true",
                        help="a script per job: nothing learned, the plan rests on --time")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    jobs = slice_of(opts.trace, opts.first, opts.jobs, opts.cards)
    began = time.monotonic()
    figures = score(run_live(jobs, opts.cards, opts.compress, not opts.no_history),
                    opts.compress)
    figures.update(trace=opts.trace, first=opts.first, cards=opts.cards,
                   compress=opts.compress, learned=not opts.no_history,
                   live_s=round(time.monotonic() - began, 1), machine=machine())
    if opts.json:
        print(json.dumps(figures, indent=2))
        return
    share = figures["within_2x"]
    print(f"{opts.trace} jobs {opts.first}..{opts.first + len(jobs) - 1} on {opts.cards} "
          f"simulated cards, {opts.compress:g}x compressed, "
          f"{'run times learned' if figures['learned'] else 'nothing learned (--time only)'}"
          f": {figures['live_s']:.0f} s live")
    print(f"  {figures['started_at_once']} started at once, {figures['forecast']} waited with "
          f"an expected start, {figures['waited_without_forecast']} without one")
    print(f"  last expected start within 2x of the real wait (+/-{TOLERANCE:g} s): "
          + ("n/a" if share is None else f"{share:.0%}  (target >= {TARGET:.0%}: "
             f"{verdict(share >= TARGET)})")
          + f"; median forecast/real {figures['median_forecast_over_real']}")
    print(f"  (the first expected start each job was shown: {figures['first_within_2x']:.0%} "
          "within 2x)" if figures["first_within_2x"] is not None else "")


if __name__ == "__main__":
    main()
