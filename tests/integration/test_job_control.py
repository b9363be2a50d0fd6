"""cancel, hold, release, requeue, wait, logs and `@`, as a user runs them."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys

import psutil

from gq.cli.submit_args import request_args
from tests.support.hosts import wait_for
from tests.support.jobs import gated


def processes_with(token: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if token in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


def test_cancel_kills_the_whole_tree_even_setsid_and_term_ignoring(make_host):
    host = make_host("1x80G", kill_wait="1s")
    token = str(random.randint(100000, 999999))
    script = (
        f"setsid sleep {token}1 & "  # a new session
        f"(sleep {token}2 &) ; "  # orphaned by a double fork
        f"sh -c 'trap \"\" TERM; sleep {token}3; sleep {token}3' & "  # ignores SIGTERM
        f"sleep {token}4"
    )
    job = host.submit("--", "sh", "-c", script)
    wait_for(lambda: len(processes_with(token)) >= 4, what="the job's processes")
    assert host.gq("cancel", str(job)).stdout.strip() == f"job {job}: cancelled"
    ended = host.wait_ended(job)
    assert ended["state"] == "cancelled"
    assert processes_with(token) == []


def test_cancel_pending_and_unknown(host):
    job = host.submit("--hold", "--", "true")
    assert host.job(job)["state"] == "held"
    host.gq("cancel", str(job))
    assert host.job(job)["state"] == "cancelled"
    again = host.gq("cancel", str(job), check=False)
    assert again.returncode == 1 and "already cancelled" in again.stderr


def test_hold_and_release(host):
    gate = host.work / "gate"
    blocker = host.submit("-g", "4", *gated(gate))
    host.wait_state(blocker, "running")
    job = host.submit("--", "true")
    host.gq("hold", str(job))
    assert host.wait_reason(job, "Held")["state"] == "held"
    assert "gq release" in host.gq("why", str(job)).stdout
    gate.touch()
    host.wait_ended(blocker)
    assert host.job(job)["state"] == "held"
    host.gq("release", str(job))
    assert host.wait_ended(job)["state"] == "completed"
    refused = host.gq("hold", str(job), check=False)
    assert refused.returncode == 1 and "only pending jobs" in refused.stderr


def test_requeue_a_running_job_restarts_it_with_the_same_id(make_host):
    host = make_host("1x80G", kill_wait="1s")
    gate = host.work / "gate"
    job = host.submit(*gated(gate, echo='"run $GQ_RESTART_COUNT"'))
    host.wait_state(job, "running")
    wait_for(lambda: "run 0" in host.log(job), what="the first run")
    host.gq("requeue", str(job))
    wait_for(lambda: "run 1" in host.log(job), what="the second run")
    again = host.job(job)
    assert again["state"] == "running" and again["restarts"] == 1
    gate.touch()
    assert host.wait_ended(job)["state"] == "completed"
    assert [e["new_state"] for e in host.job(job)["events"]].count("running") == 2


def test_wait_exits_with_the_jobs_code_and_at_means_my_last_job(host):
    host.submit("--", "sh", "-c", "exit 0")
    last = host.submit("--", "sh", "-c", "echo out; echo err >&2; exit 42")
    waited = host.gq("wait", "@", check=False)
    assert waited.returncode == 42
    assert f"job {last}: failed (exit 42)" in waited.stdout
    assert host.gq("logs", "@").stdout == "out\n"
    assert host.gq("logs", "--err", str(last)).stdout == "err\n"
    assert host.gq("show", "@", "--json").stdout.count(f'"id": {last}') == 1
    row = [line for line in host.gq("ls", "--all").stdout.splitlines()
           if line.startswith(f"{last} ")]
    assert row[0].split()[-3:] == ["exit", "42:", "unknown"]  # the failure class, triage.md


def test_logs_follow_prints_until_the_job_ends(host):
    gate = host.work / "gate"
    job = host.submit("--", "sh", "-c",
                      f'echo one; while [ ! -e "{gate}" ]; do sleep 0.02; done; echo two')
    follower = subprocess.Popen([sys.executable, "-m", "gq", "logs", "-f", str(job)],
                                env=host.env, stdout=subprocess.PIPE, text=True)
    assert follower.stdout.readline() == "one\n"
    gate.touch()
    rest, _ = follower.communicate(timeout=30)
    assert rest == "two\n" and follower.returncode == 0


def test_ls_table_and_json(host):
    job = host.submit("-n", "train-a", "--hold", "--", "true")
    table = host.gq("ls").stdout
    assert table.splitlines()[0].split()[:4] == ["ID", "NAME", "USER", "STATE"]
    assert f"{job}" in table and "train-a" in table and "Held" in table
    import json

    (j,) = [x for x in json.loads(host.gq("ls", "--json").stdout) if x["id"] == job]
    for key in ("id name user host state reason priority gpus mem cpus command cwd "
                "submitted_at started_at ended_at exit_code restarts gpu_ids").split():
        assert key in j
    assert j["submitted_at"].endswith("Z") and j["state"] == "held"
    assert json.loads(host.gq("ls", "--state", "completed", "--json").stdout) == []


def test_gpus_shows_cards(shared_host):
    out = shared_host.gq("gpus").stdout
    assert "SimGPU-80G (sim)" in out and len(out.splitlines()) == 6
    assert out.splitlines()[-1].startswith("freezing (driver simulated): GPU 0,1,2,3 can")


def test_show_hides_env_from_other_users_but_not_owner(host):
    job = host.submit("--env", "SECRET=x", "--hold", "--", "true")
    assert host.job(job)["env"]["SECRET"] == "x"


def test_auto_start_says_so_in_one_line(make_host):
    host = make_host("1x80G", start=False)
    proc = host.gq("submit", "--", "true")
    assert proc.stdout.strip() == "1"
    assert proc.stderr.startswith("gq: started the daemon for") and proc.stderr.count("\n") == 1
    assert host.gq("wait", "1").returncode == 0
    pid = host.call("ping")["pid"]
    host.gq("daemon", "stop")
    wait_for(lambda: not psutil.pid_exists(pid) or
             psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, what="the daemon to exit")


def test_second_daemon_on_the_same_home_is_refused(shared_host):
    proc = subprocess.run([sys.executable, "-m", "gq", "daemon", "run"], env=shared_host.env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "a daemon already runs" in proc.stderr


def test_socket_is_private(shared_host):
    assert os.stat(shared_host.home / "gq.sock").st_mode & 0o777 == 0o600


def test_time_limit_ends_the_job_as_timeout(make_host):
    host = make_host("1x80G", kill_wait="1s")
    job = host.submit("-t", "1s", "--", "sleep", "300")
    ended = host.wait_ended(job)
    assert ended["state"] == "timeout" and "time limit 1s reached" in ended["reason"]
    assert host.wait_ended(host.submit("--", "true"))["state"] == "completed"  # card freed


def test_wait_rides_out_a_daemon_restart(host):
    gate = host.work / "gate"
    job = host.submit(*gated(gate, exit_code=6))
    host.wait_state(job, "running")
    waiter = subprocess.Popen([sys.executable, "-m", "gq", "wait", str(job)], env=host.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: psutil.Process(waiter.pid).net_connections("unix"),
             what="the waiter to connect")
    host.kill_daemon(signal.SIGKILL)
    host.start()
    gate.touch()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 6, f"{out!r} {err!r} {host.job(job)['state']}"
    assert f"job {job}: failed (exit 6)" in out


# glibc's own two signals (32 and 33, for thread cancellation and set*id), which glibc's
# posix_spawn leaves ignored in every program it starts and which no glibc program can use.
GLIBC_INTERNAL = (1 << 31) | (1 << 32)


def test_the_job_gets_default_signal_dispositions(host):
    # Ignored dispositions and the signal mask survive exec: a job must not inherit the
    # shim's (which blocks the daemon's requests and ignores Ctrl-C).
    # grep itself, not through sh: dash clears its signal mask when it starts.
    job = host.submit("-g", "0", "--", "grep", "-E", "SigBlk|SigIgn", "/proc/self/status")
    host.wait_ended(job)
    blocked, ignored = host.log(job).split()[1::2]
    assert (int(blocked, 16), int(ignored, 16) & ~GLIBC_INTERNAL) == (0, 0)


def test_a_job_starts_as_its_submitter_set_it_up(host, tmp_path):
    """Found through the submitter's PATH (not the daemon's), in their directory, with their
    umask, as the leader of its own process group."""
    tools = tmp_path / "bin"
    tools.mkdir()
    tool = tools / "gq-test-tool"
    tool.write_text("#!/bin/sh\numask; pwd; echo $$; cut -d' ' -f5 /proc/$$/stat\n")
    tool.chmod(0o755)
    args = request_args({"gpus": "0", "cwd": str(tmp_path)}, ["gq-test-tool"])
    args["env"]["PATH"] = f"{tools}:{args['env'].get('PATH', '')}"
    args["umask"] = 0o027
    job = host.call("submit", **args)["id"]
    assert host.wait_ended(job)["state"] == "completed", host.log(job, err=True)
    umask, cwd, pid, group = host.log(job).split()
    assert (umask, cwd, group) == ("0027", str(tmp_path), pid)


def test_a_command_that_cannot_start_fails_as_a_shell_would(host, tmp_path):
    plain = tmp_path / "no-interpreter"  # executable, but neither a binary nor #!
    plain.write_text("echo hi\n")
    plain.chmod(0o755)
    gone = tmp_path / "gone"
    gone.mkdir()
    cases = [
        (["--", "gq-no-such-command"], 127, "cannot run 'gq-no-such-command': No such file or "
                                            "directory"),
        (["--", str(plain)], 126, f"cannot run {str(plain)!r}: Exec format error"),
        (["--cwd", str(gone), "--", "true"], 127, f"cannot enter {gone}: No such file or "
                                                  "directory"),
    ]
    jobs = [host.submit("--hold", "-g", "0", *argv) for argv, _, _ in cases]
    gone.rmdir()
    host.gq("release", *map(str, jobs))
    for job, (_, code, message) in zip(jobs, cases):
        ended = host.wait_ended(job)
        assert (ended["state"], ended["exit_code"], ended["reason"]) == ("failed", code, message)
        assert host.log(job, err=True) == f"gq: {message}\n"


def test_a_link_planted_at_the_log_path_is_not_followed(host, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    job = host.submit("--hold", "--", "echo", "overwritten")
    (host.home / "logs" / f"{job}.out").symlink_to(victim)
    host.gq("release", str(job))
    ended = host.wait_ended(job)
    assert (ended["state"], ended["exit_code"]) == ("failed", 127)
    assert victim.read_text() == "precious\n"
    assert "could not start the job" in host.log(job, err=True)
