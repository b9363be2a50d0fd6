"""The checks a daemon makes before it opens gq.db, reading and changing nothing: that it may
write the file (owner, mode), that the file is whole counting its WAL (integrity.py), and that
this gq knows its schema. Each refusal is one line that says what to run."""

from __future__ import annotations

import os
import pwd
import sqlite3
from pathlib import Path

from gq.store.backup import backup_dir, best_backup, describe, list_backups
from gq.store.integrity import damage, read_wal


def check_database(db: Path, highest_on_disk: int = 0) -> str | None:
    """Why the daemon must not open the database; None: it may (a new GQ_HOME too).
    `highest_on_disk`: the highest job id with files under GQ_HOME, which a backup to be
    advised should reach."""
    problem = access_problem(db)
    if problem is not None:
        return problem
    size = db.stat().st_size if db.exists() else None
    if not size:
        if size == 0 and read_wal(Path(f"{db}-wal")).pages:
            # SQLite would delete a WAL beside an empty file: never open it.
            problem = "is empty while its WAL holds pages"
        elif not list_backups(db):
            return None  # nothing was ever queued here
        else:
            problem = "is missing" if size is None else "is empty"
    else:
        problem = damage(db)
        if problem is None:
            return newer_schema(db)
    return refusal(db, problem, highest_on_disk)


def refusal(db: Path, problem: str, highest_on_disk: int = 0) -> str:
    """The line that refuses a damaged database, naming the backup that holds the most jobs
    (and the jobs it lacks), or saying that no backup holds any."""
    head = f"{db} {problem}: refusing to start an empty queue over yours"
    backups = list_backups(db)
    recover = f"try `sqlite3 {db} .recover`, or move the file away to start with an empty queue"
    if not backups:
        return f"{head}, and there is no backup in {backup_dir(db)}; {recover}"
    best = best_backup(db)
    if best is None:
        return (f"{head}, and no backup in {backup_dir(db)} holds a job (the newest, "
                f"{backups[0]}, was {describe(backups[0])}); {recover}")
    backup, highest = best
    newest = backup == backups[0]
    which = "the newest backup" if newest else "the newest backup that holds the jobs"
    run = "gq daemon restore" if newest else f"gq daemon restore {backup}"
    lost = (f"job {highest_on_disk}" if highest_on_disk == highest + 1 else
            f"jobs {highest + 1} to {highest_on_disk}")
    lacks = (f" (it lacks {lost}, which left files under {db.parent})"
             if highest_on_disk > highest else "")
    return (f"{head}; {which} is {backup} ({describe(backup)}){lacks}: `{run}` puts it back, "
            "keeping the damaged file")


def access_problem(db: Path) -> str | None:
    """What keeps this daemon from writing gq.db, its WAL or its directory (owner, mode, a
    read-only filesystem), with the command that mends it; None: nothing does."""
    home = db.parent
    try:
        if os.statvfs(home).f_flag & os.ST_RDONLY:
            return (f"{home} is on a read-only filesystem: remount it read-write, or set "
                    "GQ_HOME to a directory on a writable one")
    except OSError as e:
        return f"cannot reach {home}: {e.strerror}"
    closed = []
    for path in (home, db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        need = os.R_OK | os.W_OK | (os.X_OK if path == home else 0)
        if not os.access(path, need):
            closed.append((path, st))
    if not closed:
        return None
    me, uid = _user(os.geteuid()), os.geteuid()
    said = "; ".join(f"{p} belongs to {_user(st.st_uid)} with mode {st.st_mode & 0o7777:04o}"
                     for p, st in closed)
    theirs = " ".join(str(p) for p, st in closed if st.st_uid != uid)
    files = " ".join(str(p) for p, st in closed if st.st_uid == uid and p != home)
    runs = ([f"`sudo chown {me} {theirs}`"] if theirs else []) + (
        [f"`chmod u+rw {files}`"] if files else []) + (
        [f"`chmod u+rwx {home}`"] if any(p == home and st.st_uid == uid for p, st in closed)
        else [])
    them = "it" if len(closed) == 1 else "them"
    return (f"{said}: the daemon, running as {me}, cannot read and write {them}; "
            f"{' and '.join(runs)} gives {them} back")


def newer_schema(db: Path) -> str | None:
    """Why this gq must not open a database that a newer gq changed (None: it may): it would
    ignore the changes it does not know, then fail on the tables they made."""
    from gq import __version__
    from gq.store.schema import known_migrations

    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            applied = [r[0] for r in conn.execute(
                "SELECT name FROM _sqlite_migrations WHERE migration_set = 'gq' ORDER BY rowid")]
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'written_by'").fetchone()
            except sqlite3.OperationalError:  # made before m015
                row = None
        finally:
            conn.close()
    except sqlite3.OperationalError:  # no migration recorded yet: a new file
        return None
    known = known_migrations()
    unknown = [name for name in applied if name not in known]
    if not unknown:
        return None
    writer = f"gq {row[0]}" if row else "a newer gq"
    upgrade = f"gq {row[0]} or later" if row else "a newer gq"
    return (f"{db} was written by {writer} (schema {unknown[-1]}), newer than this gq "
            f"{__version__} (schema {known[-1]}), which would fail on it: install {upgrade}, "
            "or run the daemon of the gq that wrote it")


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
