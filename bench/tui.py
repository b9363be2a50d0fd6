"""Benchmark `gq top`'s refresh: applying a snapshot of 5,000 jobs on 16 cards against 100 jobs."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine, print_table, verdict  # noqa: E402

from gq.tui.app import make_app  # noqa: E402
from gq.tui.snapshot import TopSnapshot, host_snapshot  # noqa: E402
from gq.tui.source import StaticSource  # noqa: E402
from gq.units import iso  # noqa: E402

TARGET_RATIO = 10.0  # a refresh of 5,000 jobs at most 10x one of 100
CARDS = 16
G = 1 << 30
USERS = ["ann", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
SIZE = (160, 50)


def replies(jobs: int, now: float, round_: int) -> dict:
    """What a busy 16-card host's daemon answers: 3 jobs per card running, the rest waiting.
    `round_` changes the data a little, as a second of a real queue does."""
    running = min(jobs, 3 * CARDS)
    listed, on_card = [], {c: [] for c in range(CARDS)}
    for i in range(jobs):
        job_id = 1000 + i
        user = USERS[i % len(USERS)]
        card = i % CARDS
        state = "running" if i < running else ("held" if i % 50 == 7 else "pending")
        mem = (10 + i % 3 * 5) * G
        listed.append({
            "id": job_id, "name": f"job-{i % 97}", "user": user, "host": "bench",
            "state": state, "priority": ("high", "normal", "low")[i % 3], "gpus": 1, "mem": mem,
            "cpus": 2, "gpu_ids": [card] if state == "running" else [],
            "reason": None if state == "running" else ("Resources", "Priority")[
                (i + round_) % 2], "submitted_at": iso(now - 3600 - i),
            "started_at": iso(now - 600 - i) if state == "running" else None,
            "expected_start": None, "array": None,
        })
        if state == "running":
            on_card[card].append({"id": job_id, "user": user, "name": "x", "mem": mem,
                                  "used": mem // 2 + round_ * (1 << 20), "whole_card": False,
                                  "state": "running"})
    gpus = [{"index": c, "name": "NVIDIA H100 80GB HBM3", "memory_total": 80 * G,
             "memory_used": sum(j["used"] for j in on_card[c]), "utilization": (c * 7 + round_)
             % 100, "simulated": True, "jobs": on_card[c], "external_used": G}
            for c in range(CARDS)]
    points = [{"at": iso(now - 5 * k), "gpu": c, "utilization": (k * 13 + c) % 100}
              for k in range(60) for c in range(CARDS)]
    offenders = [{"id": k, "kind": "idle", "job_id": 1000 + k, "user": "ann", "pid": None,
                  "gpus": [k], "since": iso(now - 900), "evidence": "mean utilisation 2%",
                  "suggestion": "gq cancel", "action": "report"} for k in range(3)]
    return {"ping": {"host": "bench", "backend": "sim", "user": "ann"}, "jobs": listed,
            "gpus": gpus, "offenders": offenders, "samples": {"points": points}}


def build(data: dict, now: float) -> TopSnapshot:
    return TopSnapshot((host_snapshot("bench", now, **data),), now)


def redraw(app) -> None:
    """What the screen does next with the refreshed widgets: lay them out, draw every line."""
    screen = app.screen
    screen._refresh_layout(screen.size)
    screen._compositor.render_full_update()


async def measure(rounds: int) -> dict[int, dict[str, list[float]]]:
    now = time.time()
    sizes = (100, 5000)
    data = {n: [replies(n, now, r) for r in range(2)] for n in sizes}
    times: dict[int, dict[str, list[float]]] = {n: {"build": [], "apply": []} for n in sizes}
    app = make_app([StaticSource(build(data[100][0], now).hosts[0])], poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for r in range(rounds + 2):  # interleaved; the first two rounds warm up
            for n in sizes:
                began = time.perf_counter()
                snap = build(data[n][r % 2], now + r)
                built = time.perf_counter()
                app._apply(snap, None, None)
                redraw(app)
                done = time.perf_counter()
                await pilot.pause()  # what is left for the event loop, untimed
                if r >= 2:
                    times[n]["build"].append(built - began)
                    times[n]["apply"].append(done - built)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 rounds instead of 40")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    opts = parser.parse_args()
    times = asyncio.run(measure(10 if opts.quick else 40))
    med = {n: {k: statistics.median(v) * 1000 for k, v in t.items()} for n, t in times.items()}
    ratio = med[5000]["apply"] / med[100]["apply"]
    figures = {"machine": machine(), "cards": CARDS, "terminal": list(SIZE),
               "apply_ms": {str(n): round(m["apply"], 2) for n, m in med.items()},
               "build_ms": {str(n): round(m["build"], 2) for n, m in med.items()},
               "ratio": round(ratio, 2), "target_ratio": TARGET_RATIO}
    if opts.json:
        print(json.dumps(figures, indent=2))
    else:
        print_table([
            (f"gq top refresh, {CARDS} cards, {SIZE[0]}x{SIZE[1]} terminal (median ms)", "", ""),
            ("apply + redraw, 100 jobs", f"{med[100]['apply']:.2f}", "in the UI thread"),
            ("apply + redraw, 5,000 jobs", f"{med[5000]['apply']:.2f}", ""),
            ("ratio", f"{ratio:.2f}x",
             f"target <= {TARGET_RATIO:g}x: {verdict(ratio <= TARGET_RATIO)}"),
            ("build snapshot, 100 jobs", f"{med[100]['build']:.2f}", "in the poller's thread"),
            ("build snapshot, 5,000 jobs", f"{med[5000]['build']:.2f}", ""),
        ])
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
