"""When the daemon backs up its database: at start, then at least every `[backup] every` while
the queue changes, or sooner once `[backup] jobs` jobs were queued. The copy runs in a thread
with its own connection (SQLite's backup API), so requests are served while it runs."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future
from pathlib import Path

from gq.config import BackupConfig
from gq.store import Store
from gq.store.backup import take_backup

log = logging.getLogger("gq.daemon")

MIN_GAP = 60.0  # seconds: however many submits come, at most one backup a minute (or `every`)
KEY_AGE = 7 * 86400.0  # idempotency keys are kept a week: a client retries within a minute


class BackupSchedule:
    def __init__(self, store: Store, db: Path, config: BackupConfig):
        self.store, self.db, self.config = store, db, config
        self.last_at = float("-inf")
        self.last_counts: tuple[int, int] | None = None  # Store.counters() at the last one
        self.running: Future | None = None

    def due(self, now: float) -> bool:
        if self.running is not None and not self.running.done():
            return False
        if self.last_counts is None:
            return True  # the daemon just started
        if now - self.last_at < min(MIN_GAP, self.config.every):
            return False
        last_id, changes = self.store.counters()
        if last_id - self.last_counts[0] >= self.config.jobs:
            return True
        return now - self.last_at >= self.config.every and changes != self.last_counts[1]

    def tick(self, loop: asyncio.AbstractEventLoop, now: float) -> None:
        if not self.due(now):
            return
        self.store.forget_keys(now - KEY_AGE)
        self.last_at, self.last_counts = now, self.store.counters()
        self.running = loop.run_in_executor(None, take_backup, self.db, self.config.keep, now)
        self.running.add_done_callback(_report)


def _report(done: Future) -> None:
    if done.cancelled():
        return
    error = done.exception()
    if error is not None:  # a full disk, most likely: the queue itself is unharmed
        log.warning("backing up the database failed: %s", error)
    else:
        log.info("backed up the database to %s", done.result())
