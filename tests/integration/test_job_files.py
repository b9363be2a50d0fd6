"""A job's files cannot hold its cards: a FIFO, a link or a device planted at a job's log path
fails that run in one line, its cards freed; and after a cancel the cards are free once the
kill wait has passed, whatever the job's signal mask (issue #34)."""

from __future__ import annotations

import os
import sys

from gq.daemon.jobfiles import open_log
from tests.support.hosts import wait_for
from tests.support.hung_mount import blocked_in_fuse, hung_mount

import pytest


def test_a_fifo_at_the_next_log_path_fails_the_run_and_frees_its_cards(make_host):
    """Before the fix the shim blocked in open() of the FIFO for good: running, cards held."""
    host = make_host("4x80G", kill_wait="1s")
    logs = host.home / "logs"
    logs.mkdir(exist_ok=True)
    os.mkfifo(logs / "1.out")
    job = host.submit("--gpus", "4", "--", "true")
    ended = host.wait_ended(job, timeout=15)
    assert ended["state"] == "failed", ended
    assert "1.out: not a regular file (a FIFO" in ended["reason"], ended["reason"]
    after = host.submit("--gpus", "4", "--", "true")  # the four cards are free again
    assert host.wait_ended(after, timeout=15)["state"] == "completed"


def test_a_job_that_masks_every_signal_is_gone_after_a_cancel(make_host):
    host = make_host("1x80G", kill_wait="1s")
    masked = ("import signal, time\n"
              "signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - "
              "{signal.SIGKILL, signal.SIGSTOP})\n"
              "print('masked', flush=True)\n"
              "time.sleep(600)")
    cancel_frees_the_card(host, masked, "masked")


def cancel_frees_the_card(host, script: str, ready: str) -> None:
    """Run `script` on the host's one card until it prints `ready`, cancel it: it ends
    cancelled and the next job gets the card."""
    job = host.submit("--", sys.executable, "-c", script)
    wait_for(lambda: ready in host.log(job), what=f"the job to say {ready}")
    host.gq("cancel", str(job))
    assert host.wait_ended(job, timeout=20)["state"] == "cancelled"
    after = host.submit("--", "true")
    assert host.wait_ended(after, timeout=15)["state"] == "completed"


def test_a_cancel_frees_the_card_of_a_run_whose_shim_hangs_on_a_mount(make_host):
    """A user's own daemon: its shim enters the job's directory itself, and on a hung mount
    blocks there, beyond any signal but SIGKILL. Before #34 the job showed `cancelled` at once
    and its card stayed held until the mount answered. Now it is `stopping` (no end recorded)
    while its run may hold the card; once its SIGKILL was due, its shim, blocked in the
    kernel with nothing of the job started, is killed: the job ends and the card is free,
    with the mount still hung."""
    host = make_host("1x80G", kill_wait="0.3s")
    mount = host.work / "nfs"
    (mount / "data").mkdir(parents=True)
    job = host.submit("--hold", "--cwd", str(mount / "data"), "--", "true")
    with hung_mount(str(mount)):
        host.gq("release", str(job))
        wait_for(blocked_in_fuse, what="the job's start to hang on the mount")
        assert host.gq("cancel", str(job)).stdout.strip() == f"job {job}: cancelled"
        shown = host.job(job)
        assert (shown["state"], shown["stop"], shown["ended_at"]) == (
            "stopping", "cancelled", None), shown
        assert "SIGTERM sent at" in shown["reason"], shown["reason"]
        listed = host.gq("ls").stdout
        assert "stopping" in listed and "cancelled by" in listed, listed
        # what the history reads (SQL) says so too
        assert host.gq("ls", "--all").stdout.splitlines()[-1].split()[3] == "stopping"
        top = host.call("top")  # gq top's queue, too
        assert [r[top["columns"].index("state")] for r in top["rows"]] == ["stopping"]
        ended = host.wait_ended(job)
        assert ended["state"] == "cancelled" and ended["ended_at"], ended
        history = [e["detail"] or "" for e in host.job(job)["events"]]
        assert any("was blocked in the kernel before the job began" in d for d in history), \
            history
        after = host.submit("--", "true")  # the card is free, the mount still hung
        assert host.wait_ended(after, timeout=15)["state"] == "completed"


@pytest.mark.parametrize("plant", ["fifo", "symlink", "directory"])
def test_open_log_refuses_anything_but_a_regular_file(tmp_path, plant):
    path = tmp_path / "1.out"
    if plant == "fifo":
        reader = None
        os.mkfifo(path)
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader: the open succeeds
    elif plant == "symlink":
        path.symlink_to(tmp_path / "elsewhere")
    else:
        path.mkdir()
    with pytest.raises(OSError):
        open_log(str(path))
    if plant == "fifo":
        os.close(reader)


def test_open_log_makes_a_regular_file_that_blocks(tmp_path):
    import fcntl

    fd = open_log(str(tmp_path / "logs" / "1.out"))
    try:
        assert not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK
    finally:
        os.close(fd)


@pytest.mark.soak  # 200 processes forked and killed: seconds on a loaded machine
def test_a_bounded_fork_bomb_is_stopped_and_killed_whole_on_cancel(make_host):
    """Without a cgroup (none is delegated here) the shim stops the whole tree, then kills it:
    nothing of a job that forks as fast as it can survives a cancel."""
    host = make_host("1x80G", kill_wait="1s")
    bomb = ("import os, signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('forking', flush=True)\n"
            "for _ in range(200):\n"  # bounded: at most 200 forks in all, each child sleeps
            "    if os.fork() == 0:\n"
            "        signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600); os._exit(0)\n"
            "time.sleep(600)\n")
    cancel_frees_the_card(host, bomb, "forking")


def test_gq_logs_answers_in_one_line_when_a_fifo_replaced_the_log(make_host):
    """A FIFO put where a job's log was (by its owner, in their own logs directory or #SBATCH
    -o path) must not hang whoever reads the log: before the fix `gq logs` blocked in open()."""
    host = make_host("1x80G")
    job = host.submit("--", "echo", "hi")
    assert host.wait_ended(job)["state"] == "completed"
    log = host.home / "logs" / f"{job}.out"
    log.unlink()
    os.mkfifo(log)
    done = host.gq("logs", str(job), check=False, process=True, timeout=20)
    assert done.returncode != 0 and "is not a regular file" in done.stderr, done
