"""Admin reservations: cards kept for a user or a group over a window of time.

A window is like a backfill reservation that nobody has to be protected into: no job of anyone
but its holders may start on its cards if it would still run (by its time limit, declared or
assumed) when the window opens, and none may start there while it is open. The holders' jobs
may use the cards at any time. Jobs already running when a window opens are not stopped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gq.model import Job


@dataclass(frozen=True)
class Window:
    """`cards` of `host` ("" on a single host) from `start` to `end` (epoch seconds), kept for
    the jobs of `users`."""

    id: int
    cards: frozenset[int]
    start: float
    end: float
    users: frozenset[str]
    host: str = ""
    holder: str = ""  # in words, for reasons: "user ann", "group vision"

    def on(self, host: str) -> bool:
        return not self.host or self.host == host

    def overlaps(self, start: float, end: float) -> bool:
        return start < self.end and end > self.start


def open_windows(windows: Iterable[Window], now: float) -> tuple[Window, ...]:
    """The windows that have not ended: only these can keep a job off a card."""
    return tuple(w for w in windows if w.end > now and w.cards)


def blocking(windows: tuple[Window, ...], job: Job, now: float, limit: float
             ) -> tuple[Window, ...]:
    """The windows that keep `job`, started now and running `limit` seconds, off their cards."""
    return tuple(w for w in windows if job.user not in w.users and w.overlaps(now, now + limit))


def kept_cards(windows: Iterable[Window], host: str, start: float, end: float) -> frozenset[int]:
    """The cards of `host` that windows overlapping [start, end) keep."""
    out: set[int] = set()
    for w in windows:
        if w.on(host) and w.overlaps(start, end):
            out |= w.cards
    return frozenset(out)
