"""How busy each running job keeps the host's CPUs: its processes' CPU time, sampled with
telemetry and kept in memory for the input-bound diagnosis (offenders.py).

A job's processes are its shim's descendants. Their CPU time (user and system, with that of
children they have reaped) is read at each sample; the difference from the last sample over the
time between is the cores the job kept busy, in all and in its busiest process. A process that
cannot be read is left out; a job none of whose processes can be read has no figure (missing
data is never taken for idle, nor for busy).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class CpuWindow:
    """A job's CPU use over a window: cores busy in all and in its busiest process (means),
    from `samples` readings, and the most processes it had."""

    samples: int
    cores: float
    busiest: float
    processes: int


class CpuMeter:
    def __init__(self, keep: float = 900.0):
        self.keep = keep
        # job id -> {(pid, create time): CPU seconds} at the last reading, and when it was
        self._last: dict[int, tuple[float, dict[tuple[int, float], float]]] = {}
        self.recent: dict[int, deque[tuple[float, float, float, int]]] = {}

    def sample(self, shims: dict[int, int], now: float) -> None:
        """Read the CPU time of each job's processes; `shims`: job id -> its shim's pid."""
        for job_id in [j for j in self._last if j not in shims]:
            del self._last[job_id]
            self.recent.pop(job_id, None)
        for job_id, pid in shims.items():
            times = _tree_times(pid)
            if times is None:
                continue
            previous = self._last.get(job_id)
            self._last[job_id] = (now, times)
            if previous is None or now <= previous[0]:
                continue
            elapsed = now - previous[0]
            spent = {key: max(0.0, t - previous[1].get(key, 0.0)) for key, t in times.items()
                     if key in previous[1]}
            if not spent:
                continue
            row = (now, sum(spent.values()) / elapsed, max(spent.values()) / elapsed,
                   len(times))
            recent = self.recent.setdefault(job_id, deque())
            recent.append(row)
            while recent and recent[0][0] < now - self.keep:
                recent.popleft()

    def window(self, job_id: int, length: float, now: float) -> CpuWindow | None:
        rows = [r for r in self.recent.get(job_id, ()) if r[0] >= now - length]
        if not rows:
            return None
        return CpuWindow(len(rows), sum(r[1] for r in rows) / len(rows),
                         sum(r[2] for r in rows) / len(rows), max(r[3] for r in rows))


def _tree_times(pid: int) -> dict[tuple[int, float], float] | None:
    """CPU seconds of each process below the shim (the shim itself is not the job)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return None
    out = {}
    for proc in children:
        try:
            with proc.oneshot():
                t = proc.cpu_times()
                out[(proc.pid, proc.create_time())] = (t.user + t.system + t.children_user
                                                       + t.children_system)
        except psutil.Error:
            continue
    return out or None
