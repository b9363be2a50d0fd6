"""10,000 malformed frames on the daemon's socket: each gets an error or a closed connection,
and the daemon serves its other clients throughout."""

from __future__ import annotations

import json
import random
import socket
import threading
import time

from tests.support.garbage import frame, oversized

from gq.cli.submit_args import request_args
from gq.protocol import Connection

SEED = 10_000
FRAMES = 10_000
PER_CONNECTION = 500
ALONE = 1000


class Bystander(threading.Thread):
    """A well-behaved client: ping, list and show, in a loop, until stopped."""

    def __init__(self, sock_path, job_id: int):
        super().__init__(daemon=True)
        self.sock_path, self.job_id = sock_path, job_id
        self.stop = threading.Event()
        self.calls, self.failures, self.slowest = 0, [], 0.0

    def run(self) -> None:
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                with Connection(self.sock_path, timeout=30) as conn:
                    assert conn.call("ping")["pid"] > 0
                    assert conn.call("show", id=str(self.job_id))["state"] == "held"
                    assert any(j["id"] == self.job_id for j in conn.call("list")["jobs"])
            except Exception as e:  # noqa: BLE001 - recorded, and the test fails on it
                self.failures.append(repr(e))
            self.slowest = max(self.slowest, time.monotonic() - began)
            self.calls += 1


def _replies(sock: socket.socket, count: int) -> list[dict]:
    """Read `count` reply lines; fewer if the daemon closes the connection."""
    reader = sock.makefile("rb")
    out = []
    for _ in range(count):
        line = reader.readline()
        if not line:
            break
        out.append(json.loads(line))
    return out


def _connect(path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(str(path))
    return s


def test_10000_malformed_frames_each_get_an_error_and_the_daemon_serves_throughout(host):
    canary = host.call("submit", **request_args({"hold": True}, ["true"]))["id"]
    rng = random.Random(SEED)
    frames = [frame(rng) for _ in range(FRAMES)]
    bystander = Bystander(host.home / "gq.sock", canary)
    bystander.start()
    began = time.monotonic()
    errors: dict[str, int] = {}
    # The first ALONE frames on a connection each, the others pipelined PER_CONNECTION a time.
    batches = [frames[i:i + 1] for i in range(ALONE)] + [
        frames[i:i + PER_CONNECTION] for i in range(ALONE, FRAMES, PER_CONNECTION)]
    try:
        for batch in batches:
            with _connect(host.home / "gq.sock") as s:
                # Pipelined: the whole batch in, then every answer out, in order.
                writer = threading.Thread(target=s.sendall, args=(b"".join(batch),))
                writer.start()
                replies = _replies(s, len(batch))
                writer.join()
            assert len(replies) == len(batch)
            for sent, reply in zip(batch, replies):
                assert reply["ok"] is False, sent[:200]
                assert "internal error" not in reply["error"], (sent[:300], reply)
                assert reply["code"] in (1, 2) and "\n" not in reply["error"]
                first_words = " ".join(reply["error"].split()[:2])
                errors[first_words] = errors.get(first_words, 0) + 1
        # Lines too long, and lines cut short by the connection's end: an error and the
        # connection closed, or the connection closed.
        for _ in range(3):
            with _connect(host.home / "gq.sock") as s:
                writer = threading.Thread(target=s.sendall, args=(oversized(),))
                writer.start()
                (reply,) = _replies(s, 2)
                assert reply["ok"] is False and "larger than 4M refused" in reply["error"]
                try:
                    writer.join()
                except OSError:
                    pass
        for cut in (b"", b"{", b'{"v": 1, "op": "list", "args": {}}'):
            with _connect(host.home / "gq.sock") as s:
                s.sendall(cut)
                s.shutdown(socket.SHUT_WR)
                assert _replies(s, 1) == []
    finally:
        bystander.stop.set()
        bystander.join(timeout=60)
    elapsed = time.monotonic() - began
    assert bystander.failures == []
    assert bystander.calls > 10, "the bystander was starved"
    assert host.call("ping")["pid"] == host.daemon.pid
    assert [j["id"] for j in host.call("list", all=True)["jobs"]] == [canary]  # nothing was queued
    print(f"\n{FRAMES + 6} bad frames in {elapsed:.1f}s; bystander: {bystander.calls} rounds, "
          f"slowest {bystander.slowest:.2f}s; errors by first words: "
          f"{dict(sorted(errors.items(), key=lambda kv: -kv[1])[:8])}")
