"""A small process that forks the job shims, so that the daemon itself never forks.

Forking the daemon costs milliseconds (its page tables and, afterwards, copy-on-write faults on
a heap of tens of MB); forking this process, which imports almost nothing, costs a tenth of
that. The daemon sends a shim spec and the run's locked lock file over a socketpair; the
spawner forks, and answers with a pidfd of the shim, opened before the shim could be reaped.
Answers come in the order of the requests; the daemon need not wait for one before it goes on
(Supervisor.request).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys

from gq.daemon.shim import WATCHED, ShimSpec, load_libc, run_shim

MAX_MESSAGE = 4 << 20


def send(sock: socket.socket, data: dict, fds: list[int]) -> None:
    payload = json.dumps(data).encode()
    sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """One message and the descriptors that came with it; (None, []) at end of stream."""
    fds = array.array("i")
    # MSG_CMSG_CLOEXEC: a lock file passed on to the job's processes would keep the run
    # looking alive after its shim died.
    data, ancdata, _flags, _addr = sock.recvmsg(
        MAX_MESSAGE, socket.CMSG_SPACE(4 * fds.itemsize), socket.MSG_CMSG_CLOEXEC
    )
    for level, kind, cmsg in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(cmsg[: len(cmsg) - (len(cmsg) % fds.itemsize)])
    if not data:
        return None, list(fds)
    return json.loads(data), list(fds)


def serve(sock: socket.socket) -> None:
    """The spawner's loop: until the daemon goes away, fork one shim per request."""
    # Shims are reaped by the kernel; the daemon learns of their exit through the pidfd.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on a foreground daemon
    while True:
        spec, fds = receive(sock)
        if spec is None:
            return
        (lock_fd,) = fds
        # The shim is born with the daemon's requests blocked: one sent the moment the daemon
        # has its pidfd must wait for the shim to take it, not kill it.
        signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
        try:
            pid = os.fork()
        except OSError as e:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
            os.close(lock_fd)
            if not _answer(sock, {"job_id": spec.get("job_id"), "error": str(e)}, []):
                return
            continue
        if pid == 0:
            try:
                sock.close()
                run_shim(ShimSpec(**spec), lock_fd)
            finally:
                os._exit(0)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
        pidfd = os.pidfd_open(pid)
        answered = _answer(sock, {"job_id": spec.get("job_id"), "pid": pid}, [pidfd])
        os.close(pidfd)
        os.close(lock_fd)
        if not answered:
            return


def _answer(sock: socket.socket, reply: dict, fds: list[int]) -> bool:
    """Send the answer; False when the daemon is gone (killed after it asked). A shim forked
    meanwhile runs on: its run was recorded, and the next daemon adopts it."""
    try:
        send(sock, reply, fds)
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


def main() -> None:
    # psutil is not imported here: it about doubles what a fork of this process costs (0.5 ms
    # against 1.1 ms, measured on the 2-core development machine). A shim imports it
    # when it has a tree to walk (a stop, or processes left after the job's own ended).
    load_libc()
    sock = socket.socket(fileno=int(sys.argv[1]))
    serve(sock)


if __name__ == "__main__":
    main()
