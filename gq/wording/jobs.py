"""How a job reads in a table row: its time, its cards, its state's detail. Shared by the CLI and
`gq top`; plain functions of the protocol's job objects (gq/protocol/shapes.py JobView)."""

from __future__ import annotations

import time
from typing import Any

from gq.units import format_duration, format_size, parse_iso


def gpus_text(job: dict) -> str:
    """'2', or an elastic range '2-4', or what a running one holds, '3 (2-4)'."""
    if not job.get("gpus_max"):
        return str(job["gpus"])
    asked = f"{job['gpus']}-{job['gpus_max']}"
    held = job.get("gpu_ids") if job["state"] in ("running", "preempting") else None
    return f"{len(held)} ({asked})" if held else asked


def job_time(job: dict[str, Any], now: float | None = None) -> str:
    """Running: time so far; ended: how long it ran; pending: how long it has waited."""
    now = time.time() if now is None else now
    started, ended = job["started_at"], job["ended_at"]
    if started is not None:
        return format_duration((_epoch(ended) or now) - _epoch(started))
    if ended is not None:
        return "-"
    return format_duration(now - _epoch(job["submitted_at"]))


def _epoch(when: str | float | None) -> float | None:
    """A time as the daemon sends it: ISO-8601, or epoch seconds in `gq ls`'s columns."""
    return parse_iso(when) if isinstance(when, str) else when


def job_rows(
    jobs: list[dict[str, Any]], with_start: bool = False
) -> tuple[list[str], list[list[str]]]:
    headers = ["ID", "NAME", "USER", "STATE", "PRI", "GPUS", "MEM", "CPUS", "TIME", "GPU_IDS/REASON"]
    if with_start:
        headers.insert(-1, "EXPECTED_START")
    rows = []
    now = time.time()  # one now for the table
    for j in jobs:
        if j["state"] in ("pending", "held"):
            where = j["reason"] or ""
        elif j["state"] in ("running", "preempting"):
            # a Slurm job's cards are Slurm's to know: its node(s), as squeue's NODELIST
            where = (",".join(str(i) for i in j["gpu_ids"])
                     or (j.get("slurm") or {}).get("nodes") or "cpu")
        else:
            where = f"exit {j['exit_code']}" if j["exit_code"] is not None else (j["reason"] or "")
            if j.get("failure"):  # why it failed (docs/triage.md)
                where = f"{where}: {j['failure']}" if where else j["failure"]
        rows.append([
            str(j["id"]), j["name"][:24], j["user"], j["state"],
            "interactive" if j.get("interactive") else j["priority"],
            gpus_text(j) if j.get("gpus_max") else str(j["gpus"]),
            format_size(j["mem"]) if j["mem"] else ("whole" if j["gpus"] else "-"),
            str(j["cpus"]), job_time(j, now), where,
        ])
        if with_start:
            rows[-1].insert(-1, (j.get("expected_start") or "-").replace("T", " "))
    return headers, rows


def percent(value: int | None) -> str:
    return "N/A" if value is None else f"{value}%"
