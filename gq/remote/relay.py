"""`gq rpc`: run on a peer over SSH, it relays JSON lines between the SSH channel (stdin and
stdout) and this host's daemon socket, unchanged. The daemon therefore sees the SSH login user
as the caller (SO_PEERCRED): no new credentials, no open port.

Light on purpose: a peer starts one for each channel it opens. It never starts a daemon: one
that is not running is the peer being down, which the other side must see as such."""

from __future__ import annotations

import os
import socket
import sys

from gq.paths import daemon_socket, not_answering, socket_path
from gq.protocol import MAX_LINE, BadInput, GqError, encode, error

USAGE = "usage: gq rpc [--gq-home DIR]  (run by a peer over SSH; see docs/peers.md)"


def _daemon(argv: list[str]) -> tuple[str, str | None]:
    """The socket to relay to and its GQ_HOME (None: the system daemon's), found as every
    other command finds it (`gq.paths.daemon_socket`), unless --gq-home names one."""
    if not argv:
        return daemon_socket()
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        raise SystemExit(0)
    if argv[0] == "--gq-home" and len(argv) == 2:
        home = os.path.abspath(os.path.expanduser(argv[1]))
    elif argv[0].startswith("--gq-home=") and len(argv) == 1:
        home = os.path.abspath(os.path.expanduser(argv[0].split("=", 1)[1]))
    else:
        raise BadInput(USAGE)
    return socket_path(home), home


class _Daemon:
    """The socket to this host's daemon, opened on the first request, again after a loss."""

    def __init__(self, path: str, home: str | None):
        self.path, self.home = path, home
        self.name = f"the daemon of {home}" if home else "the system daemon"
        self.sock: socket.socket | None = None
        self.buf = b""

    def exchange(self, line: bytes) -> bytes:
        if self.sock is None:
            self.sock = self._connect()
        try:
            self.sock.sendall(line)
            while b"\n" not in self.buf:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise ConnectionResetError
                self.buf += chunk
        except OSError:
            self.sock.close()
            self.sock, self.buf = None, b""
            raise GqError(f"{self.name} on {socket.gethostname()} closed the "
                          "connection (it stopped or restarted)") from None
        reply, self.buf = self.buf.split(b"\n", 1)
        return reply + b"\n"

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            raise GqError(f"on {socket.gethostname()}: "
                          + not_answering(self.path, self.home)) from None
        return sock


def main(argv: list[str]) -> int:
    daemon = _Daemon(*_daemon(argv))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        line = stdin.readline(MAX_LINE + 1)
        if not line:
            return 0
        if not line.endswith(b"\n"):  # over the limit, or cut: answer, then stop reading
            stdout.write(encode(error(BadInput("request too large or cut short"))))
            stdout.flush()
            return 1
        try:
            reply = daemon.exchange(line)
        except GqError as e:  # "down": the peer's gq does not answer, as if it were unreachable
            reply = encode({**error(e), "down": True})
        stdout.write(reply)
        stdout.flush()
