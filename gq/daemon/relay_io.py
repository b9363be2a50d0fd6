"""The bytes of a `gq run`'s relay (gq/daemon/attach.py): reads and writes that never raise
for a side gone away, and what /proc says of a process's signals."""

from __future__ import annotations

import os
import select
import signal

CHUNK = 1 << 16

SIGTSTP_BIT = 1 << (signal.SIGTSTP - 1)


def signal_mask(pid: int, field: str) -> int:
    """A process's caught (SigCgt) or ignored (SigIgn) signals, from /proc; 0 if unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def read_some(fd: int) -> bytes:
    try:
        return os.read(fd, CHUNK)
    except OSError:  # EIO: a terminal's other side is closed
        return b""


def write_all(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        except OSError:
            return False
        view = view[n:]
    return True


def drain(fd: int) -> None:
    try:
        while os.read(fd, 64):
            pass
    except OSError:
        pass

