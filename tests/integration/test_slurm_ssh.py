"""A Slurm peer on a login node over SSH: a real sshd on 127.0.0.1 (tests/support/sshd.py) in front of
the real single-node Slurm of tests/support/slurmd.py, so that every Slurm command gq runs goes through
an SSH exec channel. The daemon has no SLURM_CONF of its own: only the SSH sessions (sshd's
SetEnv) can reach this Slurm. Also: what a restarted daemon still knows (migration m012)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.support.hosts import GqHost, kill_processes_mentioning, wait_for
from tests.support.slurmd import why_not
from tests.support.sshd import SSHD, LoopbackSshd

# Longer than any command here takes: one that waited for the stopped login node would take it.
CONNECT_TIMEOUT = 60

pytestmark = pytest.mark.skipif(why_not() is not None, reason=f"no Slurm here: {why_not()}")


class Login:
    def __init__(self, host: GqHost, sshd: LoopbackSshd, cluster):
        self.host, self.sshd, self.cluster = host, sshd, cluster

    def submit(self, *args: str) -> str:
        job = self.host.gq("submit", "--host", "hpc", *args).stdout.strip()
        assert job.startswith("hpc:"), job
        return job

    def show(self, job: str) -> dict:
        return json.loads(self.host.gq("show", job, "--json").stdout)

    def state_of(self, job: str, *states: str, timeout: float = 30) -> dict:
        def check():
            j = self.show(job)
            return j if j["state"] in states else None
        return wait_for(check, timeout, interval=0.3, what=f"{job} to be {'/'.join(states)}")

    def peer(self) -> dict:
        (peer,) = json.loads(self.host.gq("peers", "ls", "--json").stdout)
        return peer

    def slurm_names(self) -> list[str]:
        """The names of the cluster's jobs, asked of Slurm directly (not through gq)."""
        return subprocess.run(["squeue", "--noheader", "--states=all", "-o", "%j"],
                              env=self.cluster.env, capture_output=True, text=True,
                              check=True).stdout.split()


@pytest.fixture(scope="module")
def hpc(slurm_cluster):
    if not os.path.exists(SSHD):
        pytest.skip("no sshd: install openssh-server (.ci/run does)")
    root = Path(tempfile.mkdtemp(prefix="gq-slurmssh-", dir="/tmp"))
    # The login's HOME is a new one: its shell reads no ~/.bashrc of the machine's (one that
    # runs pyenv, say, can take seconds, or hang on a lock a killed session left).
    sshd = LoopbackSshd(root / "sshd", env={"SLURM_CONF": str(slurm_cluster.conf),
                                             "HOME": str(root)})
    host = GqHost(root / "home", "1x80G")
    host.env.pop("SLURM_CONF", None)
    host.env["HOME"] = str(root)  # no ~/.ssh of the machine's
    # list_timeout: a check that waits on the stopped slurmctld (the mid-sbatch test) does not
    # mark hpc down before the submit reaches sbatch, however slow the machine
    with open(host.home / "config.toml", "a") as f:
        f.write('\n[peers]\ncheck_every = "1s"\nbackoff_max = "1s"\nsubmit_retry = "1s"\n'
                f'list_timeout = "30s"\nconnect_timeout = "{CONNECT_TIMEOUT}s"\n')
    try:
        sshd.start()
        host.start()
        added = host.gq("peers", "add", "--slurm", "--name", "hpc", "127.0.0.1", "--port",
                        str(sshd.port), "--identity", str(sshd.user_key), "--accept-new").stdout
        assert f"added hpc (127.0.0.1:{sshd.port}): Slurm " in added and "2 GPU(s)" in added
        yield Login(host, sshd, slurm_cluster)
    finally:
        host.close()
        sshd.stop()
        slurm_cluster.cancel_all()
        kill_processes_mentioning(str(root))
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def login(hpc):
    yield hpc
    if hpc.sshd.proc is None:  # stopped by a test that failed before starting it again
        hpc.sshd.start()


