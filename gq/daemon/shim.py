"""The job shim: forked by the spawner, it runs a job, outlives the daemon, records the exit
durably; then, while its spawner keeps it, it waits for another run (gq/daemon/spawner.py).

The shim is a session leader and a child subreaper, so every process the job starts stays its
descendant, also those that call setsid or double-fork. That is how a cancel reaches them all,
and how the shim knows that nothing of a run is left before it takes the next.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import select
import signal
import socket
import stat
import time
from typing import Callable, NotRequired, TypedDict

from gq.daemon import cgroups
from gq.daemon.attach import Attached, await_caller
from gq.daemon.diskfull import disk_is_full
from gq.daemon.jobfiles import open_log
from gq.protocol.fdpass import receive

PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
AT_FDCWD = -100
RENAME_NOREPLACE = 1  # renameat2: fail with EEXIST rather than replace what is there
# Signals that Python, the spawner or the shim set to SIG_IGN: the job must get them back.
IGNORED_BY_US = (
    signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
    signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM,
)


# What the daemon asks of a shim, by the signal it sends it (through a pidfd, so never to a
# reused pid). The shim keeps them blocked and takes them with sigtimedwait: no handler can
# interrupt it halfway through reaping. The same request twice is harmless, so a restarted
# daemon may repeat whatever it finds recorded.
CANCEL = signal.SIGTERM  # SIGTERM to the tree, SIGKILL after kill_wait
PREEMPT = signal.SIGUSR1  # the checkpoint signal to the job, SIGTERM+SIGKILL after its grace
TIME_UP = signal.SIGUSR2  # SIGTERM to the tree, SIGKILL after the job's grace
REQUESTS = {CANCEL: "cancel", PREEMPT: "preempt", TIME_UP: "time_up"}
WATCHED = (signal.SIGCHLD, *REQUESTS)
# When a preempted job's grace is over: SIGTERM to what is left, SIGKILL this much later.
LAST_WORDS = 1.0


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
    run_dir: str  # where the run's lock file is, the exit record in it (EXIT_AT)
    kill_wait: float  # seconds between SIGTERM and SIGKILL when the job is cancelled
    # Seconds its process may take to reach its command (under a system daemon); absent:
    # START_TIMEOUT.
    start_timeout: float
    # The run's own cgroup v2 (gq/daemon/cgroups.py), which its process joins before its
    # command and which ends it whole; None (or absent): none, a sweep of its tree ends it.
    cgroup: str | None
    max_procs: int | None  # its pids.max ([host] max_procs_per_job); None: no bound
    grace: float  # seconds between the checkpoint signal (or the time limit) and SIGKILL
    checkpoint_signal: int  # sent to the main process (its group with signal_group)
    signal_group: bool
    # #SBATCH --signal without B: the processes under the main one (a script's steps), never
    # the batch shell itself, as sbatch sends it
    signal_steps: NotRequired[bool]
    warn_after: float | None  # seconds after the start to send the checkpoint signal
    # Under a system daemon, whom the job runs as (gq/daemon/identity.py); None: as the shim.
    uid: int | None
    gid: int | None
    groups: list[int] | None  # supplementary groups, exactly these
    umask: int | None  # the submitter's; None: the shim's own
    # In the job's environment as GQ_RUN_TOKEN: how its processes are found should the shim
    # die (Supervisor.end_leftovers); also those that left its session.
    token: str
    # Whether this run's logs and checkpoint directory, should it leave them empty, may become
    # those of the shim's next run (keep_empty): false when something reads them after the
    # end (a --notify command, the host's on_finish hook) or when the shim is root. Absent:
    # false.
    recyclable: bool
    # A `gq run` job (gq/daemon/attach.py): {"key", "no_hangup", "log"}; absent or None: batch.
    attach: dict | None


EXIT_RECORD_ROOM = 4096  # bytes reserved for a run's exit record; one takes about 250
# The run's lock file holds what the shim says of itself (its pid, run and token, at offset 0)
# and, from this offset, its exit record: one file a run, not three (a file's creation costs
# up to a millisecond on some disks, more than anything else a trivial job's run does).
EXIT_AT = 4096
# From here, a byte for each signal number: 1 when the daemon asked this run for what that signal
# means (Supervisor.ask). A shim takes one run after another, and a request sent for its last
# run may arrive during the next one.
REQUEST_AT = 8192
# 1 when the daemon has thawed the run (Supervisor.mark_thawed): a thaw starts a new run
# (docs/preemption.md), so the warning before the time limit is due that long after it.
THAWED_AT = REQUEST_AT + 127
RUN_FILE_SIZE = REQUEST_AT + 128
ERROR_ROOM = 500  # characters of why a job could not start kept in the record (JSON: < 3 KiB)


def reserve_exit_room(lock_fd: int) -> None:
    """Take the room for the exit record now, while there is some: the shim writes it there
    however full the disk is by then."""
    try:
        os.pwrite(lock_fd, b" " * EXIT_RECORD_ROOM, EXIT_AT)
    except OSError:  # not even that much room: the shim tries anyway when the job ends
        pass


def write_exit_record(lock_fd: int, run_dir: str, record: dict) -> None:
    """Write the exit record over its reserved room, so that it survives a power cut. A
    record cut short by one reads as none: the run then looks as if its shim died."""
    os.pwrite(lock_fd, json.dumps(record).encode(), EXIT_AT)
    os.fdatasync(lock_fd)  # into room taken before: the file's size and blocks are as they were
    dir_fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)  # the lock file's name, too
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def parse_exit_record(data: bytes) -> dict | None:
    """The exit record in what was read of a lock file from EXIT_AT; None: none written."""
    try:  # after the record: what is left of the room (spaces), or of a blanked file (zeros)
        record = json.loads(data.rstrip(b"\0 ") or b"null")
    except ValueError:  # a record cut short
        return None
    return record if isinstance(record, dict) else None


def run_shim(spec: ShimSpec, lock_fd: int, end_fd: int, channel: socket.socket | None) -> None:
    """Body of the forked shim: runs `spec`, then each run its spawner hands it over `channel`,
    one after another, until the spawner lets it go. Never returns normally: the caller must
    os._exit.

    Each run comes with its lock file (`lock_fd`, locked by the daemon and inherited: the shim
    holds the lock for as long as the run lasts, and writes its pid into the file) and the
    write end of a pipe (`end_fd`) that the shim closes once the run's exit is recorded: how
    the daemon learns of the end of a run whose shim goes on living."""
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)  # the spawner forked us with them blocked
    os.setsid()
    _close_fds_except((lock_fd, end_fd) + ((channel.fileno(),) if channel else ()))
    # stdout and stderr stay the daemon's, for a traceback should the shim itself fail.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)
    for sig in WATCHED:  # blocked, and taken by sigtimedwait; a blocked SIGCHLD stays pending
        signal.signal(sig, signal.SIG_DFL)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    umask = os.umask(0)
    os.umask(umask)
    reused = False
    spares: dict[str, str] = {}  # empty files kept for the next run (keep_empty)
    while True:
        take_spares(spares, spec)
        _run(spec, lock_fd, reused)
        # Never a run with another's processes.
        goes_on = channel is not None and not _has_children()
        if goes_on and spec.get("recyclable"):
            keep_empty(spec, spares)  # while the lock is held: see keep_empty
        os.close(lock_fd)  # the run is over: its lock goes (its record is on disk)
        if not goes_on:
            if channel is not None:
                channel.close()  # first: the spawner hands this shim nothing more
            os.close(end_fd)
            drop_spares(spares)
            return
        _set_name("gq-shim-idle")
        os.umask(umask)
        os.chdir("/")  # the job's directory is not kept busy (the spawn path entered it)
        os.close(end_fd)  # the daemon learns that the run has ended
        request, fds = receive(channel)
        if request is None:  # the spawner let this shim go, or is gone
            drop_spares(spares)
            return
        spec, (lock_fd, end_fd) = ShimSpec(**request["spec"]), fds
        reused = True


def _run(spec: ShimSpec, lock_fd: int, reused: bool) -> None:
    """One run: the job started, supervised, its leftovers stopped, its exit recorded.

    A request (a signal) counts for a run that is not its shim's first only when the daemon
    marked it in the run's lock file (REQUEST_AT): one sent for the run before may reach the
    shim after it has taken this one."""
    _set_name(f"gq-shim-{spec['job_id']}")
    # Not fsynced: after a power cut the job's processes are gone anyway, and without the pid
    # the daemon simply queues the job again.
    # "requests": this shim takes PREEMPT and TIME_UP (one of an older gq took SIGTERM only).
    os.pwrite(lock_fd, json.dumps({"pid": os.getpid(), "run": spec["run"], "requests": 1,
                                   "token": spec.get("token")}).encode(), 0)
    reserve_exit_room(lock_fd)

    def asked(signo: int) -> bool:
        return not reused or marked(lock_fd, signo)

    def thawed() -> bool:  # once per thaw: the mark is cleared as it is read
        if not marked(lock_fd, THAWED_AT - REQUEST_AT):
            return False
        try:
            os.pwrite(lock_fd, b"\0", THAWED_AT)
        except OSError:
            pass
        return True

    job: dict[str, int] = {}  # "pid" and "status" of the job's own process, once known
    stop, wait, err_offset, out_offset, error = None, spec["kill_wait"], None, None, None
    group = spec.get("cgroup")
    if group and not cgroups.make(group, spec.get("max_procs")):
        group = None
    spec = ShimSpec(**{**spec, "cgroup": group})
    attached = None  # a `gq run`'s terminal or pipes (gq/daemon/attach.py)
    try:
        if spec.get("attach"):
            attached = await_caller(spec, lambda: CANCEL in signal.sigpending() and asked(CANCEL))
            if isinstance(attached, str):  # cancelled, or its caller is gone: nothing runs
                stop = None if attached == "hangup" and spec["attach"].get("no_hangup") else (
                    attached)
                attached = None  # with --no-hangup and no caller: run as a batch job
        if stop is not None:
            pass
        elif CANCEL in signal.sigpending() and asked(CANCEL):  # cancelled before it began
            stop = "cancel"
        else:
            if spec.get("uid") is None:  # else its process, as its user, says (_fork_job)
                err_offset = _log_size(spec["stderr"])
                out_offset = _log_size(spec["stdout"])
            pid, error, code, stop = _start_job(spec, asked, job, attached)
            err_offset, out_offset = job.pop("offsets", (err_offset, out_offset))
            if stop is not None:  # stopped while it hung before its command (killed)
                job["status"] = signal.SIGKILL
            elif pid is None:  # it never ran: no such command, no log, no directory...
                job["status"] = code << 8
            else:
                job["pid"] = pid
                if attached is not None:
                    attached.started(pid)
                stop, wait = _supervise(spec, job, asked, thawed, attached)
    except OSError as e:  # out of processes or descriptors: the job never began
        error = f"could not start the job: {e}"
        job["status"] = 127 << 8  # a wait status: exited with 127, as a shell says "not found"
    # Stop everything that is left: on a stop the whole tree, after a normal end any
    # leftovers (as Slurm does), so no process keeps holding the job's cards.
    killed = False
    try:
        killed = _kill_tree(wait, job, group)
        if group:
            cgroups.remove(group)
    finally:
        code, sig = _decode(job.get("status"))
        record = {"exit_code": code, "signal": sig, "ended_at": time.time(),
                  "stopped": stop is not None, "stop": stop, "killed": killed, "run": spec["run"],
                  "warned": bool(job.get("warned")),
                  "signalled_at": job.get("signalled_at"), "killed_at": job.get("killed_at"),
                  "stderr_offset": err_offset, "stdout_offset": out_offset, "pid": job.get("pid"),
                  "error": error and error[:ERROR_ROOM],
                  "log_full": disk_is_full(_log_disk(spec))}
        try:
            write_exit_record(lock_fd, spec["run_dir"], record)
        finally:
            if attached is not None:  # told once the end is on disk
                attached.finish(record)


def marked(lock_fd: int, signo: int) -> bool:
    """Whether the daemon marked request `signo` in the run's lock file (Supervisor.ask), or
    the thaw (THAWED_AT - REQUEST_AT)."""
    try:
        return os.pread(lock_fd, 1, REQUEST_AT + signo) == b"\1"
    except OSError:
        return False


def _supervise(spec: ShimSpec, job: dict[str, int], asked: Callable[[int], bool],
               thawed: Callable[[], bool], attached: Attached | None = None
               ) -> tuple[str | None, float]:
    """Reap until the job's main process ends or a stop says to kill the tree; answer the
    daemon's requests meanwhile. Returns the stop (None: the job ended by itself) and how long
    what is left of the tree may take to go before SIGKILL."""
    now = time.monotonic()
    warn_at = None if spec["warn_after"] is None else now + spec["warn_after"]
    stop, deadline = None, None
    # Since when the job's process has been stopped (a freeze stops it: gq/daemon/freezer.py,
    # or someone's SIGSTOP): no warning is sent to a process that would only take it once it
    # goes on. When it goes on, a thaw (`thawed()`) is a new run, with the warning that long
    # after it, as its time limit counts from it; another stop only moves the warning by as
    # long as it lasted, as its time limit does not stop.
    stopped = None
    while True:
        _reap(job)
        now = time.monotonic()
        if "status" in job:  # after a preemption, leftovers get what remains of the grace
            return stop, (spec["kill_wait"] if deadline is None else max(0.0, deadline - now))
        if deadline is not None and now >= deadline:
            return stop, LAST_WORDS  # the grace is over
        if attached is not None and (ask := attached.asked_stop()) is not None:
            return ask[0], spec["kill_wait"] if ask[1] < 0 else ask[1]
        change = _stop_change(job["pid"])
        if change == os.CLD_STOPPED and stopped is None:
            stopped = now
            if attached is not None:
                attached.job_stopped()
        elif change == os.CLD_CONTINUED:
            if thawed():
                if spec["warn_after"] is not None:
                    warn_at, job["warned"] = now + spec["warn_after"], 0
            elif stopped is not None and warn_at is not None:
                warn_at += now - stopped
            stopped = None
        if warn_at is not None and stopped is None and now >= warn_at:
            _checkpoint_signal(spec, job)
            job["warned"] = 1  # an end after this is the time limit's doing (gq/daemon/ending.py)
            warn_at = None
        wake = min((t for t in (None if stopped else warn_at, deadline) if t is not None),
                   default=None)
        if wake is None:
            info = signal.sigwaitinfo(WATCHED)
        else:
            info = signal.sigtimedwait(WATCHED, max(0.0, wake - now))
        now = time.monotonic()  # the wait may have lasted: a grace counts from the request
        request = REQUESTS.get(info.si_signo) if info is not None else None
        if request is not None and not asked(info.si_signo):  # one for an earlier run
            request = None
        if request == "cancel":
            return request, spec["kill_wait"]
        if request == "time_up" and stop is None:
            return request, spec["grace"]
        if request == "preempt" and stop is None:
            stop, deadline = request, now + spec["grace"]
            _signal_all(_descendants(), signal.SIGCONT)  # a stopped job could not checkpoint
            _checkpoint_signal(spec, job)
            job["signalled_at"] = time.time()  # for the history: when, and the kill how late


def _stop_change(pid: int) -> int | None:
    """Whether the job's main process has been stopped (CLD_STOPPED) or continued
    (CLD_CONTINUED) since last asked; None: neither. Each is told once; an exit is left to
    _reap."""
    try:
        info = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WCONTINUED | os.WNOHANG)
    except ChildProcessError:
        return None
    return None if info is None else info.si_code


def _checkpoint_signal(spec: ShimSpec, job: dict[str, int]) -> None:
    if spec.get("signal_steps"):
        _signal_all(_descendants(job["pid"]), spec["checkpoint_signal"])
        return
    try:
        if spec["signal_group"]:
            os.killpg(job["pid"], spec["checkpoint_signal"])
        else:
            os.kill(job["pid"], spec["checkpoint_signal"])
    except ProcessLookupError:  # it has just ended; the next reap sees it
        pass


def _log_disk(spec: ShimSpec) -> str:
    """Where to see whether the run's log filled its disk: its directory; as root (a system
    daemon's shim), the daemon's own directory, never a path a user may point elsewhere (a
    hung mount would block the shim before it records the end)."""
    if spec.get("uid") is None:
        return os.path.dirname(spec["stdout"])
    return os.path.dirname(spec["run_dir"])


def _log_size(path: str) -> int | None:
    """Where this run's output starts in a log that earlier runs appended to."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return None


