"""A full disk under GQ_HOME: submits are refused with one line, reads go on, nothing earlier
is harmed, and a job whose output hit the limit is marked truncated, not silently cut."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.hosts import GqHost, kill_processes_mentioning, wait_for
from tests.support.hostile import integrity_check
from tests.support.jobs import gated

from gq.cli.submit_args import request_args
from gq.daemon.diskfull import TRUNCATED
from gq.protocol import Connection, GqError

SIZE = 16 << 20


@pytest.fixture
def small_disk_host():
    """A daemon whose GQ_HOME is a 16 MiB tmpfs."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for GQ_HOME needs root")
    top = tempfile.mkdtemp(prefix="gq-", dir="/tmp")
    home = Path(top) / "home"
    home.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs",
                            str(home)], capture_output=True, text=True)
    if mount.returncode != 0:
        shutil.rmtree(top)
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    host = GqHost(home, "1x80G")
    # The daemon's own log outside the small disk: it says what the daemon tried meanwhile.
    (home / "daemon.test.log").symlink_to(Path(top) / "daemon.log")
    try:
        host.start()
        yield host
    finally:
        try:
            host.close()
        finally:
            kill_processes_mentioning(top)
            subprocess.run(["umount", "-l", str(home)], check=False)
            shutil.rmtree(top, ignore_errors=True)


