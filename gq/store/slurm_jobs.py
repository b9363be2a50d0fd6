"""The jobs sent to Slurm peers (migration m012): rows of the slurm_jobs table."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database


class SlurmJobs:
    def __init__(self, db: Database):
        self.db = db

    def of(self, peer: str) -> list[dict[str, Any]]:
        """The jobs sent to `peer`: id, command, priority, signal, signal_before, job."""
        rows = self.db.query("SELECT id, command, priority, signal, signal_before, job FROM "
                             "slurm_jobs WHERE peer = ? ORDER BY id", [peer])
        return [{**r, "command": json.loads(r["command"]),
                 "job": None if r["job"] is None else json.loads(r["job"])} for r in rows]

    def save(self, peer: str, jobs: list[dict[str, Any]]) -> None:
        """Add the jobs, or replace what is known of them."""
        with self.db.atomic():
            for job in jobs:
                self.db.execute(
                    "INSERT OR REPLACE INTO slurm_jobs (peer, id, command, priority, signal, "
                    "signal_before, job) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [peer, job["id"], json.dumps(job["command"]), job["priority"],
                     job["signal"], job["signal_before"],
                     None if job["job"] is None else json.dumps(job["job"])])
