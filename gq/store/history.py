"""What the lab's numbers are made of: ended runs, waits and outcomes, read from the store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlite_utils import Database


class History:
    def __init__(self, db: Database):
        self.db = db

    def runs_of_command(self, cmd_key: str, limit: int) -> list[dict[str, Any]]:
        """The latest completed runs, with a known peak, of one command in one directory."""
        return list(self.db.query(
            "SELECT job_id, peak_mem, started_at, ended_at FROM runs WHERE cmd_key = ? AND "
            "state = 'completed' AND peak_mem IS NOT NULL ORDER BY ended_at DESC LIMIT ?",
            [cmd_key, limit]))

    def util_of_command(self, cmd_key: str, limit: int) -> float | None:
        """The mean SM utilisation (%) of the latest completed runs of one command in one
        directory that measured it; None without such a run."""
        row = next(self.db.query(
            "SELECT avg(util_mean) AS util FROM (SELECT util_mean FROM runs WHERE cmd_key = ? "
            "AND state = 'completed' AND util_mean IS NOT NULL ORDER BY ended_at DESC LIMIT ?)",
            [cmd_key, limit]), None)
        return None if row is None else row["util"]

    def completed_runs(self, since: float) -> Iterator[dict[str, Any]]:
        """Completed runs that ended since `since`, oldest end first, with their job's command
        (JSON): what run times are learned from (gq/policy/predict.py). Read as they are
        used: months of runs are never all in memory at once."""
        return iter(self.db.query(
            "SELECT r.job_id, r.user, r.gpus, r.started_at, r.ended_at, j.command FROM runs r "
            "JOIN jobs j ON j.id = r.job_id WHERE r.ended_at >= ? AND r.state = 'completed' "
            "ORDER BY r.ended_at", [since]))

    def learned_mem_runs(self, since: float, until: float) -> list[dict[str, Any]]:
        """Runs ended in [since, until) of jobs whose --mem was learned ([scheduler]
        learn_mem): state, peak_mem, and the job's mem."""
        return list(self.db.query(
            "SELECT r.state, r.peak_mem, j.mem FROM runs r JOIN jobs j ON j.id = r.job_id "
            "WHERE r.ended_at >= ? AND r.ended_at < ? AND EXISTS (SELECT 1 FROM events e "
            "WHERE e.job_id = r.job_id AND e.detail LIKE 'memory learned: %')", [since, until]))

    def runs_between(self, since: float, until: float) -> list[dict[str, Any]]:
        """Ended runs that overlap [since, until)."""
        return list(self.db.query(
            "SELECT * FROM runs WHERE ended_at >= ? AND started_at < ? ORDER BY id",
            [since, until]))

    def first_starts(self, since: float, until: float) -> list[dict[str, Any]]:
        """Jobs whose first run began in [since, until): id, priority, submitted_at, pool,
        gpus, first_start. The first run is the earliest recorded one, or the current one."""
        return list(self.db.query(
            """
            SELECT * FROM (
                SELECT j.id, j.priority, j.submitted_at, j.pool, j.gpus,
                       min(coalesce(r.first, j.started_at), coalesce(j.started_at, r.first))
                           AS first_start
                FROM jobs j LEFT JOIN (SELECT job_id, min(started_at) AS first FROM runs
                                       GROUP BY job_id) r ON r.job_id = j.id
            ) WHERE first_start >= ? AND first_start < ? ORDER BY id
            """, [since, until]))

    def ended_by_state(self, since: float, until: float) -> dict[str, int]:
        """How many jobs ended in [since, until), by end state (counted by SQLite: a month
        of a busy lab's jobs is not read into memory for it)."""
        return dict(self.db.execute(
            "SELECT state, count(*) FROM jobs WHERE ended_at >= ? AND ended_at < ? AND state "
            "IN ('completed', 'failed', 'cancelled', 'timeout', 'oom', 'lost') GROUP BY state "
            "ORDER BY state", [since, until]).fetchall())

    def first_activity(self) -> float | None:
        """When this host's store first saw a card sample or a run: where its history begins."""
        row = self.db.execute(
            "SELECT min(x) FROM (SELECT min(t) / 1000.0 AS x FROM card_samples UNION ALL "
            "SELECT min(minute) * 60.0 FROM card_minutes UNION ALL "
            "SELECT min(started_at) FROM runs)").fetchone()
        return row[0]

    def last_run(self, job_id: int) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM runs WHERE job_id = ? ORDER BY id DESC LIMIT 1",
                                  [job_id]))
        return rows[0] if rows else None
