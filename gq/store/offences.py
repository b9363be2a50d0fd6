"""Offences in the store: jobs and processes found wasting cards, and what was done about them."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from gq.store.tallies import add as tally


class Offences:
    def __init__(self, db: Database):
        self.db = db

    def open(self, kind: str, at: float, evidence: str, figures: dict[str, Any], action: str,
             job_id: int | None = None, pid: int | None = None, card: int | None = None,
             user: str | None = None) -> int:
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO offences (kind, job_id, pid, card, user, first_seen, last_seen, "
                "evidence, figures, action) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [kind, job_id, pid, card, user, at, at, evidence, json.dumps(figures), action])
            tally(self.db.conn, "offences", label=kind)
        return int(cursor.lastrowid)

    def seen(self, offence_id: int, at: float, evidence: str, figures: dict[str, Any]) -> None:
        with self.db.atomic():
            self.db.execute("UPDATE offences SET last_seen = ?, evidence = ?, figures = ? "
                            "WHERE id = ?", [at, evidence, json.dumps(figures), offence_id])

    def mark(self, offence_id: int, **fields: Any) -> None:
        """Set notified_at, acted, acted_at or ended_at."""
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self.db.atomic():
            self.db.execute(f"UPDATE offences SET {cols} WHERE id = ?",
                            [*fields.values(), offence_id])

    def still_open(self) -> list[dict[str, Any]]:
        return [_decoded(r) for r in self.db.query(
            "SELECT * FROM offences WHERE ended_at IS NULL ORDER BY id")]

    def since(self, at: float, until: float | None = None) -> list[dict[str, Any]]:
        """Every offence that went on at some point in [at, until), oldest first."""
        return [_decoded(r) for r in self.db.query(
            "SELECT * FROM offences WHERE (last_seen >= ? OR ended_at IS NULL) AND "
            "first_seen < ? ORDER BY id", [at, float("inf") if until is None else until])]


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    row["figures"] = json.loads(row["figures"])
    return row