def test_gq_commands_run_slurm_over_ssh(hpc):
    host = hpc.host
    peer = hpc.peer()
    assert (peer["kind"], peer["state"], peer["gpus"]) == ("slurm", "up", 2)
    assert "slurm" in peer["version"] and "slurm" in host.gq("peers", "ls").stdout

    job = hpc.submit("-g", "1", "--", "sh", "-c", 'echo "$SLURM_GPUS_ON_NODE GPU as $GQ_JOB_ID";'
                     ' while [ ! -e go ]; do sleep 0.1; done; echo done; exit 3')
    follow = subprocess.Popen([sys.executable, "-m", "gq", "logs", "-f", job], env=host.env,
                              cwd=host.work, stdout=subprocess.PIPE, text=True)
    try:
        assert hpc.state_of(job, "running")["gpus"] == 1
        wait_for(lambda: host.gq("logs", job).stdout == f"1 GPU as {job}\n", interval=0.3,
                 what="the job's first line, read over SSH")
        shown = host.gq("show", job).stdout
        assert "command  sh -c " in shown and "   host  hpc\n" in shown
        assert host.gq("why", job).stdout.startswith("running in Slurm")
        (row,) = [r for r in host.gq("ls", "--all-hosts").stdout.splitlines() if job in r]
        assert row.split()[-1] == hpc.cluster.node  # where Slurm runs it, as squeue says
        def cards():  # hpc's part; GresUsed counts a GPU of a job that just ended for a moment
            part = json.loads(host.gq("gpus", "--all-hosts", "--json").stdout)[1]
            return part if [n["gpus_used"] for n in part["gpus"]] == [1] else None
        cards = wait_for(cards, interval=0.3, what="sinfo to show the job's GPU")
        assert (cards["name"], cards["kind"]) == ("hpc", "slurm")
        assert [(n["node"], n["gpus_used"], n["gpus"], n["partitions"]) for n in cards["gpus"]] \
            == [(hpc.cluster.node, 1, 2, ["debug"])]
        assert f"{hpc.cluster.node}  " in host.gq("gpus", "--all-hosts").stdout
        offenders = host.gq("offenders", "--all-hosts").stdout
        assert "hpc (Slurm)\nnot watched: a Slurm cluster's jobs are its own" in offenders
        (host.work / "go").touch()
        out, _ = follow.communicate(timeout=60)  # it ends with the job
    finally:
        follow.kill()
    assert (out, follow.returncode) == (f"1 GPU as {job}\ndone\n", 0)
    waited = host.gq("wait", job, check=False)
    assert (waited.returncode, waited.stdout) == (3, f"job {job}: failed (exit 3)\n")

    sleeper = hpc.submit("-g", "0", "--", "sleep", "300")
    hpc.state_of(sleeper, "running")
    assert host.gq("cancel", sleeper).stdout == f"job {sleeper}: cancelled\n"
    assert host.gq("wait", sleeper, check=False).returncode == 143


def test_a_stopped_sshd_is_one_line_and_nothing_is_lost(login):
    hpc, host = login, login.host
    job = hpc.submit("-g", "0", "--", "sh", "-c", "while [ ! -e go2 ]; do sleep 0.1; done; exit 4")
    hpc.state_of(job, "running")
    assert job in host.gq("ls", "--all-hosts").stdout  # and so in hpc's last-seen jobs
    hpc.sshd.stop()
    wait_for(lambda: hpc.peer()["state"] == "down", what="hpc to be marked down")
    began = time.monotonic()
    listed = host.gq("ls", "--all-hosts")
    assert job in listed.stdout  # as last seen
    (warning,) = listed.stderr.splitlines()
    assert warning.startswith("gq: hpc is down (last seen ")
    shown = host.gq("show", job, check=False)  # hpc is down, or (retried) cannot be reached
    assert shown.returncode == 1 and len(shown.stderr.splitlines()) == 1
    assert shown.stderr.startswith(("gq: hpc is down (last seen ", "gq: hpc: cannot connect"))
    later = host.gq("submit", "--host", "hpc", "-g", "0", "--", "echo", "sent later")
    host.wait_reason(int(later.stdout), "PeerDown")  # kept here until hpc answers
    # Not one of them waited for a connection to the login node.
    assert time.monotonic() - began < CONNECT_TIMEOUT
    error = host.gq("peers", "ls").stdout.splitlines()[-1]  # the error, named once
    assert error.startswith("hpc: ") and not error.startswith("hpc: hpc: "), error
    (host.work / "go2").touch()  # it ends while gq cannot see it

    hpc.sshd.start()
    wait_for(lambda: hpc.peer()["state"] == "up", what="hpc to come back")
    assert host.gq("wait", job, check=False).returncode == 4
    moved = host.gq("wait", later.stdout.strip()).stdout
    assert moved.startswith("job hpc:") and moved.endswith(": completed (exit 0)\n")
    assert host.gq("logs", moved.split()[1].rstrip(":")).stdout == "sent later\n"