def _close_fds_except(keep: tuple[int, ...]) -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def load_libc() -> None:
    """Load the C library for prctl once, in the spawner, rather than in every shim it forks."""
    global _libc
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        _libc = None


_libc: ctypes.CDLL | None = None


def _prctl(option: int, arg) -> None:
    """Become the subreaper of the job's tree (PR_SET_CHILD_SUBREAPER), or set the name that ps
    and top show (PR_SET_NAME)."""
    try:
        libc = _libc or ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, arg, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: orphans go to init
        pass


def _set_name(name: str) -> None:
    _prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))


SPARE = ".gq-spare-"  # the name of a file kept for a shim's next run: SPARE, its pid, the suffix


def keep_empty(spec: ShimSpec, spares: dict[str, str]) -> None:
    """Keep the logs and checkpoint directory that the run just ended left empty, renamed to
    names of this shim's own (SPARE) beside them, for its next run (take_spares): on some
    disks (ext4 without a journal, after many files were deleted) creating a file costs up to
    a millisecond, more than the rest of a trivial job's run. An empty log or directory says
    nothing that its absence does not (`gq logs` prints nothing for either).

    Done before the run's lock goes and before the daemon learns of the end: until then the
    daemon can start no other run of this job, which would open these very files. Only from
    runs that allow it (`recyclable`); never a file with anything in it or a second link."""
    for key, suffix in (("stdout", ".out"), ("stderr", ".err"), ("checkpoint_dir", "")):
        if key in spares or not _empty(spec[key], directory=not suffix):
            continue
        spare = os.path.join(os.path.dirname(spec[key]), f"{SPARE}{os.getpid()}{suffix}")
        if _rename_new(spec[key], spare):
            spares[key] = spare


