"""kill -9 of the daemon, again and again, while clients flood it with submits: every
acknowledged submit is there once, none half-written, and a retried submit is not queued twice."""

from __future__ import annotations

import os
import random
import signal
import socket
import sqlite3
import statistics
import time

import pytest

from tests.support.hosts import wait_for
from tests.support.hostile import collect, db_jobs, integrity_check, start_flood

from gq.cli.client import start_daemon
from gq.cli.daemon_ctl import wait_gone
from gq.cli.submit_args import request_args
from gq.protocol import Connection, encode, request

SEED = 20240610
KILLS = 20
CLIENTS = 8
ARRAY_CLIENTS = 2  # of them, submitting arrays of ARRAY elements
ARRAY = 4


def _highest_id(db) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
    except sqlite3.OperationalError:  # not created yet
        row = None
    finally:
        conn.close()
    return row[0] if row else 0


def _ping_pid(host) -> int | None:
    try:
        with Connection(host.home / "gq.sock", timeout=5) as conn:
            return conn.call("ping")["pid"]
    except OSError:
        return None


@pytest.mark.timeout(600)
def test_kill_9_at_20_random_moments_of_a_flood_loses_and_repeats_nothing(make_host,
                                                                        monkeypatch):
    host = make_host("1x80G")
    # Restarts go through the CLI's own start path, as the clients' do: whichever starts
    # the daemon first wins its lock, the other waits for it to answer.
    for key in ("GQ_HOME", "GQ_SIM_GPUS"):
        monkeypatch.setenv(key, host.env[key])
    db, stop = host.home / "gq.db", host.work / "stop"
    rng = random.Random(SEED)
    flood = start_flood(host, CLIENTS - ARRAY_CLIENTS, f"--until {stop}", "--hold", "-g", "0",
                        "--", "true")
    flood += start_flood(host, ARRAY_CLIENTS, f"--until {stop}", "--hold", "-g", "0",
                         "--array", f"0-{ARRAY - 1}", "--", "true")
    pid, recoveries = host.daemon.pid, []
    try:
        for _ in range(KILLS):
            # A random moment with submits under way: a few new jobs in, then up to 0.2s more.
            floor = _highest_id(db) + rng.randint(1, 30)
            wait_for(lambda: _highest_id(db) >= floor, timeout=60, what="submits to go on")
            time.sleep(rng.uniform(0, 0.2))
            os.kill(pid, signal.SIGKILL)
            assert wait_gone(pid)  # a zombie, all its threads too: its socket is closed
            began = time.monotonic()
            start_daemon(host.env["GQ_HOME"])
            pid = wait_for(lambda: _ping_pid(host), what="a new daemon")
            recoveries.append(time.monotonic() - began)
        stop.touch()
        results = collect(flood)
    finally:
        stop.touch()
        with Connection(host.home / "gq.sock") as conn:
            conn.call("shutdown")
        assert wait_gone(pid)
    for code, ids, stderr in results:
        assert code == 0, stderr
        # The only thing a client may say: that it started the daemon itself.
        assert all(line.startswith("gq: started the daemon") for line in stderr.splitlines())
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    acked = [i for _, ids, _ in results for i in ids]
    assert len(acked) == len(set(acked))
    arrays = [i for _, ids, _ in results[CLIENTS - ARRAY_CLIENTS:] for i in ids]
    stored = db_jobs(db)
    # Every acknowledged submit is there, whole (an array with all its elements), and nothing
    # else: a retried one was queued once.
    expected = set(acked) | {i + k for i in arrays for k in range(ARRAY)}
    assert sorted(stored) == sorted(expected)
    assert all(j["state"] == "held" and j["command"] == '["true"]' and j.get("submitted_event")
               for j in stored.values())
    assert integrity_check(db) == ["ok"]
    print(f"\n{len(acked)} acknowledged submits ({len(stored)} jobs) checked across {KILLS} "
          f"kills; recovery "
          f"median {statistics.median(recoveries):.2f}s, max {max(recoveries):.2f}s")


def test_a_submit_retried_with_its_key_gets_the_same_job_even_across_a_crash(host):
    args = {**request_args({"hold": True}, ["echo", "once"]), "idempotency_key": "k-1"}
    # The client's connection drops before it reads the answer...
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(host.home / "gq.sock"))
    s.sendall(encode(request("submit", **args)))
    s.close()
    first = wait_for(lambda: host.call("list", all=True)["jobs"], what="the first attempt's job")
    # ...so it sends the same submit again, key and all: the same job comes back.
    again = host.call("submit", **args)
    assert [j["id"] for j in first] == [again["id"]]
    host.kill_daemon(signal.SIGKILL)
    host.start()
    assert host.call("submit", **args)["id"] == again["id"]
    assert len(host.call("list", all=True)["jobs"]) == 1
    # The key is the caller's, for that submit only: another key queues another job.
    other = host.call("submit", **{**args, "idempotency_key": "k-2"})
    assert other["id"] != again["id"] and host.count_jobs() == 2


def test_an_array_retried_with_its_key_is_queued_once(host):
    args = {**request_args({"hold": True, "array": "0-3"}, ["echo", "x"]),
            "idempotency_key": "array-1"}
    first, again = host.call("submit", **args), host.call("submit", **args)
    assert first["array_jobs"] == again["array_jobs"] and len(first["array_jobs"]) == 4
    assert host.count_jobs() == 4


def test_a_malformed_key_is_refused(host):
    args = request_args({"hold": True}, ["true"])
    for bad in ("", "x" * 129, 17, ["k"], "tab\there"):
        try:
            host.call("submit", **{**args, "idempotency_key": bad})
        except Exception as e:  # noqa: BLE001 - the message is what is checked
            assert "idempotency_key" in str(e)
        else:
            raise AssertionError(f"key {bad!r} was taken")
    assert host.count_jobs() == 0
