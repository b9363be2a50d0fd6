"""The per-job shim: forked by the spawner, outlives the daemon, records the exit durably.

The shim is a session leader and a child subreaper, so every process the job starts stays its
descendant, also those that call setsid or double-fork. That is how a cancel reaches them all.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import time
from typing import TypedDict

PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
# Signals that Python, the spawner or the shim set to SIG_IGN: the job must get them back.
IGNORED_BY_US = (
    signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
    signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM,
)


class ShimSpec(TypedDict):
    """What a shim needs, as plain JSON: it travels from the daemon to the spawner."""

    job_id: int
    run: int  # which run of the job this is: its restart count when it started
    command: list[str]
    cwd: str
    env: dict[str, str]
    stdout: str
    stderr: str
    checkpoint_dir: str
    exit_path: str  # where the shim records the exit status
    grace: float  # seconds between SIGTERM and SIGKILL when the job is stopped


class StopRequested(Exception):
    pass


def write_json_durably(path: str, data: dict) -> None:
    """Write atomically (a reader sees all or nothing) and so that it survives a power cut."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def run_shim(spec: ShimSpec, lock_fd: int) -> None:
    """Body of the forked shim. Never returns normally: the caller must os._exit.

    `lock_fd` is the run's lock file, locked by the daemon and inherited: the shim holds the
    lock for as long as it lives, and writes its pid into the file."""
    os.setsid()
    _close_fds_except((lock_fd,))
    # stdout and stderr stay the daemon's, for a traceback should the shim itself fail.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)

    def on_term(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop is enough
        raise StopRequested()

    signal.signal(signal.SIGTERM, on_term)
    _prctl_setup(spec["job_id"])
    # Not fsynced: after a power cut the job's processes are gone anyway, and without the pid
    # the daemon simply queues the job again.
    os.pwrite(lock_fd, json.dumps({"pid": os.getpid(), "run": spec["run"]}).encode(), 0)

    job: dict[str, int] = {}  # "pid" and "status" of the job's own process, once known
    stopped = False
    try:
        job["pid"] = _start_job(spec)
        _wait_for(job)
    except StopRequested:
        stopped = True
    except OSError as e:  # no log file, no checkpoint directory, out of processes...
        _note_start_failure(spec, e)
        job["status"] = 127 << 8  # a wait status: exited with 127, as a shell says "not found"
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Stop everything that is left: on cancel the whole tree, after a normal end any
    # leftovers (as Slurm does), so no process keeps holding the job's cards.
    try:
        _kill_tree(spec["grace"], job)
    finally:
        code, sig = _decode(job.get("status"))
        write_json_durably(
            spec["exit_path"],
            {"exit_code": code, "signal": sig, "ended_at": time.time(), "stopped": stopped,
             "run": spec["run"]},
        )


def _note_start_failure(spec: ShimSpec, error: OSError) -> None:
    try:
        fd = _open_log(spec["stderr"])
        os.write(fd, f"gq: could not start the job: {error}\n".encode(errors="replace"))
        os.close(fd)
    except OSError:
        pass


def _close_fds_except(keep: tuple[int, ...]) -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _prctl_setup(job_id: int) -> None:
    """Become the subreaper of the job's tree, and show as gq-shim-ID in ps and top."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(f"gq-shim-{job_id}".encode()[:15]), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: orphans go to init
        pass


def _open_log(path: str) -> int:
    # O_NOFOLLOW: a link planted at the log path must not redirect our writes.
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, 0o600)


def _start_job(spec: ShimSpec) -> int:
    os.makedirs(spec["checkpoint_dir"], mode=0o700, exist_ok=True)
    out = _open_log(spec["stdout"])
    err = _open_log(spec["stderr"])
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            os.dup2(devnull, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            # Handled signals reset themselves at exec; ignored ones would stay ignored.
            for sig in IGNORED_BY_US:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.chdir(spec["cwd"])
            os.execvpe(spec["command"][0], spec["command"], spec["env"])
        except OSError as e:
            code = 126 if e.errno in (errno.EACCES, errno.ENOEXEC, errno.EISDIR) else 127
            msg = f"gq: cannot run {spec['command'][0]!r}: {e.strerror}\n"
            os.write(2, msg.encode(errors="replace"))
            os._exit(code)
        finally:
            os._exit(127)
    for fd in (out, err, devnull):
        os.close(fd)
    return pid


def _wait_for(job: dict[str, int]) -> None:
    """Reap every descendant that ends (we are their subreaper) until the job's own process does."""
    while "status" not in job:
        pid, status = os.waitpid(-1, 0)
        if pid == job["pid"]:
            job["status"] = status


def _descendants() -> list:
    import psutil

    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _signal_all(procs, sig) -> None:
    for p in procs:
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass


def _reap(job: dict[str, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == job.get("pid"):
            job["status"] = status


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _kill_tree(grace: float, job: dict[str, int]) -> None:
    """SIGTERM (and SIGCONT, for stopped ones) to every descendant, SIGKILL after grace."""
    _reap(job)
    # We are the subreaper: with no child left there is no descendant left either, and the
    # common case needs no walk over every process of the machine.
    if not _has_children():
        return
    procs = _descendants()
    if not procs:
        return
    _signal_all(procs, signal.SIGTERM)
    _signal_all(procs, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(job)
        if not _descendants():
            break
        time.sleep(0.02)
    # Kill until nothing is left: a process may fork while we look.
    while procs := _descendants():
        _signal_all(procs, signal.SIGKILL)
        time.sleep(0.01)
        _reap(job)
    _reap(job)


def _decode(status: int | None) -> tuple[int | None, int | None]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return 128 + sig, sig
    return os.waitstatus_to_exitcode(status), None
