"""The freeze helper: a process of its own that freezes one job (lock, checkpoint, stop its
processes) or thaws it (continue its processes, restore, unlock), and records how it went.

    python -m gq.daemon.freezer SPEC_JSON

The daemon starts one per freeze or thaw, in a session of its own, so that the daemon's event
loop never waits on the driver (a checkpoint of a full card takes seconds) and a daemon killed
meanwhile loses nothing: the helper finishes, and its record says how. Like a job's shim, it
holds the run's `ID.freeze.lock` for as long as it lives (with its pid written in it) and writes
`ID.freeze` durably at each step and at the end:

    {"op": "freeze", "pid": 1234, "step": "checkpoint", "done": false, ...}
    {"op": "freeze", "pid": 1234, "done": true, "ok": true, "seconds": 2.1, ...}
    {"op": "thaw", ..., "done": true, "ok": false, "retry": true, "error": "..."}

Each op starts from where the driver says the process is, so running it twice does it once:
a restarted daemon whose helper died halfway simply starts another. A freeze that fails puts
the process back as it found it where it can (unlocks a locked one); a thaw that finds the card
without room does not begin (`retry`: the job stays frozen).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from typing import TypedDict

from gq.gpu.checkpoint import (
    CHECKPOINTED, FAILED, LOCKED, RUNNING, CheckpointError, Checkpointer, open_checkpointer,
)


class FreezeSpec(TypedDict):
    op: str  # "freeze" or "thaw"
    job_id: int
    pid: int  # the job's CUDA process
    shim: int  # the job's shim: its descendants are the job's processes
    record: str  # run/ID.freeze
    lock: str  # run/ID.freeze.lock
    checkpointer: dict  # Checkpointer.spec()
    timeout: float  # for the lock
    remap: dict[str, str]  # thaw: old card uuid -> new one ({}: where it was)
    need: dict[str, int]  # thaw: bytes it needs free on each new card


def main(argv: list[str]) -> int:
    spec: FreezeSpec = json.loads(argv[1])
    fd = os.open(spec["lock"], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        # Another helper does it already: one an earlier daemon started, which had not taken
        # the lock yet when the next daemon looked. Its end is this one's, so that whoever
        # watches this one reads its record then, not the lack of one.
        fcntl.flock(fd, fcntl.LOCK_EX)
        return 0
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "op": spec["op"]}).encode(), 0)
    record = Record(spec)
    began = time.monotonic()
    ckpt = open_checkpointer(spec["checkpointer"])
    try:
        if spec["op"] == "freeze":
            freeze(ckpt, spec, record)
        else:
            thaw(ckpt, spec, record)
        record.write(done=True, ok=True, seconds=round(time.monotonic() - began, 3))
    except Refused as e:
        record.write(done=True, ok=False, retry=True, error=str(e),
                     seconds=round(time.monotonic() - began, 3))
    except CheckpointError as e:
        record.write(done=True, ok=False, step=e.step, error=str(e), timed_out=e.timed_out,
                     seconds=round(time.monotonic() - began, 3))
    finally:
        ckpt.close()
    return 0


def write_json_durably(path: str, data: dict) -> None:
    """Write atomically (a reader sees all or nothing: PATH.tmp, renamed over PATH) and so
    that it survives a power cut."""
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


class Refused(Exception):
    """A thaw that did not begin: the card has no room for it now."""


class Record:
    def __init__(self, spec: FreezeSpec):
        self.path = spec["record"]
        self.facts = {"op": spec["op"], "job_id": spec["job_id"], "pid": spec["pid"],
                      "steps": {}}
        self.step_began = time.monotonic()

    def step(self, name: str) -> None:
        """A step begins: said durably first, so that a daemon finds where it stopped."""
        self.step_began = time.monotonic()
        self.write(step=name, done=False)

    def took(self, name: str) -> None:
        self.facts["steps"][name] = round(time.monotonic() - self.step_began, 3)

    def write(self, **fields) -> None:
        self.facts.update(fields, at=time.time())
        write_json_durably(self.path, self.facts)


def freeze(ckpt: Checkpointer, spec: FreezeSpec, record: Record) -> None:
    pid = spec["pid"]
    state = ckpt.state(pid)
    if state == FAILED:
        raise CheckpointError("state", f"process {pid} is failed")
    if state == RUNNING:
        record.step("lock")
        ckpt.lock(pid, spec["timeout"])
        record.took("lock")
        state = LOCKED
    if state == LOCKED:
        record.step("checkpoint")
        try:
            ckpt.checkpoint(pid)
        except CheckpointError:
            _let_go(ckpt, pid)
            raise
        record.took("checkpoint")
    record.step("stop")
    signal_tree(spec["shim"], signal.SIGSTOP)
    record.took("stop")


def thaw(ckpt: Checkpointer, spec: FreezeSpec, record: Record) -> None:
    pid = spec["pid"]
    state = ckpt.state(pid)
    if state == FAILED:
        raise CheckpointError("state", f"process {pid} is failed")
    if state == CHECKPOINTED:
        for uuid, need in spec["need"].items():
            free = ckpt.free_memory(uuid)
            if free is not None and free < need:
                raise Refused(f"{uuid} has {free / (1 << 30):.1f} GiB free, "
                              f"{need / (1 << 30):.1f} GiB needed")
    record.step("continue")
    signal_tree(spec["shim"], signal.SIGCONT)  # its restore thread must run (CRIU does so)
    if state == CHECKPOINTED:
        record.step("restore")
        ckpt.restore(pid, spec["remap"])
        record.took("restore")
        state = LOCKED
    if state == LOCKED:
        record.step("unlock")
        ckpt.unlock(pid)
        record.took("unlock")


def _let_go(ckpt: Checkpointer, pid: int) -> None:
    """After a failed checkpoint: unlock the process if it is still locked, so it goes on."""
    try:
        if ckpt.state(pid) == LOCKED:
            ckpt.unlock(pid)
    except CheckpointError:
        pass  # the signal path follows, which needs no lock undone


def signal_tree(shim: int, sig: int) -> int:
    """Send `sig` to every descendant of the job's shim (not the shim); how many got it."""
    import psutil

    try:
        procs = psutil.Process(shim).children(recursive=True)
    except psutil.Error:
        return 0
    sent = 0
    for proc in procs:
        try:
            os.kill(proc.pid, sig)
            sent += 1
        except ProcessLookupError:
            pass
    return sent


if __name__ == "__main__":
    sys.exit(main(sys.argv))
