"""A hung mount, for real: a FUSE filesystem whose server never answers (not even the kernel's
first request), as an NFS server that went away looks to whoever enters it. Every path lookup
below it blocks in the kernel (`fuse_get_req`) until the mount is aborted; SIGKILL still ends
such a wait, SIGTERM does not. Needs root and /dev/fuse; tests that use it skip otherwise.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

MNT_DETACH = 2


def require_fuse() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount the hung FUSE filesystem")
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        pytest.skip("needs /dev/fuse for a hung mount")


@contextmanager
def hung_mount(where: str) -> Iterator[None]:
    """Mount a FUSE filesystem nobody serves over the directory `where` (which must exist);
    on leaving, abort it (lookups under way fail with ENOTCONN) and unmount it."""
    require_fuse()
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    # allow_other: the system daemon's jobs enter it as their users.
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"gq-test-hung", os.fsencode(where), b"fuse", 0, options) != 0:
        err = ctypes.get_errno()
        os.close(fd)
        pytest.skip(f"cannot mount FUSE here: {os.strerror(err)}")
    try:
        yield
    finally:
        os.close(fd)  # the connection aborts: every waiter gets ENOTCONN
        libc.umount2(os.fsencode(where), MNT_DETACH)


def blocked_in_fuse() -> list[int]:
    """The processes waiting in the kernel for a FUSE server."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/wchan") as f:
                if f.read().startswith("fuse"):
                    found.append(int(name))
        except OSError:
            continue
    return found
