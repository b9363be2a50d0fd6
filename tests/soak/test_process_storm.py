"""100 jobs started and cancelled in a burst, and 100 cancelled as they start: no process,
zombie, run file or descriptor is left behind."""

from __future__ import annotations

import os
import time

import psutil

from tests.support.hosts import wait_for
from tests.support.hostile import open_fds

from gq.cli.submit_args import request_args
from gq.daemon.supervisor import IDLE
from gq.protocol import Connection

JOBS = 100


def _spawner(daemon_pid: int) -> psutil.Process:
    (spawner,) = [p for p in psutil.Process(daemon_pid).children()
                  if "gq.daemon.spawner" in " ".join(p.cmdline())]
    return spawner


def _left_behind(marker: str) -> list[str]:
    """Processes of the storm's jobs: their command lines carry the marker."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if marker in cmdline:
            found.append(f"{proc.info['pid']} {proc.info['status']} {proc.info['name']} "
                         f"{cmdline}")
    return found


def _zombies_under(parent: int) -> list[int]:
    return [p.pid for p in psutil.Process(parent).children()
            if p.status() == psutil.STATUS_ZOMBIE]


def run_files(host) -> list[str]:
    """The runs' files (run/spare/ keeps emptied lock files for later runs)."""
    return [name for name in os.listdir(host.home / "run") if name != "spare"]


def test_100_jobs_started_and_cancelled_in_a_burst_leave_nothing_behind(make_host):
    host = make_host("1x80G", cpus=JOBS + 8, kill_wait="2s")
    assert host.wait_ended(host.submit("-g", "0", "--", "true"))["state"] == "completed"
    daemon = host.daemon.pid
    wait_for(lambda: not run_files(host), what="the warm-up run's files to go")
    fds, spawner_fds = open_fds(daemon), open_fds(_spawner(daemon).pid)
    # Each job: a shell with two children, one in the background, all marked by their
    # command lines (`sleep 977.DAEMONPID`).
    marker = f"977.{daemon}"
    args = request_args({"gpus": "0"}, ["sh", "-c", f"sleep {marker} & sleep {marker}; wait"])
    began = time.monotonic()
    with Connection(host.home / "gq.sock") as conn:
        ids = [conn.call("submit", **args)["id"] for _ in range(JOBS)]

        def all_running() -> bool:
            states = {j["id"]: j["state"] for j in conn.call("list")["jobs"]}
            return all(states.get(i) == "running" for i in ids)

        wait_for(all_running, timeout=120, interval=0.1, what=f"{JOBS} jobs to run")
        wait_for(lambda: [p.split()[2] for p in _left_behind(marker)].count("sleep") == 2 * JOBS,
                 timeout=120, interval=0.1, what="every job's two sleeps")
        started = time.monotonic() - began
        results = conn.call("cancel", ids=[str(i) for i in ids])
        assert [r["ok"] for r in results] == [True] * JOBS
    for i in ids:
        assert host.wait_ended(i, timeout=60)["state"] == "cancelled"
    cancelled = time.monotonic() - began - started
    # Again, cancelling each job the moment it is queued: mid-start, mid-fork, mid-exec.
    with Connection(host.home / "gq.sock") as conn:
        for _ in range(JOBS):
            job = conn.call("submit", **args)["id"]
            assert conn.call("cancel", ids=[str(job)])[0]["ok"]
            ids.append(job)
    for i in ids:
        assert host.wait_ended(i, timeout=60)["state"] == "cancelled"
    assert _left_behind(marker) == []
    spawner = _spawner(daemon)
    # No shim but those kept waiting for the next runs (at most IDLE, with nothing under
    # them), not even a zombie one. Each waiting one holds a pidfd in the daemon, and a
    # pidfd and a socket in the spawner.
    idle = spawner.children()
    assert len(idle) <= IDLE
    assert [(p.name(), p.children()) for p in idle] == [("gq-shim-idle", [])] * len(idle)
    assert _zombies_under(daemon) == []
    wait_for(lambda: not run_files(host), what="the runs' files to be removed")
    assert abs(open_fds(daemon) - fds) <= 5 + len(idle), (fds, open_fds(daemon))
    assert abs(open_fds(spawner.pid) - spawner_fds) <= 5 + 2 * len(idle)
    print(f"\n{JOBS} jobs ({3 * JOBS} processes) running in {started:.1f}s, all gone "
          f"{cancelled:.1f}s after one cancel; daemon fds {fds} -> {open_fds(daemon)}")
