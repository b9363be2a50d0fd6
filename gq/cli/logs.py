"""`gq logs`: print a job's output file, and follow it until the job ends."""

from __future__ import annotations

import os
import sys
import time

from gq.cli.client import connect
from gq.protocol import GqError

FOLLOW_POLL = 0.2  # seconds between looks at a growing log


def _copy_new(fd: int) -> int:
    copied = 0
    while chunk := os.read(fd, 1 << 16):
        sys.stdout.buffer.write(chunk)
        copied += len(chunk)
    sys.stdout.buffer.flush()
    return copied


def show_log(job_id: str, follow: bool, stderr: bool) -> None:
    with connect(timeout=None) as conn:
        job = _print_log(conn, conn.call("show", id=job_id), follow, stderr)
    if job.get("output_truncated"):  # said after the output, where the reader looks
        print(f"gq: job {job['id']}'s output is truncated: the disk holding it filled up "
              "while it ran", file=sys.stderr)


def _print_log(conn, job: dict, follow: bool, stderr: bool) -> dict:
    """Print the log (and, following it, what comes until the job ends); the job as last
    seen."""
    path = job["stderr" if stderr else "stdout"]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        if not follow:
            if job["state"] in ("pending", "held"):
                raise GqError(f"job {job['id']} has not started yet: no output") from None
            return job
        fd = None
    said_waiting = False
    while True:
        if fd is None and not said_waiting and job["state"] in ("pending", "held"):
            print(f"gq: job {job['id']} is {job['state']} ({job['reason']}); waiting for it "
                  "to start", file=sys.stderr)
            said_waiting = True
        if fd is None and os.path.exists(path):
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        copied = _copy_new(fd) if fd is not None else 0
        if not follow:
            return job
        if not copied:
            job = conn.call("show", id=str(job["id"]))
            if job["state"] not in ("pending", "held", "running", "preempting"):
                if fd is not None:
                    _copy_new(fd)
                return job
            time.sleep(FOLLOW_POLL)
