"""A login node's sshd refuses channels beyond its MaxSessions (10 by default in OpenSSH): the
Slurm commands gq runs there over its one connection must wait for a turn rather than look
like the node going down. Against a real sshd on 127.0.0.1 (tests/support/sshd.py) allowing three
sessions; no Slurm needed."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from gq.remote.spec import PeerSpec, Unreachable
from gq.slurm.backend import SshSlurm
from tests.support.hosts import wait_for
from tests.support.sshd import SSHD, LoopbackSshd

pytestmark = pytest.mark.skipif(not os.path.exists(SSHD),
                                reason="no sshd: install openssh-server (.ci/run does)")


@pytest.fixture
def login(tmp_path):
    # A fresh HOME: the session's shell reads no ~/.bashrc of the machine's.
    sshd = LoopbackSshd(tmp_path / "sshd", env={"HOME": str(tmp_path)}, max_sessions=3)
    sshd.start()
    yield sshd, PeerSpec("hpc", "127.0.0.1", port=sshd.port, identity=str(sshd.user_key),
                         kind="slurm"), tmp_path / "known_hosts"
    sshd.stop()


def burst(login, max_channels: int, commands: int = 9) -> list:
    """`commands` at once, each holding its channel for half a second: exit codes, or errors."""
    _sshd, spec, known_hosts = login
    backend = SshSlurm(spec, known_hosts, 10.0, max_channels=max_channels)
    backend.open(accept_new=True)

    def one(_):
        try:
            return backend.run(["sleep", "0.5"], timeout=30).rc
        except Unreachable as e:
            return e.message

    try:
        with ThreadPoolExecutor(commands) as pool:
            return list(pool.map(one, range(commands)))
    finally:
        backend.close()


def test_commands_beyond_the_sessions_of_sshd_wait_for_a_turn(login):
    # gq's own cap is that of this sshd: every command runs, three at a time (sshd frees a
    # closed session a moment late, so a refused channel is tried again, not taken for a
    # lost node).
    assert burst(login, max_channels=3) == [0] * 9
    # ...and a login node allowing fewer sessions than gq's cap still runs them all.
    assert burst(login, max_channels=9) == [0] * 9


def test_no_turn_within_the_time_limit_is_one_line(login):
    _sshd, spec, known_hosts = login
    backend = SshSlurm(spec, known_hosts, 10.0, max_channels=1)
    backend.open(accept_new=True)
    try:
        with ThreadPoolExecutor(2) as pool:
            slow = pool.submit(backend.run, ["sleep", "3"], None, 30)
            wait_for(lambda: any(p.info["cmdline"] == ["sleep", "3"]  # it holds the turn
                                 for p in psutil.process_iter(["cmdline"])), 10,
                     what="the first command to run")
            with pytest.raises(Unreachable, match=r"^hpc: `squeue`: no turn on the connection "
                               r"within 1s \(commands running there at once: 1, the most gq "
                               r"runs\)$"):
                backend.run(["squeue"], timeout=1)
            assert slow.result().rc == 0
    finally:
        backend.close()
