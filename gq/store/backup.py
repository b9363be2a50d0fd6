"""Rotating copies of gq.db, made with SQLite's backup API, and the check at start that
refuses a damaged or vanished database instead of starting an empty queue over a user's.

Backups are `$GQ_HOME/backups/gq-YYYYmmddTHHMMSSZ.db`, each a complete database in rollback
mode, written to a temporary name, fsynced and renamed: a backup that exists is whole.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import time
from pathlib import Path

BACKUP_DIR = "backups"
_PREFIX, _SUFFIX = "gq-", ".db"


def backup_dir(db: Path) -> Path:
    return db.parent / BACKUP_DIR


def list_backups(db: Path) -> list[Path]:
    """The backups of a database, newest first (the names sort by time)."""
    folder = backup_dir(db)
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"{_PREFIX}*{_SUFFIX}"), reverse=True)


def take_backup(db: Path, keep: int, now: float | None = None) -> Path:
    """Copy the database as it is now (a consistent snapshot: the backup API reads in one
    transaction, while the daemon's connection goes on writing) and keep the `keep` newest."""
    folder = backup_dir(db)
    folder.mkdir(mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    dest = folder / f"{_PREFIX}{stamp}{_SUFFIX}"
    tmp = folder / f".{dest.name}.tmp"
    for stale in folder.glob(f".{_PREFIX}*.tmp"):  # of a daemon killed while it copied
        stale.unlink(missing_ok=True)
    try:
        src = sqlite3.connect(db)
        try:
            copy = sqlite3.connect(tmp)
            try:
                src.backup(copy)
                # A standalone file: no -wal or -shm to lose when it is copied around.
                copy.execute("PRAGMA journal_mode=DELETE")
            finally:
                copy.close()
        finally:
            src.close()
        _fsync(tmp)
        os.replace(tmp, dest)
        _fsync(folder)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for old in list_backups(db)[keep:]:
        old.unlink(missing_ok=True)
    return dest


def check_database(db: Path) -> str | None:
    """Why the daemon must not open the database, naming the newest backup: it is damaged, or
    missing or empty although backups show it held a queue. None: it may (a new GQ_HOME too)."""
    backups = list_backups(db)
    if not db.exists() or db.stat().st_size == 0:
        if not backups:
            return None  # nothing was ever queued here
        problem = "is missing" if not db.exists() else "is empty"
    else:
        problem = damage(db)
        if problem is None:
            return None
    return refusal(db, problem, backups[0] if backups else None)


def damage(db: Path) -> str | None:
    """What is wrong with a database file, in words; None if it looks whole. A quick_check
    finds broken structure; a file cut short at a page boundary can look whole to it, so its
    size is also checked against the size its header records."""
    try:
        with open(db, "rb") as f:
            header = f.read(100)
        size = db.stat().st_size
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if len(header) == 100 and header.startswith(b"SQLite format 3\0"):
        (page_size,) = struct.unpack(">H", header[16:18])
        page_size = 65536 if page_size == 1 else page_size
        pages, valid_for = struct.unpack(">I", header[28:32])[0], header[92:96]
        if page_size and size % page_size:
            return f"is cut short ({size} bytes, not a whole number of {page_size}-byte pages)"
        if valid_for == header[24:28] and pages * page_size > size:
            return f"is cut short ({size // page_size} of its {pages} pages)"
    try:
        conn = sqlite3.connect(f"file:{db}?mode=rw", uri=True)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return f"is damaged ({e})"
    return None if rows == ["ok"] else f"is damaged ({rows[0]})"


def refusal(db: Path, problem: str, newest: Path | None) -> str:
    head = f"{db} {problem}: refusing to start an empty queue over yours"
    if newest is None:
        return (f"{head}, and there is no backup in {backup_dir(db)}; try `sqlite3 {db} "
                f".recover`, or move the file away to start with an empty queue")
    return (f"{head}; the newest backup is {newest} ({describe(newest)}): `gq daemon restore` "
            f"puts it back, keeping the damaged file")


def describe(backup: Path) -> str:
    """'taken 2025-01-02 03:04:05 UTC, 120 jobs', or what is wrong with it."""
    stamp = backup.name[len(_PREFIX):-len(_SUFFIX)]
    try:
        taken = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        taken = "at an unknown time"
    try:
        conn = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
        try:
            (jobs,) = conn.execute("SELECT count(*) FROM jobs").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return f"taken {taken}; unreadable: {e}"
    return f"taken {taken}, {jobs} job{'s' * (jobs != 1)}"


def restore(db: Path, backup: Path, highest_id: int, now: float | None = None) -> Path | None:
    """Put a backup in the database's place; the daemon must not run. The file it replaces
    (with its -wal and -shm) is renamed, never deleted. Job ids continue above `highest_id`,
    the highest id with files under GQ_HOME, so that a job queued after the backup was taken
    never shares an id, and log files, with a new one. Returns where the old file went, if
    there was one."""
    problem = damage(backup)
    if problem is not None:
        raise ValueError(f"the backup {backup} {problem}; choose another: gq daemon restore FILE")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    kept = db.with_name(f"{db.name}.damaged-{stamp}")
    tmp = db.with_name(f".{db.name}.restoring")
    src = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    try:
        copy = sqlite3.connect(tmp)
        try:
            src.backup(copy)
            with copy:
                copy.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'jobs'",
                             [highest_id])
                copy.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs', ? WHERE NOT "
                             "EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs')",
                             [highest_id])
        finally:
            copy.close()
    finally:
        src.close()
    _fsync(tmp)
    moved = None
    for suffix in ("", "-wal", "-shm"):
        old = Path(f"{db}{suffix}")
        if old.exists():
            os.replace(old, f"{kept}{suffix}")
            moved = moved or kept
    os.replace(tmp, db)
    _fsync(db.parent)
    return moved


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
