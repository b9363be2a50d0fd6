"""Out-of-memory deaths on the GPU: the end of a run's log (gq/triage tells an OOM from other
deaths), and the memory to retry with."""

from __future__ import annotations

import os

from gq.daemon.userfiles import open_owned

TAIL = 64 << 10  # a dying process prints its cause last; no need to read a long log
GROWTH = 1.5


def run_log(path: str | os.PathLike, offset: int | None, owner: int | None = None,
            base: str | os.PathLike | None = None) -> str:
    """The end of what one run wrote to its log (earlier runs appended there too).

    The log is in a directory its user controls: read as gq/daemon/userfiles.py reads such
    files (only the owner's regular file, never through a link, never blocking)."""
    fd = open_owned(path, owner, base)
    if fd is None:
        return ""
    try:
        size = os.fstat(fd).st_size
        start = max(offset or 0, size - TAIL)
        return os.pread(fd, max(size - start, 0), start).decode(errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def grown_mem(mem: int | None, gpus: int, card_totals: list[int]) -> int | None:
    """The memory per GPU to retry with: 1.5 times as much, or whole cards (None) once that
    is as much as the cards that could take the job hold."""
    if mem is None or gpus < 1 or len(card_totals) < gpus:
        return None
    largest = sorted(card_totals, reverse=True)[gpus - 1]
    grown = int(mem * GROWTH)
    return None if grown >= largest else grown
