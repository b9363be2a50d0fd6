"""A full disk: the one line a refused request gets, and the mark on job output it cut short.

Stdlib only and light: the shim imports it too."""

from __future__ import annotations

import errno
import os
from gq.units import format_size

LOW = 1 << 20  # bytes: with less free than this, the disk counts as full
TRUNCATED = "output truncated: the disk holding the job's logs filled up while it ran"


def free_bytes(path: str | os.PathLike) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def disk_is_full(path: str | os.PathLike) -> bool:
    free = free_bytes(path)
    return free is not None and free < LOW


def is_disk_full(exc: BaseException) -> bool:
    """Whether an exception says the disk (or the user's quota) is full."""
    import sqlite3

    if isinstance(exc, sqlite3.OperationalError):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def refusal(home: str | os.PathLike) -> str:
    free = free_bytes(home)
    room = "" if free is None else f", {format_size(free)} free"
    return (f"the disk holding {home} is full{room}: nothing was changed; free some space "
            "and try again")


class CutLogs:
    """Jobs whose output a full disk may have cut short: those running while it was full,
    and those whose shim found it full when the job ended (`log_full` in the exit record)."""

    def __init__(self, logs: os.PathLike):
        self.logs = logs
        self.marked: set[int] = set()

    def watch(self, running: list[int]) -> None:
        if running and disk_is_full(self.logs):
            self.marked.update(running)

    def cut(self, job_id: int, record: dict | None) -> bool:
        return job_id in self.marked or bool(record and record.get("log_full"))

    def forget(self, job_id: int) -> None:
        self.marked.discard(job_id)
