"""One request/response schema for the CLI, the TUI and peers: a JSON line each way.

This module is the transport (framing, errors, a client connection); `gq.protocol.ops` names
the operations and their traits, `gq.protocol.shapes` the fields of their requests and
answers. Kept to the standard library: every `gq` command imports it.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from typing import Any

VERSION = 1
MAX_LINE = 4 << 20  # bytes; a submit carries the caller's environment
CONNECT_WAIT = 10.0  # seconds a connect waits for room in the daemon's listen backlog

# Exit codes, as the design fixes them.
BAD_INPUT = 2
FAILURE = 1


class GqError(Exception):
    """An error to show the user as one line; `code` is the process exit code."""

    def __init__(self, message: str, code: int = FAILURE):
        super().__init__(message)
        self.message = message
        self.code = code


class DaemonGone(GqError):
    """The daemon closed the connection: it stopped or restarted."""

    def __init__(self) -> None:
        super().__init__("the daemon closed the connection (see its log: gq daemon status)")


class DaemonSlow(GqError):
    """The daemon did not answer in time: it is busy, stopped or stuck."""

    def __init__(self, seconds: float | None) -> None:
        super().__init__(f"the daemon did not answer within {seconds:g}s: it is busy or stuck "
                         "(see gq daemon status; GQ_TIMEOUT=SECONDS waits longer)")


class DatabaseLocked(GqError):
    """Another process holds the daemon's database: the write the request came to was rolled
    back, and the request may be sent again as it was (a submit, one transaction, with its
    idempotency key: queued once). The message ends with LOCKED_ADVICE."""


LOCKED_ADVICE = "not done; try again once it lets go"


class BadInput(GqError):
    def __init__(self, message: str):
        super().__init__(message, BAD_INPUT)


class RawJSON:
    """JSON text made elsewhere (rows SQLite wrote as JSON), sent as it is: a page of 10,000
    jobs is not turned into Python objects and back."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def encode(obj: dict[str, Any]) -> bytes:
    raw: list[str] = []
    mark = ""

    def splice(value: object) -> str:
        nonlocal mark
        if not isinstance(value, RawJSON):
            raise TypeError(f"{type(value).__name__} is not JSON")
        mark = mark or "\0" + os.urandom(8).hex()  # in no other string of the answer
        raw.append(value.text)
        return mark

    text = json.dumps(obj, separators=(",", ":"), default=splice)
    if raw:
        parts = text.split(json.dumps(mark))
        text = parts[0] + "".join(r + p for r, p in zip(raw, parts[1:]))
    return text.encode() + b"\n"


def request(op: str, **args: Any) -> dict[str, Any]:
    return {"v": VERSION, "op": op, "args": args}


def ok(result: Any) -> dict[str, Any]:
    return {"ok": True, "result": result}


def error(exc: GqError) -> dict[str, Any]:
    reply = {"ok": False, "error": exc.message, "code": exc.code}
    if isinstance(exc, DatabaseLocked):
        reply["locked"] = True
    return reply


class Connection:
    """A client connection to a daemon socket: call(op, **args) -> result, or raise GqError."""

    def __init__(self, path: str | os.PathLike, timeout: float | None = 30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.timeout = timeout
        try:
            _connect(self.sock, os.fspath(path),
                     CONNECT_WAIT if timeout is None else min(timeout, CONNECT_WAIT))
        except OSError:
            self.sock.close()
            raise
        self.sock.settimeout(timeout)
        self._buf = b""

    def call(self, op: str, **args: Any) -> Any:
        self.send(op, **args)
        return self.receive()

    def send(self, op: str, **args: Any) -> None:
        try:
            self.sock.sendall(encode(request(op, **args)))
        except TimeoutError:
            raise DaemonSlow(self.timeout) from None
        except (BrokenPipeError, ConnectionResetError):
            # Not to be taken for a closed stdout (`gq ls | head`), which ends quietly.
            raise DaemonGone() from None

    def receive(self) -> Any:
        while b"\n" not in self._buf:
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                raise DaemonSlow(self.timeout) from None
            except ConnectionResetError:
                raise DaemonGone() from None
            if not chunk:
                raise DaemonGone()
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok"):
            message, code = reply.get("error", "unknown error"), reply.get("code", FAILURE)
            if reply.get("locked"):
                raise DatabaseLocked(message, code)
            raise BadInput(message) if code == BAD_INPUT else GqError(message, code)
        return reply.get("result")

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(sock: socket.socket, path: str, wait: float) -> None:
    """Connect, waiting up to `wait` seconds for room in the daemon's listen backlog.

    A socket with a timeout connects non-blocking, and a Unix socket whose backlog is full
    then fails at once with EAGAIN: a few clients connecting in a loop would turn everyone
    else away. A blocking connect waits for room instead, as long as SO_SNDTIMEO allows; it
    is tried again, briefly, until `wait` has passed."""
    deadline = time.monotonic() + wait
    while True:
        left = max(deadline - time.monotonic(), 0.01)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                        struct.pack("ll", int(left), int(left % 1 * 1e6)))
        try:
            sock.connect(path)
            break
        except BlockingIOError:  # EAGAIN: still no room after SO_SNDTIMEO
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 0))