def _unread_by_slurmctld(port: int, client_ports: set[int]) -> bool:
    """Whether a request from one of client_ports waits, unread, in slurmctld's socket."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, remote, _, queues = line.split()[1:5]
            if (int(local.rsplit(":", 1)[1], 16) == port
                    and int(remote.rsplit(":", 1)[1], 16) in client_ports
                    and int(queues.split(":")[1], 16) > 0):
                return True
    return False


def _sbatch_ports(name: str) -> set[int]:
    import psutil

    ports = set()
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "sbatch" and f"--job-name={name}" in (p.info["cmdline"] or []):
            try:
                connections = getattr(p, "net_connections", None) or p.connections  # psutil<6
                ports |= {c.laddr.port for c in connections("tcp")}
            except psutil.Error:
                pass
    return ports


def test_sshd_killed_mid_sbatch_gives_exactly_one_job(login):
    """The connection is cut after sbatch sent the job to slurmctld (stopped, so it has not
    answered): gq does not take the cut for a refusal, and the submit sent again with the same
    key (sbatch --comment) finds the job the first one made."""
    hpc, name = login, f"cut-{uuid.uuid4().hex[:8]}"
    host = hpc.host
    ctld = hpc.cluster.slurmctld()
    os.kill(ctld, signal.SIGSTOP)
    try:
        submit = subprocess.Popen([sys.executable, "-m", "gq", "submit", "--host", "hpc", "-g",
                                   "0", "-n", name, "--", "true"], env=host.env, cwd=host.work,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: _unread_by_slurmctld(hpc.cluster.ctld_port, _sbatch_ports(name)),
                 what="sbatch to send the job to slurmctld")
        hpc.sshd.stop()
    finally:
        os.kill(ctld, signal.SIGCONT)
    out, err = submit.communicate(timeout=60)
    assert submit.returncode == 0, err  # not "sbatch refused it"
    assert out.strip().isdigit()  # kept here (PeerDown) until hpc answers again
    wait_for(lambda: name in hpc.slurm_names(), what="slurmctld to make the first one")
    hpc.sshd.start()
    waited = host.gq("wait", out.strip()).stdout
    assert waited.startswith("job hpc:") and waited.endswith(": completed (exit 0)\n")
    assert hpc.slurm_names().count(name) == 1
    assert hpc.show(waited.split()[1].rstrip(":"))["command"] == ["true"]


def test_a_restarted_daemon_still_knows_the_jobs_it_sent(hpc):
    host = hpc.host
    job = hpc.submit("-g", "0", "-p", "low", "--", "sh", "-c",
                     "while [ ! -e go3 ]; do sleep 0.1; done; exit 7")
    hpc.state_of(job, "running")
    host.kill_daemon(signal.SIGKILL)
    host.start()
    shown = hpc.show(job)
    assert shown["command"] == ["sh", "-c", "while [ ! -e go3 ]; do sleep 0.1; done; exit 7"]
    assert (shown["state"], shown["priority"]) == ("running", "low")
    assert "command  sh -c 'while [ ! -e go3 ]" in host.gq("show", job).stdout
    (host.work / "go3").touch()
    assert host.gq("wait", job, check=False).returncode == 7
    assert (hpc.show(job)["state"], hpc.show(job)["exit_code"]) == ("failed", 7)
