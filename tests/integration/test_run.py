"""`gq run` (docs/run.md): a job queued like any, run in the foreground on the caller's terminal
or pipes, ending as the job does; on one real daemon with two simulated cards, `gq run` a real
process each time (its descriptors, signals and exit status are what is tested)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pytest

from tests.support.hosts import GqHost, kill_processes_mentioning, wait_for
from tests.support.jobs import gated

KILL_WAIT = 1.0


@pytest.fixture(scope="module")
def shared():
    d = tempfile.mkdtemp(prefix="gq-", dir="/tmp")
    host = GqHost(Path(d) / "home", "2x80G", kill_wait=f"{KILL_WAIT:g}s")
    host.start()
    yield host
    host.close()
    kill_processes_mentioning(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def host(shared):
    """The module's daemon, left with nothing running by each test."""
    yield shared
    if shared.daemon.poll() is not None:  # a test killed it: the next one gets it back
        shared.start()
    active = [str(j["id"]) for j in shared.call("list")["jobs"]]
    if active:
        shared.call("cancel", ids=active)
        for i in active:
            shared.wait_ended(int(i))


def gq_run(host: GqHost, *args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    """`gq run ARGS` as from a shell's foreground: a suite started in the background (`pytest
    &`, nohup, some CI runners) ignores SIGINT, which its children inherit, and gq run then
    leaves Ctrl-C ignored, as a program started with `&` should."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    then = popen.pop("preexec_fn", None)

    def foreground() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if then is not None:
            then()

    popen["preexec_fn"] = foreground
    return subprocess.Popen([sys.executable, "-m", "gq", "run", *args], env=env or host.env,
                            cwd=host.work, **popen)


def only_job(host: GqHost, state: str | None = None) -> dict:
    def one():
        jobs = host.call("list", states=[state])["jobs"] if state else host.call("list")["jobs"]
        return jobs[0] if len(jobs) == 1 else None

    return wait_for(one, what=f"one {state or 'active'} job")


class Terminal:
    """A pseudo-terminal standing for the caller's, `gq run` in a session of its own with it
    as its controlling terminal; what the job writes is read from its master."""

    def __init__(self, rows: int = 30, cols: int = 100):
        self.master, self.slave = os.openpty()
        self.resize(rows, cols)
        self.settings = termios.tcgetattr(self.slave)
        self.seen = b""

    def start(self, host: GqHost, *args: str) -> subprocess.Popen:
        return gq_run(host, *args, **self.streams())

    def streams(self) -> dict:
        return dict(stdin=self.slave, stdout=self.slave, stderr=self.slave,
                    start_new_session=True,
                    preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))

    def resize(self, rows: int, cols: int) -> None:  # the kernel tells gq run (SIGWINCH)
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("4H", rows, cols, 0, 0))

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def expect(self, pattern: bytes, timeout: float = 20.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while (found := re.search(pattern, self.seen)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} on the terminal; it shows {self.seen!r}")
            if select.select([self.master], [], [], left)[0]:
                self.seen += os.read(self.master, 65536)
        return found

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def terminal():
    t = Terminal()
    yield t
    t.close()


def test_piped_the_job_reads_stdin_has_its_card_and_gq_run_exits_with_its_code(host):
    script = ('read line; echo "got $line"; echo "cvd=$CUDA_VISIBLE_DEVICES"; '
              '[ -t 0 ] || echo "a pipe"; exit 7')
    run = gq_run(host, "--", "sh", "-c", script, stdin=subprocess.PIPE)
    out, err = run.communicate(b"hello\n", timeout=30)
    assert run.returncode == 7, err
    lines = out.decode().splitlines()
    assert lines[0] == "got hello" and lines[2] == "a pipe"
    # gq run ends once the end is on disk; the daemon records it when it reads it
    job = host.wait_ended(host.call("list", all=True)["jobs"][-1]["id"])
    assert (job["name"], job["state"], job["exit_code"]) == ("run:sh", "failed", 7)
    assert lines[1] == f"cvd={','.join(map(str, job['gpu_ids']))}"
    assert host.job(job["id"])["attached"] == {"tty": False, "no_hangup": False, "log": False}


def test_on_a_terminal_the_job_gets_a_terminal_of_its_own_sized_as_the_callers(host, terminal):
    script = 'tty; stty size; read line; echo "got $line"; exit 3'
    run = terminal.start(host, "--", "sh", "-c", script)
    job_tty = terminal.expect(rb"(/dev/pts/\d+)\r\n")[1].decode()
    assert job_tty != os.ttyname(terminal.slave)
    terminal.expect(rb"30 100\r\n")
    terminal.type(b"typed\r")
    terminal.expect(rb"got typed\r\n")
    assert run.wait(timeout=20) == 3
    assert termios.tcgetattr(terminal.slave) == terminal.settings  # put back as it was


def test_ctrl_c_reaches_the_job_and_a_second_one_cancels_it(host, terminal):
    script = ('trap "echo caught" INT; trap "stty size" WINCH; echo ready; '
              'while :; do sleep 0.05; done')
    run = terminal.start(host, "--", "sh", "-c", script)
    terminal.expect(b"ready")
    assert "run:sh [tty]" in host.gq("ls").stdout  # a terminal attached, as gq top shows too
    terminal.resize(40, 120)  # the job's terminal follows the caller's (SIGWINCH)
    terminal.expect(b"40 120")
    terminal.type(b"\x03")  # the job's terminal makes it SIGINT, for the job's foreground
    terminal.expect(b"caught")
    terminal.type(b"\x03")
    terminal.expect(b"cancelled by a second Ctrl-C")
    assert run.wait(timeout=20) == -signal.SIGINT
    # the shim killed it; the daemon records the end once the shim has said so
    job = host.wait_ended(host.call("list", all=True)["jobs"][-1]["id"])
    assert job["state"] == "cancelled" and "second Ctrl-C" in job["reason"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash, for its job control")
def test_ctrl_z_in_a_shell_stops_the_job_bg_leaves_it_stopped_and_fg_resumes_it(host, terminal):
    env = {**host.env, "PS1": "$ ", "TERM": "dumb"}
    shell = subprocess.Popen(["bash", "--norc", "--noprofile", "-i"], env=env, cwd=host.work,
                             **terminal.streams())
    try:
        terminal.expect(rb"\$ $")
        script = 'echo ready; read x; echo "got $x"'
        terminal.type(f"{sys.executable} -m gq run -- sh -c '{script}'\r".encode())
        terminal.expect(b"\nready")
        terminal.type(b"\x1a")
        terminal.expect(rb"Stopped.*\r\n\$ $")  # the shell has its terminal back
        assert only_job(host)["state"] == "running"  # its card kept
        terminal.type(b"bg\r")  # refused: it would read the terminal from under the shell
        terminal.expect(rb"&\r\n")
        terminal.type(b"echo shell-$((40 + 2))\r")
        terminal.expect(b"shell-42")
        terminal.type(b"fg\r")
        terminal.expect(b"fg\r\n.*gq run.*\r\n")  # the shell hands it the terminal
        terminal.type(b"more\r")
        terminal.expect(rb"got more\r\n\$ $")  # the shell's again once gq run has ended
        terminal.type(b"exit\r")
        assert shell.wait(timeout=20) == 0
    finally:
        if shell.poll() is None:
            shell.kill()


def test_a_signal_to_gq_run_reaches_the_job_and_gq_run_dies_by_it(host):
    run = gq_run(host, "--", "sh", "-c", "echo ready; exec sleep 60")
    assert run.stdout.readline() == b"ready\n"
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=20) == -signal.SIGINT  # as the command itself would have


def test_a_waiting_run_shows_why_then_runs_once_its_card_frees(host, terminal):
    gate = host.work / "gate"
    blocker = host.submit("-g", "2", *gated(gate))
    host.wait_state(blocker, "running")
    # stderr on a terminal: one line, updated in place.
    shown = gq_run(host, "--", "sh", "-c", "echo started", stderr=terminal.slave)
    waiting = only_job(host, "pending")
    assert "run:sh [pipes]" in host.gq("ls").stdout  # gq ls marks what a caller waits on
    terminal.expect(rb"\r\x1b\[Kjob %d waiting \(Ctrl-C cancels\): 0 waiting ahead of it; "
                    rb"pending \(Resources\)" % waiting["id"])
    # stderr piped: one line, once; Ctrl-C while it waits cancels it and nothing runs.
    marker = host.work / "ran"
    quiet = gq_run(host, "--", "touch", str(marker))
    line = quiet.stderr.readline().decode()
    # its place: behind the first run, which waits for the same card
    assert re.match(r"gq: job \d+ waiting \(Ctrl-C cancels\): 1 waiting ahead of it; "
                    r"pending ", line), line
    quiet.send_signal(signal.SIGINT)
    assert quiet.wait(timeout=20) == 130
    assert "cancelled before it started" in quiet.stderr.read().decode()
    gate.touch()
    out, _ = shown.communicate(timeout=30)
    assert shown.returncode == 0 and out == b"started\n"
    assert host.job(waiting["id"])["state"] == "completed"
    assert not marker.exists()
    assert host.call("list", all=True)["jobs"][-1]["state"] == "cancelled"


def test_with_log_the_output_is_also_in_the_jobs_log_files(host, terminal):
    piped = gq_run(host, "--log", "--", "sh", "-c", "echo out; echo err >&2")
    out, err = piped.communicate(timeout=30)
    assert (piped.returncode, out, err) == (0, b"out\n", b"err\n")
    job = host.call("list", all=True)["jobs"][-1]["id"]
    assert (host.log(job), host.log(job, err=True)) == ("out\n", "err\n")
    on_terminal = terminal.start(host, "--log", "--", "sh", "-c", "echo on-screen")
    terminal.expect(b"on-screen\r\n")
    assert on_terminal.wait(timeout=20) == 0
    job = host.call("list", all=True)["jobs"][-1]["id"]
    assert (host.home / "logs" / f"{job}.out").read_bytes() == b"on-screen\r\n"  # as shown


def test_killing_gq_run_cancels_its_job_and_frees_its_card(host):
    run = gq_run(host, "--", "sh", "-c", "echo ready; sleep 60")
    assert run.stdout.readline() == b"ready\n"
    job = only_job(host, "running")
    run.kill()
    run.wait()
    ended = host.wait_state(job["id"], "cancelled", timeout=KILL_WAIT + 5)
    assert "gq run went away" in ended["reason"]
    assert all(not card["jobs"] for card in host.call("gpus"))


def test_a_daemon_killed_mid_run_changes_nothing_gq_run_shows(host):
    run = gq_run(host, "--", "sh", "-c", "echo ready; read x; echo after; exit 5",
                 stdin=subprocess.PIPE)
    assert run.stdout.readline() == b"ready\n"
    job = only_job(host, "running")
    host.kill_daemon(signal.SIGKILL)
    host.start()  # the next daemon re-adopts the run; gq run never asked the daemon
    run.stdin.write(b"go\n")
    run.stdin.close()
    assert run.stdout.read() == b"after\n"
    assert run.wait(timeout=20) == 5
    ended = host.wait_ended(job["id"])
    assert (ended["state"], ended["exit_code"]) == ("failed", 5)


def test_a_burn_started_from_a_gq_run_shell_is_counted_against_its_slice(host):
    env = {**host.env, "SHELL": "/bin/sh"}
    run = gq_run(host, "-m", "20G", env=env, stdin=subprocess.PIPE)  # no command: $SHELL
    burn = f"{sys.executable} -m gq.sim.burn --mem 5G --seconds 60"
    run.stdin.write(f"{burn} > /dev/null & echo burning\n".encode())
    run.stdin.flush()
    assert run.stdout.readline() == b"burning\n"
    job = only_job(host, "running")

    def on_its_card():
        card = host.call("gpus")[job["gpu_ids"][0]]
        return card if card["memory_used"] == 5 << 30 else None

    card = wait_for(on_its_card, what="the burn's memory on the job's card")
    assert [j["id"] for j in card["jobs"]] == [job["id"]] and card["external_used"] == 0
    run.stdin.write(b"kill $!; exit 4\n")
    run.stdin.close()
    assert run.wait(timeout=20) == 4