def take_spares(spares: dict[str, str], spec: ShimSpec) -> None:
    """Rename the files kept by keep_empty to the run about to start, dated now; one whose
    name exists already (a requeued job's log of an earlier run) stays kept."""
    for key, spare in list(spares.items()):
        if _rename_new(spare, spec[key]):
            del spares[key]
            try:
                os.utime(spec[key])
            except OSError:
                pass


def drop_spares(spares: dict[str, str]) -> None:
    """Remove the files kept for a next run that will not come (the shim exits)."""
    for spare in spares.values():
        try:
            if os.path.isdir(spare):
                os.rmdir(spare)
            else:
                os.unlink(spare)
        except OSError:
            pass
    spares.clear()


def sweep_spares(folders: list[str]) -> None:
    """Remove what shims kept for a next run in these folders (a daemon starting: the shims
    of the last one take no more runs, and one killed could not remove its own)."""
    for folder in folders:
        try:
            names = [n for n in os.listdir(folder) if n.startswith(SPARE)]
        except OSError:
            continue
        drop_spares({name: os.path.join(folder, name) for name in names})


def _empty(path: str, directory: bool) -> bool:
    """An empty regular file (with one name) or an empty directory of the shim's user."""
    try:
        st = os.lstat(path)
        if st.st_uid != os.getuid():
            return False
        if not directory:
            return stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_nlink == 1
        if not stat.S_ISDIR(st.st_mode):
            return False
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _rename_new(old: str, new: str) -> bool:
    """Rename old to new unless new exists (renameat2's RENAME_NOREPLACE); whether it was.
    Where it cannot be (EEXIST, another filesystem, a C library, kernel or filesystem
    without it), nothing changes: the run creates its own files."""
    try:
        libc = _libc or ctypes.CDLL(None, use_errno=True)
        return libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new),
                              RENAME_NOREPLACE) == 0
    except (OSError, AttributeError):
        return False


