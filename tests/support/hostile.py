"""Helpers of the hostile-conditions suite: flood clients, looks into a daemon's process and
database from outside."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("flood_worker.py")


def start_flood(host, clients: int, how_many: str | int, *submit_args: str) -> list:
    """`clients` processes each submitting `how_many` jobs (or `--until FILE`) at once."""
    count = how_many.split() if isinstance(how_many, str) else [str(how_many)]
    return [
        subprocess.Popen([sys.executable, str(WORKER), *count, *submit_args], env=host.env,
                         cwd=host.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for _ in range(clients)
    ]


def collect(procs: list, timeout: float = 300) -> list[tuple[int, list[int], str]]:
    """(exit code, acknowledged ids in order, stderr) of each flood client."""
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        out.append((proc.returncode, [int(x) for x in stdout.split()], stderr))
    return out


def integrity_check(db: Path) -> list[str]:
    """PRAGMA integrity_check of a database file, read-only (a running daemon may hold it)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def db_jobs(db: Path) -> dict[int, dict]:
    """Every job row of a database file, with the events that say it was submitted."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        jobs = {r["id"]: dict(r) for r in conn.execute(
            "SELECT id, state, command, array_id FROM jobs")}
        for job in jobs.values():  # an array's elements store what they share once, in the
            if job["command"] == "null" and job["array_id"] in jobs:  # first one's row
                job["command"] = jobs[job["array_id"]]["command"]
        for (job_id,) in conn.execute(
                "SELECT job_id FROM events WHERE detail = 'submitted'"):
            jobs[job_id]["submitted_event"] = True
        return jobs
    finally:
        conn.close()


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))
