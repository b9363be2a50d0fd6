"""Helpers for `gq daemon`: waiting for a stopped daemon to be gone, restoring a backup."""

from __future__ import annotations

import os
import time

from gq.protocol.op_names import Op


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if _zombie(pid):  # exited, not yet reaped by its parent: its lock is free
            return True
        time.sleep(0.02)
    return False


def _zombie(pid: int) -> bool:
    """Exited, every thread of it: the main thread of a process is a zombie while its other
    threads still exit, holding its files (and locks) open."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as f:
                if f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X"):
                    return False
    except (OSError, IndexError):
        return False
    return bool(tasks)


def restart() -> str:
    """`gq daemon restart`: stop this user's daemon (if it runs) and start a new one."""
    from gq.cli.client import start_daemon, try_connect
    from gq.paths import daemon_socket
    from gq.protocol import GqError

    path, home = daemon_socket()
    if home is None:
        raise GqError(f"this host runs a system daemon ({path}), which systemd restarts "
                      "(an admin: systemctl restart gq)")
    conn = try_connect(path)
    old = None
    if conn is not None:
        with conn:
            old = conn.call(Op.PING)["pid"]
            running = conn.call(Op.SHUTDOWN)["running_jobs"]
        if not wait_gone(old):
            raise GqError(f"the daemon (pid {old}) did not stop within 10s; see "
                          f"{home}/daemon.log")
    pid = start_daemon(home)
    if old is None:
        return f"started (pid {pid}, {home}); none was running"
    return f"restarted (pid {old} -> {pid}, {home}); {running} running job(s) kept running"


def restore_backup(chosen: str | None) -> str:
    """`gq daemon restore`: put a backup in place of gq.db while no daemon runs."""
    from pathlib import Path

    from gq.daemon.main import acquire_lock
    from gq.daemon.layout import Layout
    from gq.paths import gq_home
    from gq.protocol import BadInput, GqError
    from gq.store.backup import backup_dir, best_backup, describe, list_backups, restore

    layout = Layout(gq_home())
    if chosen is not None:
        backup = Path(chosen).resolve()
        if not backup.is_file():
            raise BadInput(f"{chosen}: no such file")
    else:  # the one the daemon's refusal names: the newest of those holding the most jobs
        best = best_backup(layout.db)
        if best is None:
            which = "holds a job" if list_backups(layout.db) else "exists"
            raise GqError(f"no backup in {backup_dir(layout.db)} {which}: nothing to restore")
        backup = best[0]
    try:
        lock = acquire_lock(layout)
    except GqError as e:
        raise GqError(f"{e.message}; stop it first: gq daemon stop") from None
    try:
        kept = restore(layout.db, backup, layout.highest_job_id())
    except ValueError as e:
        raise GqError(str(e)) from None
    finally:
        os.close(lock)
    was = f"; the database it replaces is kept as {kept}" if kept else ""
    return (f"restored {backup} ({describe(backup)}){was}. Jobs queued after it was taken "
            "are not in it; new jobs get ids above theirs")
