"""When each user last cleared their ended jobs from `gq ls` (`gq clean`)."""

from __future__ import annotations

from sqlite_utils import Database


class Cleared:
    def __init__(self, db: Database):
        self.db = db

    def at(self, user: str) -> float | None:
        rows = list(self.db.query("SELECT at FROM cleared WHERE user = ?", [user]))
        return rows[0]["at"] if rows else None

    def clear(self, user: str, at: float) -> None:
        with self.db.atomic():
            self.db.execute("INSERT INTO cleared (user, at) VALUES (?, ?) ON CONFLICT(user) "
                            "DO UPDATE SET at = excluded.at", [user, at])
