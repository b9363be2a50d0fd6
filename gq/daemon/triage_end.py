"""Why a run failed, as the daemon sees it: the ends of its logs, its exit status and the
kernel's OOM killer, handed once, as the run ends, to the pure classifier (gq/triage)."""

from __future__ import annotations

import errno
import os

from gq.daemon.layout import Layout
from gq.daemon.oom import run_log
from gq.daemon.userfiles import job_file_owner
from gq.model import Job
from gq.triage.classify import EndFacts, Triage, classify
from gq.triage.rules import DISK_FULL, TIMEOUT_SIGNAL, UNKNOWN

KMSG = "/dev/kmsg"
KMSG_RECORDS = 20000  # the kernel's ring buffer holds fewer; a bound on what one end costs
LOG_FULL = "the disk holding the job's logs was full when it ended"


def triage_run(layout: Layout, job: Job, record: dict, kmsg: str = KMSG) -> Triage:
    """The class of a run that ended by itself with a non-zero status."""
    owner, base = job_file_owner(layout, job)
    out = run_log(layout.stdout(job.id, job.user), record.get("stdout_offset"), owner, base)
    err = run_log(layout.stderr(job.id, job.user), record.get("stderr_offset"), owner, base)
    signal = record.get("signal")
    kernel = kernel_oom_line(record.get("pid"), kmsg) if signal == 9 else None
    # stderr last: at equal weight, what a dying process printed there came last
    text = "\n".join(t for t in (out, err, record.get("error") or "") if t)
    triage = classify(text, EndFacts(exit_code=record.get("exit_code"), signal=signal,
                                     kernel_oom=kernel))
    if triage.failure == UNKNOWN and record.get("log_full"):
        return Triage(DISK_FULL, [LOG_FULL])
    return triage


def stopped_triage(state: str, reason: str | None) -> Triage | None:
    """The class of a run gq itself ended: at its time limit; a cancel is no failure."""
    if state == "timeout":
        return Triage(TIMEOUT_SIGNAL, [f"gq: {reason or 'time limit reached'}"])
    if state == "lost":
        return Triage(UNKNOWN, [f"gq: {reason}"] if reason else [])
    return None


def kernel_oom_line(pid: int | None, path: str = KMSG) -> str | None:
    """The kernel log's line saying its OOM killer killed `pid`, when the log can be read
    (a system daemon can; a user's often cannot, and then the log's own words decide).
    /dev/kmsg is the kernel's, not a user's: reading it as root is safe."""
    if not pid:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    marks = (f"Killed process {pid} ", f",pid={pid},")
    found = None
    try:
        for _ in range(KMSG_RECORDS):
            try:
                chunk = os.read(fd, 8192)  # one record per read from /dev/kmsg
            except BlockingIOError:
                break  # read to the end of the buffer
            except OSError as e:
                if e.errno == errno.EPIPE:  # overwritten while we read: skip ahead
                    continue
                break
            if not chunk:
                break
            message = chunk.decode(errors="replace").split(";", 1)[-1].split("\n", 1)[0]
            if any(mark in message for mark in marks):
                found = message.strip()
    finally:
        os.close(fd)
    return found