def fill(path: Path) -> None:
    """Write to `path` until the disk is full."""
    chunk = b"\0" * (1 << 16)
    with open(path, "ab", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC
                return


def test_a_full_disk_refuses_submits_keeps_reads_and_marks_cut_output(small_disk_host):
    host = small_disk_host
    done = host.submit("--", "sh", "-c", "echo before")
    assert host.wait_ended(done)["state"] == "completed"
    held = host.submit("--hold", "-n", "kept", "--", "true")
    gate = host.work / "gate"
    # It writes 64 MiB once let go: far more than the disk holds.
    writer = host.submit(*gated(gate)[:-1], gated(gate)[-1].replace(
        "exit 0", "yes 0123456789 | head -c 67108864"))
    host.wait_state(writer, "running")
    filler = host.home / "filler"
    fill(filler)

    # Submits: refused once the database cannot grow (SQLite may first reuse its WAL's room).
    args = request_args({"hold": True}, ["true"])
    queued = []
    with Connection(host.home / "gq.sock") as conn:
        for _ in range(200):
            try:
                queued.append(conn.call("submit", **args)["id"])
            except GqError as e:
                assert e.message.startswith(f"the disk holding {host.home} is full"), e.message
                break
        else:
            raise AssertionError("200 submits were taken on a full disk")
    print(f"\n{len(queued)} submits taken on the full disk before the first refusal")
    proc = host.gq("submit", "--", "true", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "is full" in proc.stderr, proc.stderr
    assert "free some space" in proc.stderr
    # Reads go on, and what was queued before is intact.
    listed = {j["id"]: j for j in host.call("list", all=True)["jobs"]}
    assert set(listed) == {done, held, writer, *queued}
    assert listed[held]["state"] == "held" and listed[done]["state"] == "completed"
    assert "before" in host.gq("logs", str(done)).stdout
    assert host.gq("show", str(held)).returncode == 0

    # The job writes until the disk is full again; its end is recorded once there is room.
    os.truncate(filler, filler.stat().st_size - (2 << 20))
    gate.touch()
    wait_for(lambda: host.exit_record(writer) is not None, timeout=30,
             what="the writer's shim to record its exit on the full disk")
    filler.unlink()
    ended = host.wait_ended(writer, timeout=30)
    assert (ended["state"], ended["exit_code"]) == ("failed", 1)  # head: no space left
    shown = host.job(writer)
    assert shown["output_truncated"] and TRUNCATED in [e["detail"] for e in shown["events"]]
    assert TRUNCATED in host.gq("show", str(writer)).stdout
    logs = host.gq("logs", str(writer))
    assert len(logs.stdout) > 1 << 20 and set(logs.stdout) <= set("0123456789\n")
    assert logs.stderr == f"gq: job {writer}'s output is truncated: the disk holding it " \
                          "filled up while it ran\n"
    assert not host.job(done)["output_truncated"]

    # With room again, submits are taken; nothing was lost or damaged meanwhile.
    assert host.submit("--hold", "--", "true") > max([writer, *queued])
    assert host.job(held)["name"] == "kept"
    assert integrity_check(host.home / "gq.db") == ["ok"]


def fill_database(host) -> None:
    """Fill the disk, then submit until the database cannot grow (SQLite first reuses the
    room its WAL already has): from then on every write of the daemon's fails."""
    fill(host.home / "filler")
    args = request_args({"hold": True}, ["true"])
    with Connection(host.home / "gq.sock") as conn:
        for _ in range(200):
            try:
                conn.call("submit", **args)
            except GqError as e:
                assert "is full" in e.message, e.message
                return
    raise AssertionError("200 submits were taken on a full disk")


def test_an_end_recorded_on_a_full_disk_reaches_the_queue_once_there_is_room(small_disk_host):
    host = small_disk_host
    gate = host.work / "gate"
    job = host.submit(*gated(gate))
    host.wait_state(job, "running")
    fill_database(host)
    gate.touch()
    log = Path(os.readlink(host.home / "daemon.test.log"))
    # Its end fails to reach the database when its shim exits, and again at the next tick.
    wait_for(lambda: log.read_text().count(f"job {job}: recording its end failed") >= 2,
             timeout=30, what="the daemon to try recording the end twice")
    assert host.job(job)["state"] == "running"
    (host.home / "filler").unlink()
    ended = host.wait_ended(job, timeout=30)
    assert (ended["state"], ended["exit_code"]) == ("completed", 0)
    assert host.call("gpus")[0]["jobs"] == []  # its card is free again


@pytest.mark.parametrize("stop", ["gq daemon stop", "kill -9"])
def test_a_database_that_filled_the_disk_is_taken_back_whole_once_there_is_room(
        small_disk_host, stop):
    host = small_disk_host
    kept = [host.submit("--hold", "-n", f"kept{i}", "--", "true") for i in range(5)]
    fill_database(host)
    acknowledged = {j["id"] for j in host.call("list", all=True)["jobs"]}
    if stop == "kill -9":
        host.kill_daemon()
    else:
        host.stop_daemon()
    (host.home / "filler").unlink()
    host.start()
    assert {j["id"] for j in host.call("list", all=True)["jobs"]} == acknowledged
    assert [host.job(i)["name"] for i in kept] == [f"kept{i}" for i in range(5)]
    assert host.submit("--hold", "--", "true") > max(acknowledged)
    assert integrity_check(host.home / "gq.db") == ["ok"]


def test_a_daemon_starts_on_a_full_disk_and_says_in_one_line_when_it_cannot(small_disk_host):
    host = small_disk_host
    filler = host.home / "filler"
    held = host.submit("--hold", "-n", "kept", "--", "true")
    host.kill_daemon()  # its WAL and the WAL's index stay, with their room
    fill(filler)
    # Over a queue it has: it starts, and reads go on.
    host.start()
    assert [(j["id"], j["name"]) for j in host.call("list", all=True)["jobs"]] == [(held, "kept")]
    host.kill_daemon()
    filler.unlink()
    host.start()
    host.stop_daemon()  # the WAL checkpointed into gq.db, and removed with its index
    fill(filler)

    def refused(home: Path) -> str:
        env = {**host.env, "GQ_HOME": str(home)}
        proc = subprocess.run([sys.executable, "-m", "gq", "daemon", "run"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"gq: the disk holding {home} is full"), proc.stderr
        assert "free some space" in proc.stderr

    # Without room for the WAL's index SQLite cannot open gq.db: not damage, a full disk.
    refused(host.home)
    (host.home / "fresh").mkdir()
    refused(host.home / "fresh")  # a new GQ_HOME on the full disk
    # Started by the CLI, whose log on the full disk holds an older daemon's last words.
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"gq: the daemon failed to start: the disk holding "
                                  f"{host.home} is full"), proc.stderr
    filler.unlink()
    host.start()
    assert [j["id"] for j in host.call("list", all=True)["jobs"]] == [held]