def _start_job(spec: ShimSpec, asked: Callable[[int], bool], job: dict,
               attached: Attached | None = None
               ) -> tuple[int | None, str | None, int, str | None]:
    """Start the job's process: its pid (None if it never ran), why it could not start (None:
    it runs the command), the exit code that stands for that (127, 126), and the stop asked
    for while it was starting (None: none). A forked one's logs' sizes go to job["offsets"]."""
    if spec.get("uid") is None and not spec.get("cgroup") and attached is None:
        return (*_spawn_job(spec), None)  # its cgroup, or a caller's terminal: joined forked
    if attached is not None:
        attached.prepare(spec.get("uid"), spec.get("gid"))
    return _fork_job(spec, asked, job, attached)


def _spawn_job(spec: ShimSpec) -> tuple[int | None, str | None, int]:
    """For a shim that runs as the job's user already (a user's own daemon): what a forked
    child does (_become_job) done here, then the command started by posix_spawn, which execs
    without a copy of the shim's memory (vfork): about a millisecond of a trivial job's run
    on the 2-core development machine, in page-table copies, copy-on-write faults and the
    copy's teardown at exec."""
    if spec.get("umask") is not None:
        os.umask(spec["umask"])
    fds: list[int] = []
    try:
        try:
            fds.append(open_log(spec["stderr"]))
            fds.append(open_log(spec["stdout"]))
            os.makedirs(spec["checkpoint_dir"], mode=0o700, exist_ok=True)
        except OSError as e:
            return None, _said(fds, f"could not start the job: {e}"), 127
        err, out = fds
        try:
            os.chdir(spec["cwd"])  # the shim's own paths are absolute
        except OSError as e:
            return None, _said(fds, f"cannot enter {spec['cwd']}: {e.strerror}"), 127
        try:
            return _spawnvpe(spec["command"], spec["env"], out, err), None, 0
        except OSError as e:
            code = 126 if e.errno in (errno.EACCES, errno.ENOEXEC, errno.EISDIR) else 127
            return None, _said(fds, f"cannot run {spec['command'][0]!r}: {e.strerror}"), code
    finally:
        for fd in fds:
            os.close(fd)


