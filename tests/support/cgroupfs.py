"""A real cgroup v2 directory for a test's jobs (`[host] cgroups`): under the host's cgroup v2
hierarchy, or one mounted for the test (a hybrid host's `unified` one, or none mounted at all).
Needs root; tests that use it skip, saying why, otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gq.daemon.cgroups import members, v2_mount


@contextmanager
def cgroup_dir(required: bool = True) -> Iterator[str | None]:
    """A new, empty directory of a cgroup v2 hierarchy, removed (with what the jobs left) at
    the end. Where none can be made the test skips, or with `required=False` gets None."""
    why = _cannot()
    mount, mounted = v2_mount(), None
    if why is None and mount is None:
        mounted = tempfile.mkdtemp(prefix="gq-cg-")
        if subprocess.run(["mount", "-t", "cgroup2", "none", mounted]).returncode != 0:
            os.rmdir(mounted)
            mounted, why = None, "no cgroup v2 hierarchy here, and none can be mounted"
        mount = mounted
    root = None if why else os.path.join(mount, f"gq-test-{uuid.uuid4().hex[:8]}")
    if root is not None:
        try:
            os.mkdir(root)
        except OSError as e:
            root, why = None, f"cannot make a cgroup in {mount}: {e.strerror}"
    if root is None:
        if required:
            pytest.skip(why)
        yield None
        return
    os.chmod(root, 0o755)
    try:
        yield root
    finally:
        _remove(root)
        if mounted:
            subprocess.run(["umount", "-l", mounted])
            os.rmdir(mounted)


def _cannot() -> str | None:
    return "needs root to make cgroups" if os.geteuid() != 0 else None


def _remove(path: str) -> None:
    for name in os.listdir(path):
        child = os.path.join(path, name)
        if os.path.isdir(child):
            _remove(child)
    for pid in members(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for _ in range(200):
        try:
            os.rmdir(path)
            return
        except OSError:
            time.sleep(0.01)


def has_pids_controller(path: str) -> bool:
    with open(os.path.join(path, "cgroup.controllers")) as f:
        return "pids" in f.read().split()


def cgroup_of(pid: int) -> str | None:
    """The cgroup v2 path of a process, as /proc/PID/cgroup says it; None: gone."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return next((ln[3:].strip() for ln in f if ln.startswith("0::")), None)
    except OSError:
        return None
