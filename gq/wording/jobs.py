"""How a job reads in a table row: its time, its cards, its state's detail. Shared by the CLI and
`gq top`; plain functions of the protocol's job objects (gq/protocol/shapes.py JobView)."""

from __future__ import annotations

import time
from typing import Any

from gq.escapes import escape_controls
from gq.states import RUNNING, WAITING
from gq.units import format_duration, format_size, parse_iso


def gpus_text(job: dict) -> str:
    """'2', or an elastic range '2-4', or what a running one holds, '3 (2-4)'."""
    return _gpus(job["gpus"], job.get("gpus_max"), job["state"], job.get("gpu_ids"))


def _gpus(gpus: int, gpus_max: int | None, state: str, gpu_ids: list[int] | None) -> str:
    if not gpus_max:
        return str(gpus)
    asked = f"{gpus}-{gpus_max}"
    held = gpu_ids if state in RUNNING else None
    return f"{len(held)} ({asked})" if held else asked


def job_time(job: dict[str, Any], now: float | None = None) -> str:
    """Running: time so far; ended: how long it ran; pending: how long it has waited."""
    now = time.time() if now is None else now
    return _time(job["submitted_at"], job["started_at"], job["ended_at"], now)


def _time(submitted: str | float, started: str | float | None, ended: str | float | None,
          now: float) -> str:
    # Never below 0: `now` is the daemon's where its answer says it, but a peer's clock (or an
    # older daemon's answer, timed by this host's clock) may run ahead of it.
    if started is not None:
        return format_duration(max(0.0, (_epoch(ended) or now) - _epoch(started)))
    if ended is not None:
        return "-"
    return format_duration(max(0.0, now - _epoch(submitted)))


def _epoch(when: str | float | None) -> float | None:
    """A time as the daemon sends it: ISO-8601, or epoch seconds in `gq ls`'s columns."""
    return parse_iso(when) if isinstance(when, str) else when


HEADERS = ["ID", "NAME", "USER", "STATE", "PRI", "GPUS", "MEM", "CPUS", "TIME", "GPU_IDS/REASON"]
# What a row of `gq ls` is drawn from, in the order `cells` takes them (the daemon's `list`
# columns of these names, gq/daemon/listing.py).
CELL_FIELDS = ("id", "name", "user", "state", "reason", "priority", "interactive", "gpus",
               "gpus_max", "mem", "cpus", "submitted_at", "started_at", "ended_at", "exit_code",
               "gpu_ids", "failure")


def headers(with_start: bool = False) -> list[str]:
    return [*HEADERS[:-1], "EXPECTED_START", HEADERS[-1]] if with_start else list(HEADERS)


def cells(id: int, name: str, user: str, state: str, reason: str | None, priority: str,
          interactive: Any, gpus: int, gpus_max: int | None, mem: int | None, cpus: int,
          submitted_at: Any, started_at: Any, ended_at: Any, exit_code: int | None,
          gpu_ids: list[int] | None, failure: str | None, now: float,
          nodes: str | None = None) -> list[str]:
    """A job's row of `gq ls` (HEADERS) from its CELL_FIELDS; `nodes`: a Slurm job's."""
    if state in WAITING:
        where = reason or ""
    elif state in RUNNING:
        # a Slurm job's cards are Slurm's to know: its node(s), as squeue's NODELIST
        where = ",".join(str(i) for i in gpu_ids or ()) or nodes or "cpu"
    else:
        where = f"exit {exit_code}" if exit_code is not None else (reason or "")
        if failure:  # why it failed (docs/triage.md)
            where = f"{where}: {failure}" if where else failure
    if not (name + user + where).isprintable():  # a user's text: escaped (gq/escapes.py)
        name, user, where = escape_controls(name), escape_controls(user), escape_controls(where)
    return [
        str(id), name[:24], user, state, "interactive" if interactive else priority,
        _gpus(gpus, gpus_max, state, gpu_ids) if gpus_max else str(gpus),
        format_size(mem) if mem else ("whole" if gpus else "-"),
        str(cpus), _time(submitted_at, started_at, ended_at, now), where,
    ]


def start_cell(expected_start: str | None) -> str:
    return (expected_start or "-").replace("T", " ")


def job_rows(
    jobs: list[dict[str, Any]], with_start: bool = False, now: float | None = None
) -> tuple[list[str], list[list[str]]]:
    """The headers of `gq ls`'s table and each job's cells; `now`: the time the table is as of."""
    now = time.time() if now is None else now  # one now for the table
    rows = []
    for j in jobs:
        row = cells(*[j.get(f) for f in CELL_FIELDS], now=now,
                    nodes=(j.get("slurm") or {}).get("nodes"))
        if with_start:
            row.insert(-1, start_cell(j.get("expected_start")))
        rows.append(row)
    return headers(with_start), rows


def percent(value: int | None) -> str:
    return "N/A" if value is None else f"{value}%"
