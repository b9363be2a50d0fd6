"""Rotating copies of gq.db, made with SQLite's backup API, and putting one back.

Backups are `$GQ_HOME/backups/gq-YYYYmmddTHHMMSSZ.db`, each a complete database in rollback
mode, written to a temporary name, fsynced and renamed: a backup that exists is whole.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from gq.store.tallies import carry_forward, read as read_tallies

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


def describe(backup: Path) -> str:
    """'taken 2025-01-02 03:04:05 UTC, 120 jobs', or what is wrong with it."""
    stamp = backup.name[len(_PREFIX):-len(_SUFFIX)]
    try:
        taken = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        taken = "at an unknown time"
    try:
        jobs, _ = contents(backup)
    except sqlite3.DatabaseError as e:
        return f"taken {taken}; unreadable: {e}"
    return f"taken {taken}, {jobs} job{'s' * (jobs != 1)}"


def contents(backup: Path) -> tuple[int, int]:
    """How many jobs a backup holds, and the highest id it handed out. Raises DatabaseError."""
    conn = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    try:
        (jobs,) = conn.execute("SELECT count(*) FROM jobs").fetchone()
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
    finally:
        conn.close()
    return jobs, row[0] if row else 0


def best_backup(db: Path) -> tuple[Path, int] | None:
    """The backup to restore, and the highest job id it knows: the newest of those that
    reached the highest id. Not simply the newest: a daemon started over an emptied queue
    backs up the empty queue, newer than every copy that holds the jobs. None: no backup
    holds a job."""
    best = None
    for backup in list_backups(db):  # newest first
        try:
            jobs, highest = contents(backup)
        except sqlite3.DatabaseError:
            continue
        if jobs and (best is None or highest > best[1]):
            best = (backup, highest)
    return best


def restore(db: Path, backup: Path, highest_id: int, now: float | None = None) -> Path | None:
    """Put a backup in the database's place; the daemon must not run. The file it replaces
    (with its -wal and -shm) is renamed, never deleted. Job ids continue above `highest_id`,
    the highest id with files under GQ_HOME, so that a job queued after the backup was taken
    never shares an id, and log files, with a new one. Returns where the old file went, if
    there was one."""
    from gq.store.integrity import damage

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
                if _has_tallies(copy):  # a backup older than m018 starts them at 0
                    carry_forward(copy, _tallies_of(db))
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


def _has_tallies(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tallies'").fetchone()
    return found is not None


def _tallies_of(db: Path) -> dict[str, dict[str, float]]:
    """The counters of the database being replaced, as far as it can still be read."""
    if not db.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return read_tallies(conn) if _has_tallies(conn) else {}
        finally:
            conn.close()
    except sqlite3.Error:  # damaged beyond reading: the counters go back with it
        return {}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