def _said(fds: list[int], message: str) -> str:
    """Why the job did not start, also in its stderr log when that is open (fds[0])."""
    if fds:
        try:
            os.write(fds[0], f"gq: {message}\n".encode(errors="replace"))
        except OSError:
            pass
    return message


def _spawnvpe(argv: list[str], env: dict[str, str], out: int, err: int) -> int:
    """posix_spawn with execvpe's search of the job's own PATH (posix_spawnp would search the
    shim's), into a process group of its own, with out and err as its stdout and stderr (its
    stdin is the shim's /dev/null), no signal blocked and none ignored."""
    options = dict(file_actions=[(os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, err, 2)],
                   setpgroup=0, setsigmask=(), setsigdef=IGNORED_BY_US)
    name = argv[0]
    if os.sep in name:
        return os.posix_spawn(name, argv, env, **options)
    last, saved = None, None
    for folder in os.get_exec_path(env):
        path = os.path.join(folder, name)
        if not os.path.exists(path):  # as execvpe goes on past ENOENT, without a spawn
            continue
        try:
            return os.posix_spawn(path, argv, env, **options)
        except (FileNotFoundError, NotADirectoryError) as e:
            last = e
        except OSError as e:  # execvpe says the first such error, once nothing ran
            last, saved = e, saved or e
    raise saved or last or FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


