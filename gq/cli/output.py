"""Tables and values for people; JSON stays as the daemon sends it."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any, Callable

from gq.units import format_duration, format_size, parse_iso


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))


def table(headers: list[str], rows: list[list[str]],
          paint: Callable[[int, str], str] | None = None) -> str:
    """Columns padded to their widest cell; `paint(column, cell)` may colour a body cell after
    its padding is counted."""
    n = len(headers)
    if paint is None and all(len(row) == n for row in rows):  # 10,000 rows: a call a row
        widths = [max(map(len, column)) for column in zip(headers, *rows)]
        line = "  ".join(f"{{:<{w}}}" for w in widths).format
        return "\n".join([line(*row).rstrip() for row in [headers, *rows]])
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    lines = []
    for i, row in enumerate([headers, *rows]):
        cells = [c.ljust(w) for c, w in zip(row, widths)]
        if paint is not None and i:
            cells = [paint(k, cell) for k, cell in enumerate(cells)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


# An ended job's outcome at a glance, as pueue colours Success and Failed.
_OUTCOME_COLOURS = {"completed": "32", "failed": "31", "oom": "31", "lost": "31",
                    "timeout": "33", "cancelled": "33"}


def colour_wanted() -> bool:
    """On a terminal, unless NO_COLOR is set (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def state_painter(headers: list[str]) -> Callable[[int, str], str] | None:
    """Colours the STATE column's outcome words (an array's counts too), on a terminal."""
    if not colour_wanted() or "STATE" not in headers:
        return None
    column = headers.index("STATE")

    def paint(i: int, cell: str) -> str:
        if i != column:
            return cell
        for word, code in _OUTCOME_COLOURS.items():
            cell = re.sub(rf"\b{word}\b", f"\033[{code}m{word}\033[0m", cell)
        return cell

    return paint


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


def echo_err(message: str) -> None:
    print(message, file=sys.stderr)


def gpus_text(job: dict) -> str:
    """'2', or an elastic range '2-4', or what a running one holds, '3 (2-4)'."""
    if not job.get("gpus_max"):
        return str(job["gpus"])
    asked = f"{job['gpus']}-{job['gpus_max']}"
    held = job.get("gpu_ids") if job["state"] in ("running", "preempting") else None
    return f"{len(held)} ({asked})" if held else asked
