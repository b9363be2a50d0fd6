"""A cgroup v2 of its own for each job, where the host delegates one to the daemon: its
processes cannot leave it (the job cgroups are root's, their users own none of them), `pids.max`
bounds how many it may have (`[host] max_procs_per_job`), and it ends all at once
(`cgroup.kill`, or frozen then killed). Without one the shim stops the job's tree with SIGSTOP
before killing it (gq/daemon/shim.py). Standard library only: the shim imports it.

`[host] cgroups`: "auto" (the default) takes the daemon's own cgroup when systemd delegated it
(the system unit's `Delegate=yes`: it marks the cgroup with the `trusted.delegate` xattr); the
daemon moves itself into `daemon/` there and makes its jobs' cgroups in `jobs/`. A path takes
that directory of a cgroup v2 hierarchy as the parent of the jobs' cgroups; "off", none.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from dataclasses import dataclass

PREFIX = "job-"  # a job's cgroup: PREFIX and its id, in JobCgroups.root


@dataclass(frozen=True)
class JobCgroups:
    """Where the jobs' cgroups are made, and whether `pids.max` bounds them (the pids
    controller is enabled for them)."""

    root: str
    pids: bool

    def of(self, job_id: int) -> str:
        return f"{self.root}/{PREFIX}{job_id}"


def prepare(setting: str, system: bool) -> tuple[JobCgroups | None, str]:
    """The jobs' cgroups under `setting` ("auto", "off" or a path), made ready; and what to
    say of them at start (the log, `gq daemon status`)."""
    if setting == "off":
        return None, "cgroups: off ([host] cgroups); a job's tree is stopped and killed by a sweep"
    if setting != "auto":
        root = setting.rstrip("/") or "/"
        if not _is_cgroup2(root):
            return None, (f"cgroups: {root} ([host] cgroups) is not a directory of a cgroup v2 "
                          "hierarchy; jobs run without one")
        return _ready(root, "[host] cgroups")
    if not system:
        return None, "cgroups: none (a user's daemon; the system daemon uses its delegated one)"
    own = own_cgroup()
    if own is None:
        return None, "cgroups: none (no cgroup v2 hierarchy here); a sweep stops each job's tree"
    if os.path.basename(own) == "daemon" and _delegated(os.path.dirname(own)):
        own = os.path.dirname(own)  # a daemon started again from the one it replaced
    if not _delegated(own):
        return None, (f"cgroups: none: {own} is not delegated to the daemon (Delegate=yes in "
                      "gq.service); a sweep stops each job's tree")
    try:
        os.makedirs(f"{own}/daemon", exist_ok=True)
        _write(f"{own}/daemon/cgroup.procs", "0")  # a delegated cgroup keeps none inside
        os.makedirs(f"{own}/jobs", exist_ok=True)
    except OSError as e:
        return None, f"cgroups: none: cannot arrange {own}: {e.strerror}"
    _enable_pids(own)
    return _ready(f"{own}/jobs", "its delegated cgroup")


def _ready(root: str, where: str) -> tuple[JobCgroups, str]:
    pids = _enable_pids(root)
    said = f"cgroups: each job in its own, under {root} ({where})"
    if not pids:
        said += "; no pids controller there: [host] max_procs_per_job is not applied"
    return JobCgroups(root, pids), said


def own_cgroup() -> str | None:
    """This process's cgroup v2 directory, or None without a v2 hierarchy."""
    try:
        with open("/proc/self/cgroup") as f:
            line = next((ln for ln in f if ln.startswith("0::")), None)
        mount = v2_mount()
    except OSError:
        return None
    if line is None or mount is None:
        return None
    path = line[3:].strip()
    return mount if path == "/" else mount + path


def v2_mount() -> str | None:
    """Where the cgroup v2 hierarchy is mounted (the first mount of it); None: nowhere."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return left.split()[4]
    return None


def _delegated(path: str) -> bool:
    for name in ("trusted.delegate", "user.delegate"):
        try:
            if os.getxattr(path, name) == b"1":
                return True
        except OSError:
            continue
    return False


def _is_cgroup2(path: str) -> bool:
    try:
        return os.path.isdir(path) and os.path.exists(f"{path}/cgroup.procs") and \
            os.path.exists(f"{path}/cgroup.subtree_control")
    except OSError:
        return False


def _enable_pids(path: str) -> bool:
    """Enable the pids controller for the children of `path`; whether it is."""
    try:
        with open(f"{path}/cgroup.controllers") as f:
            if "pids" not in f.read().split():
                return False
        with open(f"{path}/cgroup.subtree_control") as f:
            if "pids" in f.read().split():
                return True
        _write(f"{path}/cgroup.subtree_control", "+pids")
        return True
    except OSError:
        return False


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


# ---- the shim's side ----------------------------------------------------------------------

def make(path: str, max_procs: int | None) -> bool:
    """The run's cgroup, made (or taken over from a run that left it), with pids.max; whether
    there is one to join."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError:
        return False
    if max_procs is not None:
        try:
            _write(f"{path}/pids.max", str(max_procs))
        except OSError:
            pass  # no pids controller: said at the daemon's start
    return True


def join(path: str) -> None:
    """Move the calling process into the cgroup (the job's process, before its command)."""
    _write(f"{path}/cgroup.procs", "0")


def members(path: str) -> list[int]:
    try:
        with open(f"{path}/cgroup.procs") as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def populated(path: str) -> bool:
    """Whether any process is left in the cgroup (or below it)."""
    try:
        with open(f"{path}/cgroup.events") as f:
            return "populated 1" in f.read()
    except OSError:
        return False


def kill(path: str) -> None:
    """SIGKILL every process in the cgroup at once: cgroup.kill (Linux 5.14), else frozen,
    killed one by one, and thawed (a frozen process forks no more), else one by one."""
    try:
        _write(f"{path}/cgroup.kill", "1")
        return
    except FileNotFoundError:
        pass
    except OSError:
        return  # gone
    frozen = True
    try:
        _write(f"{path}/cgroup.freeze", "1")
    except OSError:
        frozen = False
    for pid in members(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if frozen:
        try:
            _write(f"{path}/cgroup.freeze", "0")  # SIGKILL takes a frozen task once thawed
        except OSError:
            pass


def remove(path: str, within: float = 1.0) -> bool:
    """Remove the run's cgroup once it is empty (a killed process leaves it as it exits);
    whether it is gone."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                return False
        time.sleep(0.01)