def _fork_job(spec: ShimSpec, asked: Callable[[int], bool], job: dict,
              attached: Attached | None = None
              ) -> tuple[int | None, str | None, int, str | None]:
    """Fork the job's process, which becomes the job's user (a system daemon's shim runs as
    root); what _start_job returns. The child says why it could not start through a pipe that
    its exec closes. Its start may hang (its directory or command on a hung mount): the
    shim waits for it at most `start_timeout` seconds, and takes a stop meanwhile; either
    kills the child, so that the run ends and its cards are freed."""
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_r)
            _become_job(spec, report_w, attached)
        finally:
            os._exit(127)
    os.close(report_w)
    try:
        said, stop = _start_report(report_r, spec.get("start_timeout") or START_TIMEOUT, asked)
    finally:
        os.close(report_r)
    if said is None or stop is not None:  # it hangs before its command: it never runs it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if stop is not None:
            return None, None, 137, stop
        wait = spec.get("start_timeout") or START_TIMEOUT
        return None, (f"the job did not start within {wait:g}s: opening its logs, entering "
                      f"{spec['cwd']} or starting {spec['command'][0]!r} hangs (a hung "
                      "mount?); killed"), 127, None
    if said.startswith("\0"):  # the sizes of its logs, as it opened them (_become_job)
        sizes, _, said = said[1:].partition("\0")
        job["offsets"] = tuple(int(n) for n in sizes.split())
    return pid, said or None, 127, None


