"""Reading files in a directory a user controls: only that user's own regular files, reached
without following any link, opened without blocking.

A system daemon runs as root, and each user can write their directory `users/NAME/` (its
`logs/` and `checkpoints/`): whatever the daemon opens there could be a link to root's files,
a FIFO that blocks `open()`, or another user's file hard-linked in. So each path is walked one
component at a time from the user's directory (itself checked: a real directory of theirs),
never through a link (O_NOFOLLOW at every step), the last one opened non-blocking, and only a
regular file (or, for checkpoints, a directory) owned by the job's user is read. What root reads
this way is what the user could read themselves. docs/admin.md lists every place that does.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_owned(path: str | os.PathLike, owner: int | None, base: str | os.PathLike | None = None,
               directory: bool = False) -> int | None:
    """A read-only fd of `path`, or None when it is missing or not a plain file (a directory
    with `directory`) owned by `owner` (None: any owner, for a daemon of one user's own).

    `base`: the directory the user controls; every component from it down is walked without
    following links, and `base` itself must be the owner's. Without it only the last
    component is protected (the caller vouches for the directories above)."""
    path = Path(path)
    start = Path(base) if base is not None else path.parent
    try:
        parts = path.relative_to(start).parts
    except ValueError:
        return None
    if not parts:
        return None
    fds: list[int] = []
    try:
        fds.append(os.open(start, _DIR))
        if not _owned(fds[-1], owner, stat.S_ISDIR):
            return None
        for part in parts[:-1]:
            fds.append(os.open(part, _DIR, dir_fd=fds[-1]))
            if not _owned(fds[-1], owner, stat.S_ISDIR):
                return None
        fd = os.open(parts[-1], (_DIR if directory else _FILE), dir_fd=fds[-1])
    except OSError:  # missing, a link (ELOOP, ENOTDIR), not ours to enter
        return None
    finally:
        for d in fds:
            os.close(d)
    if not _owned(fd, owner, stat.S_ISDIR if directory else stat.S_ISREG):
        os.close(fd)
        return None
    return fd


def _owned(fd: int, owner: int | None, kind) -> bool:
    st = os.fstat(fd)
    return kind(st.st_mode) and (owner is None or st.st_uid == owner)


def read_owned(path: str | os.PathLike, owner: int | None, offset: int, size: int,
               base: str | os.PathLike | None = None) -> bytes:
    """Up to `size` bytes from `offset` of the owner's regular file at `path` (b"" when it
    is missing, or is not such a file)."""
    fd = open_owned(path, owner, base)
    if fd is None:
        return b""
    try:
        return os.pread(fd, size, offset)
    except OSError:
        return b""
    finally:
        os.close(fd)


def job_file_owner(layout, job) -> tuple[int | None, Path | None]:
    """Whose files a job's are, and the directory they control: a system daemon's users own
    theirs (users/NAME); a daemon of one user's own owns all of its files."""
    if not layout.system:
        return None, None
    return job.uid, layout.user_dir(job.user)


def checkpoint_times(layout, jobs: list) -> dict[int, float]:
    """When each job last wrote into its GQ_CHECKPOINT_DIR (the directory, or a file in it):
    the work since then is what preempting it loses."""
    out = {}
    for job in jobs:
        newest = None
        # In the user's own directory: entered only if theirs, never through a link.
        fd = open_owned(layout.checkpoint_dir(job.id, job.user), *job_file_owner(layout, job),
                        directory=True)
        if fd is None:
            continue
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                    newest = mtime if newest is None else max(newest, mtime)
            newest = max(newest or 0.0, os.fstat(fd).st_mtime)
        except OSError:
            pass
        finally:
            os.close(fd)
        if newest is not None:
            out[job.id] = newest
    return out
