"""Start, signal and re-adopt job shims. Never decides what to run.

Each run of a job has a run directory holding a lock file. The daemon takes the lock before
forking the shim and the shim inherits it, so the lock is held exactly as long as the shim
lives, whatever happens to the daemon. A restarted daemon therefore knows, without guessing
from pids, whether a job's shim is still alive.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from gq.daemon.shim import EXIT_FILE, LOCK_FILE, SHIM_FILE, ShimSpec, run_shim


@dataclass
class Shim:
    job_id: int
    pid: int
    pidfd: int  # readable when the shim has exited; signals through it cannot hit a reused pid
    child: bool  # forked by this daemon (must be reaped) rather than adopted


class RunStatus(Enum):
    ALIVE = "alive"  # the shim holds its lock
    EXITED = "exited"  # the shim recorded an exit status
    VANISHED = "vanished"  # the shim started the job and died without a record
    NEVER_STARTED = "never_started"  # no shim ever ran the command


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class Supervisor:
    def __init__(self, run_root: Path):
        self.run_root = run_root
        run_root.mkdir(parents=True, exist_ok=True)

    def run_dir(self, job_id: int) -> Path:
        return self.run_root / str(job_id)

    def spawn(self, spec: ShimSpec) -> Shim:
        run_dir = spec.run_dir
        if run_dir.exists():
            shutil.rmtree(run_dir)  # what a previous run left; its exit is already recorded
        run_dir.mkdir(parents=True)
        lock_fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        pid = os.fork()
        if pid == 0:  # the shim
            try:
                run_shim(spec, keep_fds=(lock_fd,))
            finally:
                os._exit(0)
        os.close(lock_fd)  # the shim's copy keeps the lock
        return Shim(spec.job_id, pid, os.pidfd_open(pid), child=True)

    def status(self, job_id: int) -> RunStatus:
        run_dir = self.run_dir(job_id)
        if self._locked(run_dir):
            return RunStatus.ALIVE
        if (run_dir / EXIT_FILE).exists():
            return RunStatus.EXITED
        if (run_dir / SHIM_FILE).exists():
            return RunStatus.VANISHED
        return RunStatus.NEVER_STARTED

    def adopt(self, job_id: int) -> Shim | None:
        """Watch a shim started by an earlier daemon; None if it is gone or not yet known."""
        info = _read_json(self.run_dir(job_id) / SHIM_FILE)
        if not info:
            return None
        try:
            pidfd = os.pidfd_open(info["pid"])
        except ProcessLookupError:
            return None
        # The pid may have been reused between reading the file and opening the pidfd: the
        # lock is the proof of life, checked after we hold the pidfd.
        if self.status(job_id) is not RunStatus.ALIVE:
            os.close(pidfd)
            return None
        return Shim(job_id, info["pid"], pidfd, child=False)

    def exit_record(self, job_id: int) -> dict | None:
        return _read_json(self.run_dir(job_id) / EXIT_FILE)

    def stop(self, shim: Shim) -> None:
        """Ask the shim to stop the job: it sends SIGTERM to the tree, then SIGKILL after grace."""
        try:
            signal.pidfd_send_signal(shim.pidfd, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def release(self, shim: Shim) -> None:
        """Forget an exited shim: reap it if it is ours and close its pidfd."""
        if shim.child:
            try:
                os.waitpid(shim.pid, os.WNOHANG)
            except ChildProcessError:
                pass
        os.close(shim.pidfd)

    def forget(self, job_id: int) -> None:
        """Remove a finished run's directory once its exit is in the store."""
        shutil.rmtree(self.run_dir(job_id), ignore_errors=True)

    def _locked(self, run_dir: Path) -> bool:
        try:
            fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