# Seconds a job's process may take from its fork to its command (its identity, logs,
# directory, exec): ShimSpec's start_timeout, [daemon] start_timeout.
START_TIMEOUT = 60.0
START_POLL = 0.05  # seconds between looks for a stop while a start hangs


def _start_report(report: int, timeout: float, asked: Callable[[int], bool]
                  ) -> tuple[str | None, str | None]:
    """Read what the job's child says of its start until its exec closes the pipe: (what it
    said, None), '' when it runs its command; (None, None) after `timeout` seconds; (None,
    stop) when the daemon asked a stop meanwhile (the request is taken)."""
    poller = select.poll()
    poller.register(report, select.POLLIN)
    deadline = time.monotonic() + timeout
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, None
        if poller.poll(min(left, START_POLL) * 1000):
            chunk = os.read(report, 4096)
            if not chunk:
                return b"".join(chunks).decode(errors="replace"), None
            chunks.append(chunk)
            continue
        for signo in set(REQUESTS) & signal.sigpending():
            signal.sigtimedwait([signo], 0)
            if asked(signo):
                return None, REQUESTS[signo]


def _become_job(spec: ShimSpec, report: int, attached: Attached | None = None) -> None:
    """In the forked child: take on the job's identity, open its logs, exec its command
    (attached to a `gq run`: with the caller's pipes, or a terminal of its own)."""
    err = None
    # First the signals: the shim's mask and ignored signals must not make a child that
    # blocks in anything below one that a SIGTERM cannot end. (Handled signals reset
    # themselves at exec; ignored ones would stay ignored.)
    for sig in IGNORED_BY_US:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        if spec.get("cgroup"):  # as root, before anything of the user's can run
            cgroups.join(spec["cgroup"])
        if attached is None:
            os.setpgid(0, 0)
        else:
            attached.job_stdio()
        if spec.get("uid") is not None:
            _drop_privileges(spec["uid"], spec["gid"], spec["groups"])
        if spec.get("umask") is not None:
            os.umask(spec["umask"])
        err = open_log(spec["stderr"])
        out = open_log(spec["stdout"])
        # Where this run's output starts in each: said by it, so that its shim, as root,
        # looks up no path of the user's (which may lead to a hung mount).
        os.write(report, f"\0{os.fstat(err).st_size} {os.fstat(out).st_size}\0".encode())
        os.makedirs(spec["checkpoint_dir"], mode=0o700, exist_ok=True)
        if attached is not None:
            attached.give_logs(out, err)
    except OSError as e:
        _fail(report, err, f"could not start the job: {e}", 127)
    if attached is None:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
    try:
        os.chdir(spec["cwd"])
    except OSError as e:  # as the user: a directory of someone else's may be closed to them
        _fail(report, 2, f"cannot enter {spec['cwd']}: {e.strerror}", 127)
    try:
        os.execvpe(spec["command"][0], spec["command"], spec["env"])
    except OSError as e:
        code = 126 if e.errno in (errno.EACCES, errno.ENOEXEC, errno.EISDIR) else 127
        _fail(report, 2, f"cannot run {spec['command'][0]!r}: {e.strerror}", code)


