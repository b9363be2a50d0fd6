"""One JSON message and the descriptors that come with it, over a SOCK_SEQPACKET socket: how the
daemon asks its spawner for shims (gq/daemon/spawner.py), the spawner hands a waiting shim
its next run (gq/daemon/shim.py), and `gq run` hands its job's shim its terminal
(gq/protocol/attach.py)."""

from __future__ import annotations

import array
import json
import select
import socket

MAX_MESSAGE = 4 << 20
MAX_FDS = 4


def send(sock: socket.socket, data: dict, fds: list[int]) -> None:
    payload = json.dumps(data).encode()
    if not fds:
        sock.sendmsg([payload])
        return
    sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """One message and the descriptors that came with it; (None, []) at end of stream."""
    fds = array.array("i")
    # MSG_CMSG_CLOEXEC: a lock file passed on to the job's processes would keep the run
    # looking alive after its shim died.
    data, ancdata, _flags, _addr = sock.recvmsg(
        MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * fds.itemsize), socket.MSG_CMSG_CLOEXEC
    )
    for level, kind, cmsg in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(cmsg[: len(cmsg) - (len(cmsg) % fds.itemsize)])
    if not data:
        return None, list(fds)
    return json.loads(data), list(fds)


def readable(fd: int) -> bool:
    """Whether `fd` is readable now: a pidfd whose process has exited, a pipe closed."""
    return bool(select.select([fd], [], [], 0)[0])
