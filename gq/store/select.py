"""Reading rows straight from sqlite3."""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database


def select(db: Database, sql: str, args: list | dict | tuple = ()) -> list[dict[str, Any]]:
    """The rows of a SELECT, as dicts. sqlite-utils' query() runs each statement inside a
    savepoint of its own, in case it is not a SELECT: two statements more a read, and a job's
    start and end read a few rows each."""
    cursor = db.conn.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
