"""A busy, stopped or crowded daemon: the CLI waits its turn, says so in one line, and a submit
that timed out is sent again with its key and queued once (docs/reliability.md)."""

from __future__ import annotations

import platform
import signal
import subprocess
import sys

import pytest

from tests.support.hosts import wait_for
from tests.support.sysmode import SystemHost, two_users

CONNECT_SYSCALL = {"x86_64": 42, "aarch64": 203}.get(platform.machine())

# Fills the daemon's listen backlog with connections (non-blocking, until the kernel says
# EAGAIN), says "full N", and closes them all when told to on stdin.
FILL = """
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
while True:
    s = socket.socket(socket.AF_UNIX); s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        s.close(); break
    held.append(s)
print("full", len(held), flush=True)
sys.stdin.readline()
for s in held: s.close()
"""


@pytest.fixture(scope="module")
def users():
    with two_users("w", "v") as made:
        yield made


def _in_connect(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split(" ", 1)[0] == str(CONNECT_SYSCALL)
    except OSError:
        return False


@pytest.mark.skipif(CONNECT_SYSCALL is None, reason="knows the connect syscall of x86_64 and "
                                                    "aarch64 only")
def test_a_full_backlog_makes_another_users_command_wait_not_fail(users):
    ann, bob = users.ann, users.bob
    host = SystemHost().start()
    filler = ls = None
    try:
        host.daemon.send_signal(signal.SIGSTOP)  # busy: accepting nothing
        filler = subprocess.Popen(
            [host.python, "-c", FILL, str(host.socket)], user=ann.uid, group=ann.gid,
            env=host.user_env(ann), text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert filler.stdout.readline().startswith("full ")
        ls = subprocess.Popen(
            [host.python, "-m", "gq", "ls"], user=bob.uid, group=bob.gid,
            env=host.user_env(bob), cwd=bob.home, text=True, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        # Today's client gives up at once (EAGAIN); a waiting one sits in connect().
        wait_for(lambda: ls.poll() is not None or _in_connect(ls.pid),
                 what="bob's gq ls to connect")
        filler.stdin.write("close\n")
        filler.stdin.flush()
        filler.wait(timeout=30)
        host.daemon.send_signal(signal.SIGCONT)
        out, err = ls.communicate(timeout=60)
        assert (ls.returncode, err) == (0, ""), err
        assert out.startswith("ID")
    finally:
        host.daemon.send_signal(signal.SIGCONT)
        for proc in (filler, ls):
            if proc is not None and proc.poll() is None:
                proc.kill()
        host.close()


def _gq(host, *args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gq", *args], env={**host.env, **env},
                            cwd=host.work, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_a_slow_daemon_is_one_line_and_a_timed_out_submit_is_queued_once(make_host):
    host = make_host()
    host.daemon.send_signal(signal.SIGSTOP)
    try:
        ls = _gq(host, "ls", GQ_TIMEOUT="0.5")
        out, err = ls.communicate(timeout=60)
        assert (ls.returncode, out) == (1, "")
        assert err == ("gq: the daemon did not answer within 0.5s: it is busy or stuck (see "
                       "gq daemon status; GQ_TIMEOUT=SECONDS waits longer)\n")
        submit = _gq(host, "submit", "-g", "0", "--", "true", GQ_TIMEOUT="0.5")
        said = submit.stderr.readline()
        assert said == ("gq: the daemon did not answer within 0.5s; sending the submit again "
                        "(it is queued once)\n")
        # Both attempts wait in the socket now (and maybe more): all are answered with one job.
        wait_for(lambda: said in submit.stderr.readline(), what="a second resend")
    finally:
        host.daemon.send_signal(signal.SIGCONT)
    out, _ = submit.communicate(timeout=60)
    assert submit.returncode == 0
    jobs = host.call("list", all=True)["jobs"]
    assert [j["id"] for j in jobs] == [int(out)]
    bad = _gq(host, "ls", GQ_TIMEOUT="x")
    assert bad.communicate(timeout=60)[1] == "gq: GQ_TIMEOUT='x': expected seconds, e.g. 60\n"
    assert bad.returncode == 2
