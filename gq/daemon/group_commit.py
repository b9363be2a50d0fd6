"""Group commit: a submit is answered once it is on disk, without the daemon waiting for the disk.

A submit's transaction is written without an fsync (Store.synced_later), and its answer waits
until the write-ahead log has been flushed after it (Store.sync_wal, in a worker thread). Meanwhile
the daemon goes on: it starts and ends jobs, and answers other requests. Submits that arrive
while a flush runs share the next one. The guarantee is the one of synchronous=FULL: nothing
acknowledged is lost, even in a power cut; what changes is that the daemon's one thread no
longer stands still for every submit's fsync (milliseconds each, most of a trivial job's cost).

Where flushes are quick (an SSD: about 0.1 ms on the development machine), handing each to the
worker thread and back costs the daemon more than the flush itself: a future, a wake-up of the
loop through its self-pipe and two more turns of it. So while the recent flushes took less than
INLINE_BELOW, a submit with no flush under way is flushed on the daemon's thread; one slower
flush sends the next ones back to the worker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

INLINE_BELOW = 0.0005  # seconds: flushes quicker than this run on the daemon's thread


class GroupCommit:
    def __init__(self, pending: Callable[[], int], sync: Callable[[], None],
                 inline_below: float = INLINE_BELOW,
                 clock: Callable[[], float] = time.monotonic):
        self._pending = pending  # how many commits have been made to sync so far (a count)
        self._sync = sync  # makes every commit made before it durable; blocking
        self.synced = 0  # every commit up to this count is on disk
        self._running: tuple[asyncio.Future, int] | None = None  # a flush, and what it covers
        self._inline_below, self._clock = inline_below, clock
        self._slowest = float("inf")  # the slower of the last two flushes (none yet: slow)
        self._last = float("inf")

    def _timed_sync(self) -> None:
        began = self._clock()
        try:
            self._sync()
        finally:
            took = self._clock() - began
            self._slowest, self._last = max(took, self._last), took

    async def covering(self, count: int) -> None:
        """Return once the first `count` commits are on disk (raises if the flush that would
        have covered them failed)."""
        if self.synced < count and self._running is None \
                and self._slowest < self._inline_below:
            covers = self._pending()
            self._timed_sync()  # its error, to the request that waited
            self.synced = max(self.synced, covers)
            return
        while self.synced < count:
            running = self._running
            if running is not None and running[0].done():
                # Finished, but its own callbacks have not run yet: awaiting it would not
                # yield to them, so take it into account here.
                self._settle(running)
                continue
            if running is None:
                running = self._running = (
                    asyncio.get_running_loop().run_in_executor(None, self._timed_sync),
                    self._pending())
            try:
                # Shielded: a waiter that goes away must not cancel the flush others wait for.
                await asyncio.shield(running[0])  # its error, to each request that waited
            finally:
                if running[0].done():
                    self._settle(running)

    def _settle(self, running: tuple[asyncio.Future, int]) -> None:
        if self._running is running:
            self._running = None
        flush, covers = running
        if not flush.cancelled() and flush.exception() is None:
            self.synced = max(self.synced, covers)
