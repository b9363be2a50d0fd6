"""Out-of-memory deaths on the GPU: the end of a run's log (gq/triage tells an OOM from other
deaths), and the memory to retry with."""

from __future__ import annotations

import os
import stat

TAIL = 64 << 10  # a dying process prints its cause last; no need to read a long log
GROWTH = 1.5


def run_log(path: str | os.PathLike, offset: int | None, owner: int | None = None) -> str:
    """The end of what one run wrote to its log (earlier runs appended there too).

    The log is in a directory its user controls: only a regular file is read (a FIFO would
    block the daemon), never through a link, and with `owner`, only one that user owns."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (owner is not None and st.st_uid != owner):
            return ""
        start = max(offset or 0, st.st_size - TAIL)
        return os.pread(fd, st.st_size - start, start).decode(errors="replace")
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
