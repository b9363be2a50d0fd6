"""The job shims the daemon watches, and the runs whose shim it has yet to watch (after a
restart, a spawner that died, or an end that could not be recorded): what the services ask of a
run goes through here."""

from __future__ import annotations

import asyncio
import signal
from typing import Callable, Protocol

from gq.daemon.supervisor import RunStatus, Shim


class Supervision(Protocol):
    """The process boundary the services act through: gq/daemon/supervisor.py's Supervisor, or
    a fake that records what it is asked in tests/unit."""

    def status(self, job_id: int) -> RunStatus: ...

    def exit_record(self, job_id: int) -> dict | None: ...

    def adopt(self, job_id: int) -> Shim | None: ...

    def ask(self, shim: Shim, request: signal.Signals) -> None: ...

    def mark_thawed(self, job_id: int) -> None: ...

    def release(self, shim: Shim) -> None: ...

    def end_leftovers(self, job_id: int) -> int: ...

    def holders(self, job_id: int) -> str: ...

    def stuck_before_its_job(self, job_id: int) -> int | None: ...

    def kill_shim(self, shim: Shim) -> None: ...

    def finished(self, job_id: int) -> None: ...

    def run_ids(self) -> list[int]: ...

    def run_number(self, job_id: int) -> int | None: ...

    def forget(self, job_id: int) -> None: ...


class Runs:
    """The watched shims (job id -> its shim) and the unadopted runs. `on_exit(job_id)` is
    called once a watched shim has exited and been let go."""

    def __init__(self, supervisor: Supervision, on_exit: Callable[[int], None]):
        self.supervisor = supervisor
        self.on_exit = on_exit
        self.shims: dict[int, Shim] = {}
        self.unadopted: set[int] = set()  # shims alive, or ends unrecorded, not yet watched
        self.loop: asyncio.AbstractEventLoop | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def watch(self, shim: Shim) -> None:
        self.shims[shim.job_id] = shim
        if self.loop is not None:
            self.loop.add_reader(shim.watch_fd, self._exited, shim.job_id)

    def _exited(self, job_id: int) -> None:
        shim = self.shims.pop(job_id)
        if self.loop is not None:
            self.loop.remove_reader(shim.watch_fd)
        self.supervisor.release(shim)
        self.on_exit(job_id)

    def ask(self, job_id: int, request: signal.Signals) -> bool:
        """Ask the job's shim to act (a stop); False when it is not watched yet."""
        shim = self.shims.get(job_id)
        if shim is None:
            return False
        self.supervisor.ask(shim, request)
        return True

    def kill_shim(self, job_id: int) -> bool:
        """SIGKILL the job's shim (one stuck in the kernel); False when it is not watched."""
        shim = self.shims.get(job_id)
        if shim is None:
            return False
        self.supervisor.kill_shim(shim)
        return True

    def mark_thawed(self, job_id: int) -> None:
        """The job's processes are about to go on after a freeze: its shim counts its warning
        before the time limit from now (Supervisor.mark_thawed)."""
        self.supervisor.mark_thawed(job_id)

    def later(self, job_id: int) -> None:
        """The run is not settled: every tick tries again (Recovery.settle_or_retry)."""
        self.unadopted.add(job_id)

    def settled(self, job_id: int) -> None:
        self.unadopted.discard(job_id)

    def close(self) -> None:
        if self.loop is not None:
            for shim in self.shims.values():
                self.loop.remove_reader(shim.watch_fd)
