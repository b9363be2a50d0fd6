"""Tell which card memory belongs to gq's jobs and which to processes outside gq."""

from __future__ import annotations

import psutil

from gq.model import Gpu


def job_of(pid: int, shim_pids: dict[int, int]) -> int | None:
    """The job whose shim is an ancestor of pid, or None (outside gq, or already gone)."""
    try:
        proc = psutil.Process(pid)
        for ancestor in [proc, *proc.parents()]:
            job_id = shim_pids.get(ancestor.pid)
            if job_id is not None:
                return job_id
    except psutil.Error:
        return None
    return None


def external_memory(cards: list[Gpu], shim_pids: dict[int, int]) -> dict[int, int | None]:
    """Per card index: bytes held by processes that are not gq jobs; None when not measurable.

    A process whose memory the driver cannot report makes the whole card unknown: the
    scheduler then keeps new jobs off it rather than guess (fail closed)."""
    out: dict[int, int | None] = {}
    for card in cards:
        if card.memory_used is None:
            out[card.index] = None
            continue
        total: int | None = 0
        for proc in card.processes:
            if job_of(proc.pid, shim_pids) is not None:
                continue
            if proc.used_memory is None:
                total = None
                break
            total += proc.used_memory
        out[card.index] = total
    return out
