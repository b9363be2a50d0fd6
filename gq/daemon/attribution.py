"""Tell which card memory belongs to gq's jobs and which to processes outside gq."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

from gq.model import Gpu

JOB_ID_VARIABLE = "GQ_JOB_ID"


@dataclass(frozen=True)
class Owner:
    """Who a process listed on a card is: the gq job it belongs to, if any, and whether it
    still lives (the driver also lists dead processes whose memory was never freed)."""

    pid: int
    job_id: int | None
    alive: bool
    # The job is known only from GQ_JOB_ID in the process's environment: it left the job's
    # process tree (or outlived the job's shim). The caller checks the claim against the job.
    by_environment: bool = False
    uid: int | None = None
    command: str = ""  # its command line, shortened, for reports


class Attributor:
    """Finds the owner of each process on the cards, remembering what it learnt.

    A process found below a job's shim belongs to that job for as long as it lives, and after
    it dies while the card still lists it: so zombie memory names its job. What is known is
    keyed by (pid, start time), so that a reused pid is looked at afresh. A process found
    outside every job is looked at again after `recheck` seconds (its shim may not have been
    adopted yet when a daemon restarts)."""

    def __init__(self, recheck: float = 60.0, clock=time.monotonic):
        self.recheck = recheck
        self.clock = clock
        self._known: dict[tuple[int, float], Owner] = {}
        self._outside_until: dict[tuple[int, float], float] = {}
        self._last: dict[int, Owner] = {}  # pid -> its owner when last seen alive

    def owners(self, cards: list[Gpu], shim_pids: dict[int, int],
               remember_outside: bool = True) -> dict[int, Owner]:
        """The owner of every process on the cards, by pid. shim_pids: shim pid -> job id,
        for every running job unless remember_outside is False."""
        pids = {p.pid for card in cards for p in card.processes or ()}
        found = {pid: self._owner(pid, shim_pids) for pid in pids}
        if not remember_outside:
            self._known = {k: o for k, o in self._known.items() if k not in self._outside_until}
            self._outside_until.clear()
        # Forget what no card lists any more.
        self._last = {pid: o for pid, o in self._last.items() if pid in pids}
        self._known = {k: o for k, o in self._known.items() if k[0] in pids}
        self._outside_until = {k: t for k, t in self._outside_until.items() if k[0] in pids}
        return found

    def _owner(self, pid: int, shim_pids: dict[int, int]) -> Owner:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                key = (pid, proc.create_time())
                alive = proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return self._dead(pid)
        except psutil.Error:  # cannot look (another user's, under hidepid): alive, not ours
            return Owner(pid, None, alive=True)
        if not alive:
            return self._dead(pid)
        known = self._known.get(key)
        if known is None or self._outside_until.get(key, float("inf")) < self.clock():
            known = self._look(proc, shim_pids)
            self._known[key] = known
            if known.job_id is None or known.by_environment:
                self._outside_until[key] = self.clock() + self.recheck
            else:
                self._outside_until.pop(key, None)
        self._last[pid] = known
        return known

    def _dead(self, pid: int) -> Owner:
        last = self._last.get(pid)
        if last is None:
            return Owner(pid, None, alive=False)
        return Owner(pid, last.job_id, False, last.by_environment, last.uid, last.command)

    def _look(self, proc: psutil.Process, shim_pids: dict[int, int]) -> Owner:
        uid, command = _uid_and_command(proc)
        try:
            for ancestor in [proc, *proc.parents()]:
                job_id = shim_pids.get(ancestor.pid)
                if job_id is not None:
                    return Owner(proc.pid, job_id, True, False, uid, command)
        except psutil.Error:
            pass
        try:
            claimed = proc.environ().get(JOB_ID_VARIABLE, "")
        except psutil.Error:
            claimed = ""
        if claimed.isdigit():
            return Owner(proc.pid, int(claimed), True, True, uid, command)
        return Owner(proc.pid, None, True, False, uid, command)


def _uid_and_command(proc: psutil.Process) -> tuple[int | None, str]:
    try:
        uid = proc.uids().real
    except psutil.Error:
        uid = None
    try:
        command = " ".join(proc.cmdline())[:120]
    except psutil.Error:
        command = ""
    return uid, command


def split_memory(
    cards: list[Gpu], owners: dict[int, Owner], holding: set[int], trusted: bool = True
) -> tuple[dict[int, int | None], dict[int, int]]:
    """Card memory by owner: per card index, the bytes held by anything that is not a job
    holding resources (None when not measurable); per such job, the bytes its processes hold
    over all cards. Memory of a job that ended counts as outside: no reservation covers it.

    A process whose memory the driver cannot report makes the whole card unknown: the
    scheduler then keeps new jobs off it rather than guess (fail closed). So does a process
    list that could not be read. So does, while not `trusted` (a daemon that has not yet
    adopted every running job's shim), any process not yet matched to a job: it may be one."""
    external: dict[int, int | None] = {}
    per_job: dict[int, int] = {}
    for card in cards:
        total: int | None = None if card.memory_used is None or card.processes is None else 0
        for proc in card.processes or ():
            owner = owners.get(proc.pid)
            # Only the process tree proves a job's own memory; a GQ_JOB_ID claim could hide
            # someone's memory from the scheduler.
            job_id = (owner.job_id if owner is not None and owner.alive
                      and not owner.by_environment else None)
            if job_id in holding:
                per_job[job_id] = per_job.get(job_id, 0) + (proc.used_memory or 0)
            elif proc.used_memory is None or not trusted:
                total = None
            elif total is not None:
                total += proc.used_memory
        external[card.index] = total
    return external, per_job


def job_memory_by_card(cards: list[Gpu], owners: dict[int, Owner], holding: set[int]
                       ) -> dict[int, dict[int, int]]:
    """Per card index, the bytes each job holding resources holds there (its process tree's
    processes with a known size), for placement by measured use."""
    out: dict[int, dict[int, int]] = {}
    for card in cards:
        for proc in card.processes or ():
            owner = owners.get(proc.pid)
            if (owner is None or not owner.alive or owner.by_environment
                    or owner.job_id not in holding or proc.used_memory is None):
                continue
            on_card = out.setdefault(card.index, {})
            on_card[owner.job_id] = on_card.get(owner.job_id, 0) + proc.used_memory
    return out
