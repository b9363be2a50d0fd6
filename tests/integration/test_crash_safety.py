"""kill -9 of the daemon loses nothing: jobs keep running, exits are recorded, none runs twice."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.support.hosts import exit_record, wait_for
from tests.support.jobs import gated


def marks(path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_kill_9_while_jobs_run(host):
    mark = host.work / "marks"
    gates = {name: host.work / name for name in "abc"}
    a = host.submit(*gated(gates["a"], exit_code=3, mark=mark))
    b = host.submit(*gated(gates["b"], exit_code=0, mark=mark))
    c = host.submit(*gated(gates["c"], exit_code=5, mark=mark))
    waiting = host.submit("-g", "2", "--", "sh", "-c", f'echo "$GQ_JOB_ID" >> "{mark}"')
    for i in (a, b, c):
        host.wait_state(i, "running")
    assert host.wait_reason(waiting, "Resources")["state"] == "pending"
    # Running is recorded before the spawner (gq/daemon/spawner.py) forks the shim: until a
    # job has written its mark, a kill may find it not begun (requeued: test_recovery.py).
    wait_for(lambda: sorted(marks(mark)) == sorted([a, b, c]), what="the three jobs to begin")

    host.kill_daemon(signal.SIGKILL)
    gates["a"].touch()
    gates["b"].touch()
    # a and b end while no daemon runs: their shims record the exits.
    for i in (a, b):
        wait_for(lambda i=i: host.exit_record(i) is not None,
                 what=f"job {i}'s shim to record its exit")

    host.start()
    assert host.wait_ended(a)["exit_code"] == 3
    assert host.job(a)["state"] == "failed"
    assert host.wait_ended(b)["state"] == "completed"
    assert host.job(c)["state"] == "running"  # re-adopted, not restarted
    assert host.wait_ended(waiting)["state"] == "completed"
    gates["c"].touch()
    ended_c = host.wait_ended(c)
    assert (ended_c["state"], ended_c["exit_code"]) == ("failed", 5)
    assert sorted(marks(mark)) == sorted([a, b, c, waiting])


def test_kill_9_during_a_flood_of_submits_loses_and_repeats_nothing(make_host):
    host = make_host("2x80G", cpus=4)
    mark = host.work / "marks"
    cmd = ["--", "sh", "-c", f'echo "$GQ_JOB_ID" >> "{mark}"']
    acked = []
    from gq.protocol import Connection
    from gq.cli.submit_args import request_args

    args = request_args({"gpus": "0"}, cmd[1:])
    with Connection(host.home / "gq.sock") as conn:
        for n in range(60):
            acked.append(conn.call("submit", **args)["id"])
            if n == 40:
                host.kill_daemon(signal.SIGKILL)
                break
    host.start()
    jobs = {j["id"]: j for j in host.call("list", all=True)["jobs"]}
    assert set(acked) <= set(jobs)
    for i in acked:
        host.wait_ended(i)
    assert sorted(marks(mark)) == sorted(jobs)  # each ran exactly once
    assert all(j["state"] == "completed" for j in host.call("list", all=True)["jobs"])


def test_daemon_stop_leaves_jobs_running_and_the_next_daemon_adopts_them(host):
    from gq.protocol import Connection

    gate = host.work / "gate"
    job = host.submit(*gated(gate, exit_code=4))
    host.wait_state(job, "running")
    with Connection(host.home / "gq.sock") as idle:  # a client that says nothing, as gq top
        idle.call("ping")
        out = host.gq("daemon", "stop").stdout
        assert "1 running job(s) keep running" in out
        host.daemon.wait(timeout=20)
    # The connections still open are closed with it, quietly: no traceback in its log.
    assert "Traceback" not in (host.home / "daemon.test.log").read_text()
    assert host.gq("daemon", "status", check=False).returncode == 3
    host.start()
    assert host.job(job)["state"] == "running"
    gate.touch()
    assert host.wait_ended(job)["exit_code"] == 4


def test_a_job_whose_shim_vanished_is_lost_not_rerun(host):
    gate = host.work / "gate"
    job = host.submit(*gated(gate))
    shim = wait_for(lambda: host.shim_pid(job), what="the shim's pid")
    host.kill_daemon(signal.SIGKILL)
    os.killpg(shim, signal.SIGKILL)  # the machine "crashed" under the job
    wait_for(lambda: not os.path.exists(f"/proc/{shim}") or
             open(f"/proc/{shim}/stat").read().split()[2] == "Z", what="the shim to die")
    host.start()
    ended = host.wait_ended(job)
    assert ended["state"] == "lost" and ended["exit_code"] is None


def test_a_requeued_run_is_not_mistaken_for_a_lost_commit(make_host):
    host = make_host("1x80G", kill_wait="1s", tick="1h")  # no tick: the run's files stay
    # A run that starts with no spare lock file takes the oldest finished run's: two runs
    # ended before (started in one pass), one for the job and one for the urgent one, keep
    # the requeued run's file.
    first = [host.submit("--hold", "-g", "0", "--", "true") for _ in range(2)]
    host.gq("release", *map(str, first))
    assert [host.wait_ended(i)["state"] for i in first] == ["completed"] * 2
    gate = host.work / "gate"
    job = host.submit(*gated(gate, exit_code=9))
    host.wait_state(job, "running")
    urgent = host.submit("-p", "high", *gated(gate))  # takes the card when the job leaves it
    host.gq("requeue", str(job))
    host.wait_state(urgent, "running")
    # Requeued: pending, its old run's files still there until a tick removes them.
    assert host.job(job)["restarts"] == 1
    assert host.exit_record(job) is not None
    host.kill_daemon(signal.SIGKILL)
    host.start()
    again = host.job(job)
    assert again["state"] == "pending" and again["exit_code"] is None
    assert [e["new_state"] for e in again["events"]].count("failed") == 0


def test_a_dead_spawner_is_replaced(host):
    import psutil

    assert host.wait_ended(host.submit("--", "true"))["state"] == "completed"
    daemon = psutil.Process(host.daemon.pid)
    (spawner,) = [p for p in daemon.children() if "gq.daemon.spawner" in " ".join(p.cmdline())]
    spawner.kill()
    wait_for(lambda: not spawner.is_running() or spawner.status() == psutil.STATUS_ZOMBIE,
             what="the spawner to die")
    assert host.wait_ended(host.submit("--", "true"))["state"] == "completed"
    (again,) = [p for p in daemon.children() if "gq.daemon.spawner" in " ".join(p.cmdline())]
    assert again.pid != spawner.pid


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (its parent, maybe init, has yet to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("daemon", ["running", "down"])
def test_the_processes_of_a_job_whose_shim_was_killed_go_with_it(host, daemon):
    """kill -9 of a shim: the job is lost, and its processes (also one that left the job's
    session) are killed before its card is given to anyone else; by the daemon that watched
    the shim, or by the next one."""
    pids = host.work / "pids"
    job = host.submit("--", "sh", "-c", f'setsid sleep 600 & echo $! >> {pids}; '
                                        f'sleep 600 & echo $! $$ >> {pids}; wait')
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 3,
             what="the job's three processes")
    left = [int(p) for p in pids.read_text().split()]
    shim = host.shim_pid(job)
    if daemon == "down":
        host.kill_daemon()
    os.kill(shim, signal.SIGKILL)
    if daemon == "down":
        wait_for(lambda: _gone(shim), what="the shim to die")
        host.start()
    assert host.wait_ended(job)["state"] == "lost"
    wait_for(lambda: all(_gone(p) for p in left), timeout=10, what="the job's processes to go")
    events = [e["detail"] for e in host.job(job)["events"]]
    assert "3 processes of the run, left behind by its shim, killed" in events, events


def test_a_spawner_whose_daemon_died_before_its_answer_ends_quietly(tmp_path):
    """The daemon was killed between asking for a shim and reading the answer: the spawner
    forks the shim (the next daemon adopts its run), finds nobody to answer and ends, exit 0
    and no traceback, where it died of a BrokenPipeError."""
    from gq.protocol.fdpass import send

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    spawner = subprocess.Popen([sys.executable, "-m", "gq.daemon.spawner",
                                str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                               stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    theirs.close()
    run = tmp_path / "run"
    run.mkdir()
    spec = {"job_id": 1, "run": 0, "command": ["true"], "cwd": str(tmp_path),
            "env": {"PATH": os.environ["PATH"]}, "stdout": str(tmp_path / "logs" / "1.out"),
            "stderr": str(tmp_path / "logs" / "1.err"), "checkpoint_dir": str(tmp_path / "ck"),
            "run_dir": str(run), "kill_wait": 1.0, "grace": 1.0,
            "checkpoint_signal": 10, "signal_group": False, "warn_after": None, "uid": None,
            "gid": None, "groups": None, "umask": None, "token": "t"}
    lock = os.open(run / "1.lock", os.O_RDWR | os.O_CREAT, 0o600)
    send(ours, {"spec": spec, "reuse": None}, [lock])
    os.close(lock)
    ours.close()  # the daemon is gone before the answer
    err = spawner.stderr.read()
    assert (spawner.wait(timeout=30), err) == (0, "")
    wait_for(lambda: exit_record(run, 1) is not None, what="the shim's exit record")
    assert exit_record(run, 1)["exit_code"] == 0
