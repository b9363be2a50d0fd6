"""Helpers for `gq daemon`: waiting for a stopped daemon to be gone."""

from __future__ import annotations

import os
import time


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

