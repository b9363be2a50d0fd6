"""`gq rpc`: run on a peer over SSH, it relays JSON lines between the SSH channel (stdin and
stdout) and this host's daemon socket, unchanged. The daemon therefore sees the SSH login user
as the caller (SO_PEERCRED): no new credentials, no open port.

Light on purpose: a peer starts one for each channel it opens. It never starts a daemon: one
that is not running is the peer being down, which the other side must see as such."""

from __future__ import annotations

import os
import socket
import sys

from gq.paths import gq_home, socket_path
from gq.protocol import MAX_LINE, BadInput, GqError, encode, error

USAGE = "usage: gq rpc [--gq-home DIR]  (run by a peer over SSH; see docs/peers.md)"


def _home(argv: list[str]) -> str:
    if not argv:
        return gq_home()
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        raise SystemExit(0)
    if argv[0] == "--gq-home" and len(argv) == 2:
        return os.path.abspath(os.path.expanduser(argv[1]))
    if argv[0].startswith("--gq-home=") and len(argv) == 1:
        return os.path.abspath(os.path.expanduser(argv[0].split("=", 1)[1]))
    raise BadInput(USAGE)


class _Daemon:
    """The socket to this host's daemon, opened on the first request, again after a loss."""

    def __init__(self, home: str):
        self.home = home
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
            raise GqError(f"the daemon of {self.home} on {socket.gethostname()} closed the "
                          "connection (it stopped or restarted)") from None
        reply, self.buf = self.buf.split(b"\n", 1)
        return reply + b"\n"

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(socket_path(self.home))
        except OSError:
            sock.close()
            raise GqError(f"no daemon runs for {self.home} on {socket.gethostname()} (start "
                          "it there: gq daemon start)") from None
        return sock


def main(argv: list[str]) -> int:
    daemon = _Daemon(_home(argv))
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
