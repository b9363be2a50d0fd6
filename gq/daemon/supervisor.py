"""Start, signal and re-adopt job shims. Never decides what to run.

Each run of a job has a lock file, `run/ID.lock`. The daemon locks it before the run is handed
to a shim, and the shim inherits the lock and holds it exactly as long as the run lasts, whatever
happens to the daemon. A restarted daemon therefore knows, without guessing from pids, whether
a job's run is still going. The shim writes its pid into the lock file, and its exit status,
durably, into the same file (from shim.EXIT_AT; a shim of an older gq wrote `run/ID.exit`). A
shim then waits for another run (gq/daemon/spawner.py): IDLE of them at most, each IDLE_FOR.

Creating a file is the costliest step of a trivial job's run on some disks (ext4 without a
journal skips every inode freed in the last minutes, one by one, to find a free one), so the
lock files of finished runs are blanked and kept in `run/spare/` for the next runs, renamed
into place, rather than deleted and created again.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from gq.daemon import cgroups as job_cgroups
from gq.daemon.cgroups import JobCgroups
from gq.protocol.fdpass import readable, receive, send
from gq.daemon.shim import (
    EXIT_AT, EXIT_RECORD_ROOM, REQUEST_AT, RUN_FILE_SIZE, THAWED_AT, ShimSpec,
    parse_exit_record,
)


@dataclass
class Shim:
    job_id: int
    pid: int
    pidfd: int  # readable when the shim has exited; signals through it cannot hit a reused pid
    # False for a shim started by a gq from before preemption, re-adopted: it ignores SIGUSR1
    # and SIGUSR2, so every stop is asked of it as a cancel.
    takes_requests: bool = True
    # The read end of a pipe the shim closes once the run's exit is recorded (its shim then
    # waits for another run); None for a shim adopted after a restart, which exits at the end
    # of its run (pidfd).
    end_fd: int | None = None
    generation: int = 0  # the spawner that started it (Supervisor.generation); 0: none of ours

    @property
    def watch_fd(self) -> int:
        """Readable once the run has ended."""
        return self.pidfd if self.end_fd is None else self.end_fd


RUN_TOKEN = "GQ_RUN_TOKEN"  # in the environment of every process of a run: which run it is
class RunStatus(Enum):
    ALIVE = "alive"  # the shim holds its lock
    EXITED = "exited"  # the shim recorded an exit status
    VANISHED = "vanished"  # the shim started and died without a record
    NEVER_STARTED = "never_started"  # no shim ever ran the command


class SpawnError(OSError):
    """No shim was started."""


class SpawnUnknown(OSError):
    """The spawner took the request and died: a shim may or may not be running."""


SPARES = 64  # blanked lock files kept for the next runs
IDLE = 8  # shims kept waiting for the next runs
IDLE_FOR = 30.0  # seconds a shim waits for another run before it is let go


class Supervisor:
    def __init__(self, run_root: Path, cgroups: JobCgroups | None = None):
        self.run_root = run_root
        self.cgroups = cgroups  # where each run gets a cgroup of its own; None: no cgroups
        self.run_dir = str(run_root)  # the hot paths join strings: a Path costs more
        run_root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.spare_dir = f"{self.run_dir}/spare"
        os.makedirs(self.spare_dir, mode=0o700, exist_ok=True)
        self._spares = [name for name in os.listdir(self.spare_dir) if name.isdigit()]
        # Shims whose run has ended and been recorded, waiting for another, and since when
        # (monotonic); newest last.
        self._idle: list[tuple[Shim, float]] = []
        self._spawner: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self.generation = 0  # spawners started so far
        self._asked: deque[int] = deque()  # jobs asked of the spawner, not answered yet
        self._lost: list[int] = []  # asked of a spawner that died first
        # Runs whose files forget_finished() removes, oldest first (an ordered set).
        self._finished: dict[int, None] = {}
        # Runs whose exit record was not in their lock file: an older gq's shim may have
        # written run/ID.exit (looking for it after every run cost two failed unlinks a job).
        self._older: set[int] = set()

    def lock_path(self, job_id: int) -> Path:
        return Path(self._lock(job_id))

    def _lock(self, job_id: int) -> str:
        return f"{self.run_dir}/{job_id}.lock"

    def exit_path(self, job_id: int) -> Path:
        """Where a shim of an older gq recorded its exit (now in the lock file)."""
        return self.run_root / f"{job_id}.exit"

    # ---- starting ---------------------------------------------------------------------

    def spawn(self, spec: ShimSpec) -> Shim:
        """Start a shim and wait for it (the daemon asks without waiting: request)."""
        self.request(spec)
        answer = self.answer()
        if answer is None:
            self.take_lost()  # this one: the caller is told
            raise SpawnUnknown("the shim spawner died while starting a shim")
        _job_id, shim = answer
        if isinstance(shim, Exception):
            raise shim
        return shim

    def request(self, spec: ShimSpec) -> None:
        """Ask the spawner for a shim, without waiting for it: answer() reads what it says,
        once its socket (reader_fd) is readable. Raises SpawnError if no spawner takes it."""
        job_id = spec["job_id"]
        self._finished.pop(job_id, None)
        lock = self._lock(job_id)
        if not self._spares and self._finished:  # one kept now rather than at the next tick
            oldest = next(iter(self._finished))
            del self._finished[oldest]
            self.forget(oldest, looked=True)
        spare = False
        if self._spares:  # blanked when it was kept: renamed, it never holds another run's
            try:
                os.rename(f"{self.spare_dir}/{self._spares.pop()}", lock)
                spare = True
            except OSError:
                pass
        # The room for the exit record is taken by the shim (off the daemon's thread), before
        # the job starts: gq/daemon/shim.py.
        lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not spare and os.fstat(lock_fd).st_size:  # the job's previous run's record
                _blank(lock_fd)
            self._send({"spec": dict(spec), "reuse": self._take_idle()}, lock_fd)
        finally:
            os.close(lock_fd)  # the request in flight, then the shim, keep the lock
        self._asked.append(job_id)

    def _send(self, request: dict, lock_fd: int) -> None:
        for _attempt in (1, 2):
            if self._sock is None:
                self._start_spawner()
            try:
                send(self._sock, request, [lock_fd])
                return
            except OSError:  # it died before taking the request: a new one may retry
                self.close()
        raise SpawnError("the shim spawner does not start")

    @property
    def reader_fd(self) -> int | None:
        """The spawner's socket, to read answers from; None when no spawner runs. It changes
        when the spawner is started again (`generation` counts the starts)."""
        return None if self._sock is None else self._sock.fileno()

    def answer(self) -> tuple[int, Shim | SpawnError] | None:
        """The spawner's next answer (blocks until there is one): the job asked for and its
        shim, or why none was started. None: the spawner died; the jobs it was asked for may
        or may not have shims (take_lost gives them)."""
        try:
            reply, fds = receive(self._sock)
        except OSError:
            reply, fds = None, []
        if reply is None:
            # Never retried: the shims may exist. The run's files will tell (Recovery.settle).
            self.close()
            return None
        job_id = self._asked.popleft()
        if reply.get("job_id", job_id) != job_id:  # answers come in order: never otherwise
            raise RuntimeError(f"the spawner answered for job {reply['job_id']}, not {job_id}")
        if "error" in reply:
            return job_id, SpawnError(reply["error"])
        if "lost" in reply:  # handed to a waiting shim that died: the run's files will tell
            return job_id, SpawnUnknown(reply["lost"])
        return job_id, Shim(job_id, reply["pid"], fds[0], end_fd=fds[1],
                            generation=self.generation)

    def take_lost(self) -> list[int]:
        """Jobs asked of a spawner that died before it answered for them."""
        lost, self._lost = self._lost, []
        return lost

    def _start_spawner(self) -> None:
        self.generation += 1
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._spawner = subprocess.Popen(
            [sys.executable, "-m", "gq.daemon.spawner", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._sock = mine

    def close(self) -> None:
        self._lost += self._asked
        self._asked.clear()
        for shim, _since in self._idle:  # they exit with the spawner
            os.close(shim.pidfd)
        self._idle.clear()
        if self._sock is not None:
            self._sock.close()  # the spawner sees the end of its stream and exits
            self._sock = None
        if self._spawner is not None:
            try:
                self._spawner.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._spawner.kill()
            self._spawner = None

    # ---- watching ---------------------------------------------------------------------

    def status(self, job_id: int) -> RunStatus:
        return self.run_state(job_id)[0]

    def run_state(self, job_id: int) -> tuple[RunStatus, dict | None]:
        """The run's status and, once EXITED, its exit record: the lock file opened and read
        once (a job's end looked at it three times)."""
        try:
            fd = os.open(self._lock(job_id), os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            data = b""
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                data = os.pread(fd, EXIT_AT + EXIT_RECORD_ROOM, 0)
            except BlockingIOError:
                return RunStatus.ALIVE, None
            except OSError:
                data = b""
            finally:
                os.close(fd)
        record = parse_exit_record(data[EXIT_AT:]) if len(data) > EXIT_AT else None
        if record is None:
            record = self._older_record(job_id)
        if record is not None:
            return RunStatus.EXITED, record
        try:
            info = json.loads(data[:EXIT_AT].rstrip(b"\0 ") or b"{}")
        except ValueError:
            info = {}
        if isinstance(info, dict) and info.get("pid"):
            return RunStatus.VANISHED, None
        return RunStatus.NEVER_STARTED, None

    def shim_info(self, job_id: int) -> dict:
        """What the shim wrote into its lock file: its pid and run number."""
        try:
            with open(self.lock_path(job_id), "rb") as f:
                info = json.loads(f.read(EXIT_AT).rstrip(b"\0 ") or b"{}")
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    def run_number(self, job_id: int) -> int | None:
        return self.shim_info(job_id).get("run")

    def adopt(self, job_id: int) -> Shim | None:
        """Watch a shim started by an earlier daemon; None if it is gone or not yet known."""
        info = self.shim_info(job_id)
        pid = info.get("pid")
        if not pid:
            return None
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        # The pid may have been reused between reading the file and opening the pidfd: the
        # lock is the proof of life, checked after we hold the pidfd.
        if self.status(job_id) is not RunStatus.ALIVE:
            os.close(pidfd)
            return None
        return Shim(job_id, pid, pidfd, takes_requests="requests" in info)

    def end_leftovers(self, job_id: int, within: float = 2.0) -> int:
        """SIGKILL what is left of a run whose shim died without stopping it: every process
        whose environment carries the run's token, also those that left its session or were
        reparented to init. Processes that emptied their environment are not found. Returns
        how many were killed."""
        killed: set[int] = set()
        group = self.cgroup_of(job_id)
        if group is not None and os.path.isdir(group):  # all at once, however it forks
            deadline = time.monotonic() + within
            while (pids := job_cgroups.members(group)) and time.monotonic() < deadline:
                killed.update(pids)
                job_cgroups.kill(group)
                time.sleep(0.01)
            job_cgroups.remove(group, within=0.5)
        token = self.shim_info(job_id).get("token")
        if not isinstance(token, str) or not token:
            return len(killed)  # a shim of a gq from before tokens, or one that died early
        mark = f"\0{RUN_TOKEN}={token}\0".encode()
        deadline = time.monotonic() + within
        while (pids := _carrying(mark)) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        return len(killed)

    def cgroup_of(self, job_id: int) -> str | None:
        """The cgroup of the job's runs (gq/daemon/cgroups.py); None without cgroups."""
        return None if self.cgroups is None else self.cgroups.of(job_id)

    def stuck_before_its_job(self, job_id: int) -> int | None:
        """The pid of the run's shim if it is blocked in the kernel (state D: entering the
        job's directory on a hung mount, or exec'ing a command there) while no process of the
        run exists (none carries its token): killing it then kills nothing of the job's."""
        info = self.shim_info(job_id)
        pid, token = info.get("pid"), info.get("token")
        if not isinstance(pid, int) or pid <= 0 or not isinstance(token, str) or not token:
            return None
        if not _proc_state(pid).startswith(_STATES["D"]):
            return None
        if _carrying(f"\0{RUN_TOKEN}={token}\0".encode()):
            return None
        return pid

    def kill_shim(self, shim: Shim) -> None:
        """SIGKILL a shim (through its pidfd): its run's end is then read as a dead shim's."""
        try:
            signal.pidfd_send_signal(shim.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def holders(self, job_id: int) -> str:
        """What still holds a stopping run, in words: its shim and what is left of its
        processes (those whose environment carries the run's token), each with its state and,
        in the kernel, what it waits in (a hung mount: `fuse_get_req`, `nfs_...`)."""
        info = self.shim_info(job_id)
        parts = []
        pid = info.get("pid")
        if isinstance(pid, int) and pid > 0:
            parts.append(f"its shim (pid {pid}) {_proc_state(pid)}")
        token = info.get("token")
        if isinstance(token, str) and token:
            left = _carrying(f"\0{RUN_TOKEN}={token}\0".encode())
            if left:
                shown = ", ".join(f"{p} {_proc_state(p)}" for p in left[:3])
                more = f" and {len(left) - 3} more" if len(left) > 3 else ""
                parts.append(f"{len(left)} of its processes: {shown}{more}")
        return "; ".join(parts) or "its shim, which has not said its pid"

    def exit_record(self, job_id: int) -> dict | None:
        """What the run's shim recorded when its job ended; None: nothing (yet)."""
        try:
            with open(self.lock_path(job_id), "rb") as f:
                record = parse_exit_record(os.pread(f.fileno(), EXIT_RECORD_ROOM, EXIT_AT))
        except OSError:
            record = None
        return self._older_record(job_id) if record is None else record

    def _older_record(self, job_id: int) -> dict | None:
        """The exit record of a shim of an older gq, still running when it was upgraded."""
        self._older.add(job_id)  # forget() looks for its files
        try:
            return json.loads(self.exit_path(job_id).read_text())
        except (OSError, ValueError):
            return None

    def ask(self, shim: Shim, request: signal.Signals) -> None:
        """Send the shim a request (shim.CANCEL, PREEMPT or TIME_UP): it acts on it, the daemon
        learns of the end through shim.watch_fd. The request is marked in the run's lock file
        first: a shim that has taken another run since acts only on what is marked in its
        own."""
        if not shim.takes_requests:
            request = signal.SIGTERM
        self._mark(shim.job_id, REQUEST_AT + int(request))
        try:
            signal.pidfd_send_signal(shim.pidfd, request)
        except ProcessLookupError:
            pass

    def mark_thawed(self, job_id: int) -> None:
        """Tell the run's shim, before its processes go on, that they are thawed (THAWED_AT):
        its warning before the time limit is then due that long after the thaw."""
        self._mark(job_id, THAWED_AT)

    def _mark(self, job_id: int, at: int) -> None:
        """Set byte `at` of the run's lock file to 1, for its shim to read."""
        try:
            fd = os.open(self._lock(job_id), os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.pwrite(fd, b"\1", at)
            finally:
                os.close(fd)
        except OSError:  # no run file: the shim has ended, and asks nothing of the mark
            pass

    def release(self, shim: Shim) -> None:
        """The run's end is recorded: its shim waits for the next run (one of this spawner's,
        alive, while fewer than IDLE wait), or is let go."""
        if shim.end_fd is not None:
            os.close(shim.end_fd)
        ours = shim.generation == self.generation and self._sock is not None
        if ours and len(self._idle) < IDLE and not readable(shim.pidfd):
            self._idle.append((shim, time.monotonic()))
            return
        os.close(shim.pidfd)
        if ours:
            self._retire(shim.pid)

    def _take_idle(self) -> int | None:
        """The pid of a waiting shim of this spawner, taken for a run; None: a new one."""
        while self._idle:
            shim, _since = self._idle.pop()
            os.close(shim.pidfd)  # the spawner's answer brings a new one
            if shim.generation == self.generation:
                return shim.pid
        return None

    def retire_idle(self, older_than: float = IDLE_FOR) -> None:
        """Let go of the shims that have waited longer than `older_than` seconds."""
        now = time.monotonic()
        while self._idle and now - self._idle[0][1] > older_than:
            shim, _since = self._idle.pop(0)
            os.close(shim.pidfd)
            self._retire(shim.pid)

    def _retire(self, pid: int) -> None:
        if self._sock is not None:
            try:
                send(self._sock, {"retire": pid}, [])
            except OSError:  # the spawner is gone, and its shims with it
                pass

    def run_ids(self) -> list[int]:
        """Jobs with a run file: running, or ended with their end not yet recorded."""
        return sorted(int(p.stem) for p in self.run_root.glob("*.lock") if p.stem.isdigit())

    def finished(self, job_id: int) -> None:
        """The run's end is in the store: its files may go, at the next forget_finished()."""
        self._finished[job_id] = None

    def forget_finished(self) -> None:
        """Remove the files of finished runs. Kept off the path from one job's end to the
        next one's start, as unlinks are slow on some disks; should the daemon die first,
        the next one removes them when it recovers."""
        for job_id in self._finished:
            self.forget(job_id, looked=True)
        self._finished.clear()

    def forget(self, job_id: int, looked: bool = False) -> None:
        """Remove a finished run's files once its exit is in the store: its lock file is
        blanked (zeros) and kept for another run, or deleted once enough are kept. `looked`:
        this supervisor looked for its exit record, so knows whether an older gq's shim may
        have left files of its own."""
        if job_id in self._older or not looked:
            self._older.discard(job_id)
            exit_path = self.exit_path(job_id)
            for path in (exit_path, Path(f"{exit_path}.tmp")):  # an older gq's
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        lock = self._lock(job_id)
        if len(self._spares) < SPARES and str(job_id) not in self._spares:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                return
            try:
                # Never one a process still holds (a run recorded while its shim lived on).
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # Blanked first: a daemon killed in between leaves a blank lock file, which
                # says "never started" of a job that no longer holds anything. Zeros, not a
                # truncation: the blocks stay the file's (freeing them is slow on a disk
                # mounted with `discard`), and the next shim's room is taken already.
                _blank(fd)
                os.rename(lock, f"{self.spare_dir}/{job_id}")
                self._spares.append(str(job_id))
                return
            except OSError:
                pass
            finally:
                os.close(fd)
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass

    def locked(self, path: Path) -> bool:
        """Whether a process holds this run file's lock: a shim (or a freeze helper) alive."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False


def _blank(fd: int) -> None:
    """Zeros over a run's lock file: no shim's pid, no exit record (a record reads as none)."""
    os.pwrite(fd, bytes(RUN_FILE_SIZE), 0)


_STATES = {"R": "running", "S": "sleeping", "D": "blocked in the kernel", "T": "stopped",
           "t": "stopped", "Z": "a zombie"}


def _proc_state(pid: int) -> str:
    """'blocked in the kernel (in fuse_get_req)', 'sleeping'...: from /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return "gone"
    words = _STATES.get(state, state)
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read().strip()
    except OSError:
        wchan = ""
    return f"{words} (in {wchan})" if wchan and wchan != "0" else words


def _carrying(mark: bytes) -> list[int]:
    """The live processes whose environment holds `mark` (a zombie's reads as empty)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = b"\0" + f.read()
        except OSError:  # gone, or another user's (a user daemon reads its own only)
            continue
        if mark in environ:
            found.append(int(name))
    return found
