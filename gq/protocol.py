"""One request/response schema for the CLI, the TUI and peers: a JSON line each way.

Kept to the standard library: every `gq` command imports it.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

VERSION = 1
MAX_LINE = 4 << 20  # bytes; a submit carries the caller's environment

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


class BadInput(GqError):
    def __init__(self, message: str):
        super().__init__(message, BAD_INPUT)


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def request(op: str, **args: Any) -> dict[str, Any]:
    return {"v": VERSION, "op": op, "args": args}


def ok(result: Any) -> dict[str, Any]:
    return {"ok": True, "result": result}


def error(exc: GqError) -> dict[str, Any]:
    return {"ok": False, "error": exc.message, "code": exc.code}


class Connection:
    """A client connection to a daemon socket: call(op, **args) -> result, or raise GqError."""

    def __init__(self, path: str | os.PathLike, timeout: float | None = 30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(os.fspath(path))
        except OSError:
            self.sock.close()
            raise
        self._buf = b""

    def call(self, op: str, **args: Any) -> Any:
        self.send(op, **args)
        return self.receive()

    def send(self, op: str, **args: Any) -> None:
        self.sock.sendall(encode(request(op, **args)))

    def receive(self) -> Any:
        while b"\n" not in self._buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise DaemonGone()
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok"):
            message, code = reply.get("error", "unknown error"), reply.get("code", FAILURE)
            raise BadInput(message) if code == BAD_INPUT else GqError(message, code)
        return reply.get("result")

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