def _drop_privileges(uid: int, gid: int, groups: list[int]) -> None:
    """Become the user for good: exactly their groups, then their gid, then their uid."""
    os.setgroups(groups)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise PermissionError(f"could not become uid {uid}, gid {gid}")


def _fail(report: int, log_fd: int | None, message: str, code: int) -> None:
    """Say why the job could not start, in its log (when open) and to the shim; exit."""
    if log_fd is not None:
        try:
            os.write(log_fd, f"gq: {message}\n".encode(errors="replace"))
        except OSError:
            pass
    try:
        os.write(report, message.encode(errors="replace"))
    except OSError:
        pass
    os._exit(code)


def _descendants(pid: int | None = None) -> list:
    """The processes under this shim, or under `pid`."""
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
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


def _kill_tree(grace: float, job: dict[str, int], group: str | None = None) -> bool:
    """SIGTERM (and SIGCONT, for stopped ones) to every descendant, SIGKILL after grace: to
    the run's cgroup at once where it has one. Whether anything had to be killed."""
    _reap(job)
    # We are the subreaper: with no child left there is no descendant left either, and the
    # common case needs no walk over every process of the machine.
    if not _has_children():
        return False
    procs = _descendants()
    if not procs:
        return False
    _signal_all(procs, signal.SIGTERM)
    _signal_all(procs, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(job)
        if not _descendants():
            break
        time.sleep(0.02)
    killed = False
    # Its cgroup ends it whole (cgroup.kill), whatever it forks meanwhile; what is left
    # outside it (none, unless its process could not join) goes as below.
    while group and cgroups.populated(group):
        if not killed:
            job["killed_at"] = time.time()
        killed = True
        cgroups.kill(group)
        time.sleep(0.01)
        _reap(job)
    # Kill until nothing is left: a process may fork while we look. Each round stops the
    # whole tree first (SIGSTOP), then kills it: a stopped process forks no more, so a fork
    # bomb cannot outrun the walk over its tree.
    while procs := _descendants():
        if not killed:
            job["killed_at"] = time.time()
        killed = True
        _signal_all(procs, signal.SIGSTOP)
        _signal_all(_descendants(), signal.SIGSTOP)  # those forked while the first were
        _signal_all(_descendants(), signal.SIGKILL)
        time.sleep(0.01)
        _reap(job)
    _reap(job)
    return killed


def _decode(status: int | None) -> tuple[int | None, int | None]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return 128 + sig, sig
    return os.waitstatus_to_exitcode(status), None
