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


def split_memory(
    cards: list[Gpu], shim_pids: dict[int, int]
) -> tuple[dict[int, int | None], dict[int, int]]:
    """Card memory by owner: per card index, the bytes held by processes that are not gq jobs
    (None when not measurable); per job id, the bytes its processes hold over all cards.

    A process whose memory the driver cannot report makes the whole card unknown: the
    scheduler then keeps new jobs off it rather than guess (fail closed)."""
    external: dict[int, int | None] = {}
    per_job: dict[int, int] = {}
    for card in cards:
        total: int | None = None if card.memory_used is None or card.processes is None else 0
        for proc in card.processes or ():
            job_id = job_of(proc.pid, shim_pids)
            if job_id is not None:
                per_job[job_id] = per_job.get(job_id, 0) + (proc.used_memory or 0)
            elif proc.used_memory is None:
                total = None
            elif total is not None:
                total += proc.used_memory
        external[card.index] = total
    return external, per_job
