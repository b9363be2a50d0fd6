"""A small process that forks the job shims, so that the daemon itself never forks.

Forking the daemon costs milliseconds (its page tables and, afterwards, copy-on-write faults on
a heap of tens of MB); forking this process, which imports almost nothing, costs a tenth of
that. The daemon sends a request (a shim spec) and the run's locked lock file over a
socketpair; the spawner starts the run, and answers with a pidfd of the shim, opened before the
shim could be reaped, and the read end of a pipe that the shim closes when the run has ended.
Answers come in the order of the requests; the daemon need not wait for one before it goes on
(Supervisor.request).

A shim whose run has ended waits for another (gq/daemon/shim.py), as long as this spawner
keeps a socket to it: a request may name a waiting shim (`reuse`, its pid), which then takes
the run, and no process is forked. A fork, and later the exit, of a shim is most of what a
trivial job's run costs. `retire` lets a waiting shim go: it exits.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from gq.protocol.fdpass import readable, receive, send
from gq.daemon.shim import WATCHED, ShimSpec, load_libc, run_shim

# A shim forked here: its pid -> the socket to it (to hand it a run) and its pidfd (never a
# reused pid's).
Kept = dict[int, tuple[socket.socket, int]]


def serve(sock: socket.socket) -> None:
    """The spawner's loop: until the daemon goes away, start each run it asks for."""
    # Shims are reaped by the kernel; the daemon learns of their exit through the pidfd.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on a foreground daemon
    kept: Kept = {}
    while True:
        request, fds = receive(sock)
        if request is None:
            return
        if "retire" in request:
            _let_go(kept, request["retire"])
            continue
        (lock_fd,) = fds
        end_r, end_w = os.pipe2(os.O_CLOEXEC)
        pidfd = None
        try:
            reply, pidfd = _start(kept, sock, request, lock_fd, end_w)
            answered = _answer(sock, reply, [] if pidfd is None else [pidfd, end_r])
        finally:
            for fd in (lock_fd, end_w, end_r, *([] if pidfd is None else [pidfd])):
                os.close(fd)
        if not answered:
            return


def _start(kept: Kept, sock: socket.socket, request: dict, lock_fd: int, end_w: int
           ) -> tuple[dict, int | None]:
    """Hand the run to the waiting shim it names, or fork one for it. The answer, and a copy
    of the shim's pidfd for it (the caller closes it once sent); None with no shim."""
    spec = request["spec"]
    job_id = spec.get("job_id")
    pid = request.get("reuse")
    if pid in kept:
        channel, pidfd = kept[pid]
        try:
            send(channel, {"spec": spec}, [lock_fd, end_w])
        except OSError:  # it has exited meanwhile: fork another
            _let_go(kept, pid)
        else:
            if readable(pidfd):  # it died before it could read the run: the run files say
                _let_go(kept, pid)
                return {"job_id": job_id, "lost": f"shim {pid} ended before it took the run"}, None
            return {"job_id": job_id, "pid": pid}, os.dup(pidfd)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # The shim is born with the daemon's requests blocked: one sent the moment the daemon
    # has its pidfd must wait for the shim to take it, not kill it.
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    try:
        pid = os.fork()
    except OSError as e:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
        ours.close()
        theirs.close()
        return {"job_id": job_id, "error": str(e)}, None
    if pid == 0:
        try:
            sock.close()
            ours.close()
            run_shim(ShimSpec(**spec), lock_fd, end_w, theirs)
        finally:
            os._exit(0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
    theirs.close()
    pidfd = os.pidfd_open(pid)
    kept[pid] = (ours, pidfd)
    return {"job_id": job_id, "pid": pid}, os.dup(pidfd)


def _let_go(kept: Kept, pid: int) -> None:
    """Close the socket to a shim: waiting, it exits; running, it exits when its run ends."""
    channel, pidfd = kept.pop(pid, (None, None))
    if channel is not None:
        channel.close()
        os.close(pidfd)


def _answer(sock: socket.socket, reply: dict, fds: list[int]) -> bool:
    """Send the answer; False when the daemon is gone (killed after it asked). A shim started
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
