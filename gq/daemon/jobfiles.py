"""Opening a job's files (its logs, and any file a user may name for a job) so that nothing a
user plants there can block the opener or redirect it: regular files only, no links, no FIFO,
no device, no terminal."""

from __future__ import annotations

import errno
import fcntl
import os
import stat

# O_NONBLOCK: the open of a FIFO or a device returns at once (a FIFO without a reader fails
# with ENXIO) instead of waiting, with the job's cards held, for someone to open the other
# end. O_NOFOLLOW: a link there is refused. O_NOCTTY: a terminal never becomes ours.
SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotARegularFile(OSError):
    """What is at a job's file path is not a regular file (a FIFO, a device, a directory)."""


def open_job_file(path: str, flags: int, mode: int = 0o600) -> int:
    """Open `path` with `flags` (O_WRONLY | O_CREAT | O_APPEND, O_RDONLY...) so that it cannot
    block: the descriptor of a regular file, its O_NONBLOCK cleared; OSError (one line, the
    path in it) for anything else."""
    try:
        fd = os.open(path, flags | SAFE, mode)
    except OSError as e:
        if e.errno == errno.ENXIO:  # a FIFO nobody reads, or a device with nothing behind it
            raise NotARegularFile(f"{path}: not a regular file (a FIFO or a device); "
                                  "remove it and submit again") from None
        if e.errno == errno.ELOOP:
            raise NotARegularFile(f"{path}: not a regular file (a symbolic link); "
                                  "remove it and submit again") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{path}: not a regular file ({_kind(st.st_mode)}); "
                                  "remove it and submit again")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_log(path: str) -> int:
    """A job's log, to append to, made (with its directory) when missing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    try:
        return open_job_file(path, flags)
    except FileNotFoundError:  # no logs directory yet
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        return open_job_file(path, flags)


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a file"
