"""Peers over a real OpenSSH server on 127.0.0.1: a local daemon and a peer daemon (each with its
own GQ_HOME and simulated cards), the peer reached through sshd and `gq rpc`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from tests.support.hosts import wait_for
from gq.protocol import encode, request
from tests.support.sshd import SSHD, LoopbackSshd

GQ_COMMAND = f"{sys.executable} -m gq"  # the peer runs this checkout's gq


class Cluster:
    def __init__(self, local, peer, sshd: LoopbackSshd):
        self.local, self.peer, self.sshd = local, peer, sshd

    def add(self, *extra: str, check: bool = True):
        return self.local.gq(
            "peers", "add", "127.0.0.1", "--name", "peer", "--port", str(self.sshd.port),
            "--user", self.sshd.user, "--identity", str(self.sshd.user_key),
            "--gq-home", str(self.peer.home), "--gq-command", GQ_COMMAND, *extra, check=check)

    def peer_state(self) -> dict:
        (peer,) = json.loads(self.local.gq("peers", "ls", "--json").stdout)
        return peer


@pytest.fixture
def cluster(make_host):
    if not os.path.exists(SSHD):
        pytest.skip("no sshd: install openssh-server (.ci/run does)")
    root = Path(tempfile.mkdtemp(prefix="gq-ssh-", dir="/tmp"))
    sshd = LoopbackSshd(root / "sshd")
    sshd.start()
    peer = make_host("2x80G")
    local = make_host("1x80G", start=False)
    local.env["HOME"] = str(root / "home")  # no ~/.ssh of the machine's: nothing known yet
    with open(local.home / "config.toml", "a") as f:
        f.write('\n[peers]\ncheck_every = "0.3s"\nbackoff_max = "0.5s"\nsubmit_retry = "10s"\n')
    local.start()
    yield Cluster(local, peer, sshd)
    sshd.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def joined(cluster) -> Cluster:
    cluster.add("--accept-new")
    return cluster


def test_an_unknown_host_key_is_refused_unless_accepted_and_a_changed_one_always(cluster):
    refused = cluster.add(check=False)
    assert refused.returncode == 1
    assert "not a known host" in refused.stderr and cluster.sshd.fingerprint() in refused.stderr
    assert json.loads(cluster.local.gq("peers", "ls", "--json").stdout) == []

    added = cluster.add("--accept-new")
    assert cluster.sshd.fingerprint() in added.stdout and "added peer" in added.stdout
    assert cluster.peer_state()["state"] == "up" and cluster.peer_state()["gpus"] == 2

    cluster.sshd.stop()
    cluster.sshd.new_host_key()
    cluster.sshd.start()
    check = cluster.local.gq("peers", "check", check=False)
    assert check.returncode == 1 and "HAS CHANGED" in check.stdout
    again = cluster.add("--accept-new", "--replace", check=False)
    assert again.returncode == 1 and "HAS CHANGED" in again.stderr


def test_a_job_sent_to_any_runs_where_it_starts_first(joined):
    local, peer = joined.local, joined.peer
    here = local.gq("submit", "--host", "any", "--", "sleep", "60").stdout.strip()
    assert here.isdigit()  # both could start it now: the tie goes to this host
    local.wait_state(int(here), "running")
    there = local.gq("submit", "--host", "any", "--", "python", "-c", "print('hi there')")
    ref = there.stdout.strip()
    assert ref.startswith("peer:")  # this host's one card is taken
    assert local.gq("wait", ref).stdout.strip() == f"job {ref}: completed (exit 0)"
    assert local.gq("logs", ref).stdout == "hi there\n"
    assert peer.count_jobs() == 1
    hosts = json.loads(local.gq("gpus", "--all-hosts", "--json").stdout)
    assert [(h["name"], h["state"], len(h["gpus"])) for h in hosts] == [
        (socket.gethostname(), "up", 1), ("peer", "up", 2)]
    assert "peer\tpeer, up, 2 GPU(s)\n" in local.gq("__complete", "hosts", "").stdout
    seen = json.loads(local.gq("offenders", "--all-hosts", "--json").stdout)
    assert [(h["name"], h["state"], h["offenders"]) for h in seen] == [
        (socket.gethostname(), "up", []), ("peer", "up", [])]


def test_a_peer_is_kept_across_daemon_restarts_and_bad_requests_are_refused(joined):
    local = joined.local
    local.kill_daemon(signal.SIGTERM)
    local.start()
    assert joined.peer_state()["name"] == "peer"
    wait_for(lambda: joined.peer_state()["state"] == "up", what="the peer to be checked")
    for args, needle in [
        (("show", "nowhere:3"), "nowhere is not a peer (see gq peers ls)"),
        (("submit", "--host", "nowhere", "--", "true"), "nowhere is not a peer"),
        (("submit", "--host", "any", "-g", "9", "--", "true"), "no host can run this job: "),
        (("submit", "--host", "peer", "--after", "1", "--", "true"),
         f"--host peer: its dependencies are jobs of {socket.gethostname()}"),
        (("peers", "add", "any"), "peer name 'any' is taken (reserved)"),
        (("peers", "add", "127.0.0.1", "--name", "peer"), "peer is already a peer"),
    ]:
        proc = local.gq(*args, check=False)
        assert proc.returncode == 2 and needle in proc.stderr, (args, proc.stderr)


def test_logs_cancel_and_wait_across_hosts(joined):
    local = joined.local
    script = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"
    ref = local.gq("submit", "--host", "peer", "--", "python", "-c", script).stdout.strip()
    wait_for(lambda: "started" in local.gq("logs", ref).stdout, what="the remote job's output")
    listed = json.loads(local.gq("ls", "--all-hosts", "--json").stdout)
    assert [(j["id"], j["host"], j["state"]) for j in listed] == [(ref, "peer", "running")]
    assert "peer:" not in local.gq("ls").stdout  # without --all-hosts: this host only
    assert local.gq("cancel", ref).stdout.strip() == f"job {ref}: cancelled"
    waited = local.gq("wait", ref, check=False)
    assert waited.returncode == 143 and waited.stdout.strip() == f"job {ref}: cancelled (exit 143)"
    assert json.loads(local.gq("show", ref, "--json").stdout)["state"] == "cancelled"
    follow = local.gq("logs", "-f", ref)
    assert follow.stdout == "started\n"
    missing = local.gq("submit", "--host", "peer", "--cwd", "/no/such/dir", "--", "true",
                       check=False)
    assert missing.returncode == 2 and "peer: --cwd '/no/such/dir': no such directory" in \
        missing.stderr


def _relays() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] and p.info["cmdline"][-3:-2] == ["rpc"]]


def test_sshd_killed_mid_submit_gives_exactly_one_job(joined):
    """The cut comes after the peer's relay passed the submit on and before the answer came
    back; the local daemon sends it again with the same key once sshd is back."""
    local, peer = joined.local, joined.peer
    args = {"command": ["true"], "cwd": "/", "env": {"BIG": "x" * 30_000}, "gpus": 1}
    # What the peer's relay reads: the request as forwarded, with its 32-digit key.
    size = len(encode(request("submit", **args, idempotency_key="0" * 32)))
    peer.daemon.send_signal(signal.SIGSTOP)  # it will take the request, but answer late
    try:
        before = {p.pid: p.io_counters().read_chars for p in _relays()}
        submit = ThreadPoolExecutor(1).submit(local.call, "submit", **args, host="peer")

        def passed_on():
            # A relay read the whole request from its channel and sleeps: in its only wait
            # after that, for the stopped daemon's answer, so the request is in the daemon's
            # socket. (Reading it is not enough: sshd.stop() kills the relay too, and under
            # load it could die before it passed the request on.)
            for p in _relays():
                try:
                    if (p.io_counters().read_chars - before.get(p.pid, 0) >= size
                            and p.status() == psutil.STATUS_SLEEPING):
                        return True
                except psutil.Error:
                    pass
            return False

        wait_for(passed_on, what="the relay to pass the submit on")
        joined.sshd.stop()
    finally:
        peer.daemon.send_signal(signal.SIGCONT)
    wait_for(lambda: peer.count_jobs() == 1, what="the peer to make the job")
    joined.sshd.start()
    job = submit.result(timeout=60)
    assert job["id"] == f"peer:{peer.call('list', all=True)['jobs'][0]['id']}"
    assert peer.count_jobs() == 1


def test_a_stopped_peer_is_shown_down_and_comes_back(joined):
    local, peer = joined.local, joined.peer
    ref = local.gq("submit", "--host", "peer", "--", "sleep", "60").stdout.strip()
    wait_for(lambda: joined.peer_state()["running"] == 1, what="the peer's job to be seen")
    joined.sshd.stop()
    down = wait_for(lambda: (s := joined.peer_state())["state"] == "down" and s,
                    what="the peer to be marked down")
    assert down["last_seen"] and down["error"]
    listed = local.gq("ls", "--all-hosts")
    assert ref in listed.stdout and "peer is down (last seen" in listed.stderr
    assert peer.job(int(ref.split(":")[1]))["state"] == "running"  # it keeps running there

    # Sent to the down peer, or to `any` when this host could never run it: wait here.
    waiting = int(local.gq("submit", "--host", "peer", "--", "true").stdout)
    too_big = int(local.gq("submit", "--host", "any", "-g", "2", "--", "true").stdout)
    for job_id in (waiting, too_big):
        assert local.wait_reason(job_id, "PeerDown")["host"] in ("peer", "any")

    joined.sshd.start()
    wait_for(lambda: joined.peer_state()["state"] == "up", what="the peer to come back")
    local.gq("cancel", ref)  # too_big needs both of the peer's cards
    for job_id in (waiting, too_big):
        waited = local.gq("wait", str(job_id))  # followed to where it went
        assert waited.stdout.startswith("job peer:") and "completed" in waited.stdout
    assert peer.count_jobs() == 3
    assert local.call("list")["jobs"] == []  # sent on: listed there, not here
