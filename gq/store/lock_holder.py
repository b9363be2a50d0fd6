"""Who holds the database's write lock, when SQLite says only "database is locked".

The daemon is the only writer of its database: a lock it runs into is another process's (an
admin's `sqlite3` in a `BEGIN EXCLUSIVE`, a backup tool). In WAL mode SQLite takes its write
lock as a POSIX lock on byte 120 of the `-shm` file (in rollback mode, on the file itself), so
/proc/locks names the holder's pid; an OFD lock has none there, and then whoever has the file
open (in /proc/*/fd, as far as we may look) is named instead.
"""

from __future__ import annotations

import os

SUFFIXES = ("-shm", "", "-wal")  # where SQLite's locks sit, the write lock's file first


def _files(db: str) -> dict[tuple[int, int, int], str]:
    found = {}
    for suffix in SUFFIXES:
        try:
            st = os.stat(db + suffix)
        except OSError:
            continue
        found[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = db + suffix
    return found


def _locking_pids(files: dict[tuple[int, int, int], str]) -> list[int]:
    """Pids holding a write lock on one of `files`, from /proc/locks (not ours, not waiters)."""
    pids: list[int] = []
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return pids
    for line in lines:
        fields = line.split()
        # "14: POSIX  ADVISORY  WRITE 4379 fe:00:2146494 120 120"; "14: -> POSIX ..." waits
        if len(fields) < 6 or fields[1] == "->" or fields[3] != "WRITE":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key, pid = (int(major, 16), int(minor, 16), int(inode)), int(fields[4])
        except ValueError:
            continue
        if key in files and pid > 0 and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids


def _opening_pids(files: dict[tuple[int, int, int], str]) -> list[int]:
    """Other processes with one of `files` open (those whose descriptors we may read)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                st = os.stat(fd.path)
                if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in files:
                    pids.append(int(entry.name))
                    break
        except OSError:
            continue
    return pids


def _program(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or "?"
    except OSError:
        return "gone"


def lock_holders(db: str) -> list[tuple[int, str]]:
    """The processes that hold (or, failing a pid in /proc/locks, have open) the database `db`,
    as (pid, program name)."""
    files = _files(db)
    if not files:
        return []
    pids = _locking_pids(files) or _opening_pids(files)
    return [(pid, _program(pid)) for pid in pids]


def locked_message(db: str) -> str:
    """One line: the database is locked, and by whom."""
    who = ", ".join(f"pid {pid}, {name}" for pid, name in lock_holders(db)[:3])
    return f"the database {db} is locked by another process ({who or 'pid unknown'})"


def is_locked(e: BaseException) -> bool:
    """An SQLite error that is another connection's lock (SQLITE_BUSY, SQLITE_LOCKED)."""
    import sqlite3

    return (isinstance(e, sqlite3.OperationalError)
            and (getattr(e, "sqlite_errorcode", None) in (5, 6)
                 or "database is locked" in str(e)))
