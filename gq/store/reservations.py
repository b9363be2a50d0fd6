"""Admin reservations (`gq reserve`): rows of the reservations table."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from gq.store.select import select


class Reservations:
    """Also kept in memory, those not removed: every scheduling pass asks for them, and the
    daemon, the only writer, changes them only through add() and remove()."""

    def __init__(self, db: Database):
        self.db = db
        self._kept: list[dict[str, Any]] | None = None  # not removed, in (start, id) order

    def reload(self) -> None:
        """Read them again at the next question (a transaction was rolled back)."""
        self._kept = None

    def add(self, cards: list[int], start: float, end: float, holder_kind: str, holder: str,
            name: str, created_by: str, created_at: float) -> int:
        self._kept = None
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO reservations (cards, start, end, holder_kind, holder, name, "
                "created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [json.dumps(sorted(cards)), start, end, holder_kind, holder, name, created_by,
                 created_at])
        return int(cursor.lastrowid)

    def remove(self, reservation_id: int, by: str, at: float) -> bool:
        """Mark it removed (kept for the record); False if there is none, or it was already."""
        self._kept = None
        with self.db.atomic():
            cursor = self.db.execute(
                "UPDATE reservations SET removed_at = ?, removed_by = ? "
                "WHERE id = ? AND removed_at IS NULL", [at, by, reservation_id])
        return cursor.rowcount > 0

    def get(self, reservation_id: int) -> dict[str, Any] | None:
        rows = [_decoded(r) for r in self.db.query("SELECT * FROM reservations WHERE id = ?",
                                                   [reservation_id])]
        return rows[0] if rows else None

    def ending_after(self, at: float) -> list[dict[str, Any]]:
        """The reservations not over by `at` and not removed, soonest first (copies)."""
        if self._kept is None:
            self._kept = [_decoded(r) for r in select(
                self.db, "SELECT * FROM reservations WHERE removed_at IS NULL "
                "ORDER BY start, id")]
        return [{**r, "cards": list(r["cards"])} for r in self._kept if r["end"] > at]

    def record(self) -> list[dict[str, Any]]:
        """Every reservation ever made, removed and past ones included, in the order made."""
        return [_decoded(r) for r in self.db.query("SELECT * FROM reservations ORDER BY id")]


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    row["cards"] = json.loads(row["cards"])
    return row
