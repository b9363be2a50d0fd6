"""`gq logs`: print a job's output file, and follow it until the job ends."""

from __future__ import annotations

import os
import stat
import sys
import time

from gq.cli.client import call
from gq.cli.output import say
from gq.protocol import GqError
from gq.protocol.op_names import Op
from gq.states import ACTIVE, WAITING

FOLLOW_POLL = 0.2  # seconds between looks at a growing log
# A Slurm job's log on a login node is read by a command run there: look less often
SLURM_FOLLOW_POLL = 1.0


def _copy_new(fd: int, path: str) -> int:
    """Print what the log at `path`, open as `fd`, holds past what was printed. A log its job
    left empty may be renamed to another job's once the job has ended (docs/daemon.md, How a
    job runs): whatever is read after that is the other job's, so each chunk is printed only
    if `fd` is still the file at `path` once it has been read."""
    copied = 0
    while chunk := os.read(fd, 1 << 16):
        if not _still(fd, path):
            break
        sys.stdout.buffer.write(chunk)
        copied += len(chunk)
    sys.stdout.buffer.flush()
    return copied


def _still(fd: int, path: str) -> bool:
    try:
        now, opened = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)


def _remote_log(job: dict, follow: bool, stderr: bool) -> None:
    """A peer's job: its log comes through the daemons, a chunk an answer."""
    import base64

    offset = 0
    while True:
        part = call(Op.LOG, id=job["id"], err=stderr, offset=offset)
        data = base64.b64decode(part["data"])
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        offset = part["offset"]
        if data:
            continue
        if not follow or part["state"] not in ACTIVE:
            if not follow and part["state"] in WAITING and not offset:
                raise GqError(f"job {job['id']} has not started yet: no output")
            return
        time.sleep(SLURM_FOLLOW_POLL if "slurm" in job else FOLLOW_POLL)


def _open(path: str, job: dict) -> int | None:
    try:
        # O_NONBLOCK: a FIFO planted at the path (the job's own #SBATCH -o, or its logs
        # directory) must not hang the reader; regular files ignore the flag.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except PermissionError as e:
        import pwd

        if pwd.getpwuid(os.getuid()).pw_name == job["user"]:
            raise GqError(f"cannot read {path}: {e.strerror}") from None
        raise GqError(f"job {job['id']} is {job['user']}'s: its output {path} is readable by "
                      f"{job['user']} only") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise GqError(f"{path} is not a regular file: job {job['id']}'s output is not there")
    return fd


def show_log(job_id: str, follow: bool, stderr: bool) -> None:
    # A connection per question: a daemon closes connections that stay idle, as this one
    # would while a job prints for long.
    job = call(Op.SHOW, id=job_id)
    if isinstance(job["id"], str):  # HOST:ID, on a peer
        return _remote_log(job, follow, stderr)
    array = job.get("array")
    if array and job_id.strip() in ("@", str(array["id"])):  # all of it, element by element
        for element in job["array_jobs"]:
            _one_log(call(Op.SHOW, id=str(element)), follow, stderr, header=True)
        return
    _one_log(job, follow, stderr)


def _one_log(job: dict, follow: bool, stderr: bool, header: bool = False) -> None:
    if header:  # as `tail` heads each of several files
        array = job["array"]
        print(f"==> {array['id']}_{array['index']} ({job['state']}) <==", flush=True)  # ours
        if job["state"] in WAITING and not follow:
            return
    job = _print_log(job, follow, stderr)
    if job.get("output_truncated"):  # said after the output, where the reader looks
        print(f"gq: job {_label(job)}'s output is truncated: the disk holding it filled up "
              "while it ran", file=sys.stderr)


def _label(job: dict) -> str:
    array = job.get("array")
    return f"{array['id']}_{array['index']}" if array else str(job["id"])


def _print_log(job: dict, follow: bool, stderr: bool) -> dict:
    """Print the log (and, following it, what comes until the job ends); the job as last
    seen."""
    path = job["stderr" if stderr else "stdout"]
    fd = _open(path, job)
    if fd is None and not follow:
        if job["state"] in WAITING:
            raise GqError(f"job {_label(job)} has not started yet: no output")
        return job
    said_waiting = False
    while True:
        if fd is None and not said_waiting and job["state"] in WAITING:
            say(f"gq: job {_label(job)} is {job['state']} ({job['reason']}); waiting for it "
                "to start", file=sys.stderr)
            said_waiting = True
        if fd is not None and follow and not _still(fd, path):
            os.close(fd)  # given to another job: its own next run writes a new one
            fd = None
        if fd is None:
            fd = _open(path, job)
        copied = _copy_new(fd, path) if fd is not None else 0
        if not follow:
            return job
        if not copied:
            job = call(Op.SHOW, id=str(job["id"]))
            if job["state"] not in ACTIVE:  # a frozen job is thawed again: keep following
                if fd is None:
                    fd = _open(path, job)
                if fd is not None:
                    _copy_new(fd, path)
                return job
            time.sleep(FOLLOW_POLL)
