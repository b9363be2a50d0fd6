"""`gq run`'s channel to its job's shim: how the caller's terminal reaches the run (docs/run.md).

The daemon never holds the caller's terminal. `gq run` makes a random key and sends it with the
submit; the shim of the job's run listens on the abstract Unix socket named by the key and
takes the caller's descriptors (SCM_RIGHTS, gq/protocol/fdpass.py) from the first connection
whose peer is the job's user (SO_PEERCRED); the caller, before it sends them, checks that the
listener is the daemon's user (root for the system daemon, else itself). The run then talks to
`gq run` over that connection only, so both go on through a daemon restart.

Messages, one JSON object a packet (SOCK_SEQPACKET):
- caller -> shim: {"hello": {"tty": bool, "rows": R, "cols": C}} with its stdin, stdout and
  stderr; {"signal": N} (to the job's foreground process group), {"winch": [R, C]},
  {"continue": 1} (resumed after Ctrl-Z); the connection's end is a hang-up.
- shim -> caller: {"started": 1}, {"stopped": 1} (the job stopped: Ctrl-Z), {"exit": CODE,
  "signal": SIG, "stop": STOP} once the end is recorded; STOP None, "cancel", "time_up",
  "interrupt" (a second Ctrl-C) or "hangup".
"""

from __future__ import annotations

import os
import socket
import struct

PREFIX = b"\0gq-run-"  # abstract namespace: no file to plant, remove or leave behind
KEY_BYTES = 16
# Seconds a started run waits for its `gq run` to attach before it takes it for gone; the
# caller tries to connect every POLL seconds while its job waits.
ATTACH_WAIT = 5.0
POLL = 0.05
# A second interrupt within this many seconds cancels the run at once (SIGKILL).
DOUBLE_INTERRUPT = 2.0


def new_key() -> str:
    return os.urandom(KEY_BYTES).hex()


def channel(key: str) -> bytes:
    return PREFIX + key.encode()


def valid_key(key: object) -> bool:
    return (isinstance(key, str) and len(key) == 2 * KEY_BYTES
            and all(c in "0123456789abcdef" for c in key))


def peer_creds(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end, as the kernel says (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


def peer_uid(sock: socket.socket) -> int:
    return peer_creds(sock)[1]
