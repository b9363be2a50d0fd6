"""The store's connection: sqlite-utils' Database, with each transaction's durability set as it
begins rather than switched back and forth around every relaxed block."""

from __future__ import annotations

from contextlib import contextmanager

from sqlite_utils import Database


class Connection(Database):
    """`relaxed` counts the Store.relaxed() blocks open. A transaction that begins inside one
    commits with synchronous=NORMAL (it survives a crash of the daemon, maybe not a power
    cut), any other with FULL. The pragma is sent only when that changes: a daemon that runs
    job after job commits three or four relaxed transactions a job, and switching back to
    FULL after each was two statements of the thirty or so a trivial job costs.

    Every write of the store happens inside atomic() (the statements of sqlite-utils' table
    methods too, which use it); a bare execute() of a write would commit with whichever
    setting the last transaction left."""

    def __init__(self, path: str):
        super().__init__(path)
        self.relaxed = 0
        self._synchronous: str | None = None
        self.synchronous("FULL")

    def synchronous(self, level: str) -> None:
        if level != self._synchronous:
            self.execute(f"PRAGMA synchronous={level}")
            self._synchronous = level

    @contextmanager
    def atomic(self):
        if not self.conn.in_transaction:
            self.synchronous("NORMAL" if self.relaxed else "FULL")
        with super().atomic():
            yield self
