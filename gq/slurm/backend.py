"""Run Slurm's client commands (sbatch, squeue, scancel, scontrol, sacct) here, or on a login
node over the peer's SSH connection (an exec channel a command, no `gq rpc` there)."""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gq.protocol import GqError
from gq.remote.spec import Unreachable


@dataclass(frozen=True)
class Output:
    rc: int
    out: str
    err: str

    def error_line(self) -> str:
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        return lines[-1].removeprefix("sbatch: error: ").strip() if lines else f"exit {self.rc}"


def name_of(argv: list[str]) -> str:
    """The command an argv runs: `squeue` of `env TZ=UTC squeue ...`."""
    words = argv[1:] if argv[:1] == ["env"] else argv
    return next((w for w in words if "=" not in w), argv[0])


class LocalSlurm:
    """The Slurm client commands of this host."""

    where = "this host"

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        pass

    def run(self, argv: list[str], stdin: str | None = None,
            timeout: float | None = 30.0) -> Output:

        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                                  timeout=timeout)
        except FileNotFoundError:
            raise GqError(f"{argv[0]}: not found on this host: install Slurm's client "
                          "commands, or add the Slurm peer with a login node HOST") from None
        except subprocess.TimeoutExpired:
            raise Unreachable(f"`{name_of(argv)}` did not answer in {timeout:.0f}s") from None
        return Output(done.returncode, done.stdout, done.stderr)

    def read(self, path: str, offset: int, size: int, timeout: float | None = 30.0) -> bytes:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read(size)
        except FileNotFoundError:
            return b""

    def close(self) -> None:
        pass


# Commands in flight at once on the one connection: OpenSSH's sshd refuses channels beyond
# its MaxSessions (10 by default), which would look like the login node going down.
MAX_CHANNELS = 8


class SshSlurm:
    """The Slurm client commands of a login node, over one kept SSH connection. A command that
    fails to come back (the connection cut, no answer in time) raises Unreachable: it may or
    may not have run, which only the caller can find out (a submit looks for its key). At most
    MAX_CHANNELS commands run at once; the others wait for a turn, within their time limit."""

    def __init__(self, spec, known_hosts: Path, connect_timeout: float,
                 max_channels: int = MAX_CHANNELS):
        self.spec, self.known_hosts, self.timeout = spec, known_hosts, connect_timeout
        self.where = spec.where()
        self._lock = threading.Lock()
        self._client = None
        self.max_channels = max_channels
        self._turns = threading.BoundedSemaphore(max_channels)

    def open(self, accept_new: bool = False, accepted: list | None = None):
        """The connection, made now if there is none (or the last one died)."""
        from gq.remote.ssh import open_client

        with self._lock:
            if self._client is not None and not _alive(self._client):
                self._client.close()
                self._client = None
            if self._client is None:
                self._client = open_client(self.spec, self.known_hosts, self.timeout,
                                           accept_new, accepted)
            return self._client

    def run(self, argv: list[str], stdin: str | None = None,
            timeout: float | None = 30.0) -> Output:
        rc, out, err = self._exec(shlex.join(argv), name_of(argv), stdin, timeout)
        return Output(rc, out.decode(errors="replace"), err.decode(errors="replace"))

    def read(self, path: str, offset: int, size: int, timeout: float | None = 30.0) -> bytes:
        # through sh: the login's own shell may be one (csh) without `2>`
        command = shlex.join(["sh", "-c", 'tail -c "+$1" "$2" 2>/dev/null | head -c "$3"', "sh",
                              str(offset + 1), path, str(size)])
        return self._exec(command, "tail", None, timeout)[1]

    def _exec(self, command: str, word: str, stdin: str | None, timeout: float | None):
        if not self._turns.acquire(timeout=-1 if timeout is None else timeout):
            raise Unreachable(
                f"{self.spec.name}: `{word}`: no turn on the connection within {timeout:.0f}s "
                f"(commands running there at once: {self.max_channels}, the most gq runs)")
        try:
            return self._exec_now(command, word, stdin, timeout)
        finally:
            self._turns.release()

    def _exec_now(self, command: str, word: str, stdin: str | None, timeout: float | None):
        import paramiko

        client = self.open()
        transport, chan = client.get_transport(), None
        try:
            if transport is None:  # closed by another thread since open()
                raise EOFError("the connection closed")
            chan = _open_session(transport, self.timeout, timeout)
            chan.settimeout(timeout)
            chan.exec_command(command)
            if stdin is not None:
                chan.sendall(stdin.encode())
            chan.shutdown_write()
            out, err = bytearray(), bytearray()
            # stderr is buffered by paramiko while stdout is read: Slurm's commands write
            # little there, well under the channel's window
            while chunk := chan.recv(1 << 16):
                out += chunk
            while chunk := chan.recv_stderr(1 << 16):
                err += chunk
            rc = chan.recv_exit_status()  # -1: the channel closed without one
        except (OSError, EOFError, paramiko.SSHException) as e:
            self._drop_if_dead(client)
            what = ("no answer in time" if isinstance(e, TimeoutError)
                    else str(e) or type(e).__name__)
            raise Unreachable(f"{self.spec.name}: `{word}`: {what}") from None
        finally:
            if chan is not None:
                chan.close()
        if rc == -1:
            self._drop_if_dead(client)
            raise Unreachable(f"{self.spec.name}: `{word}` on {self.where} ended without an "
                              "exit status (the connection closed, or it was killed)")
        if rc == 127:
            raise GqError(f"{self.spec.name}: `{word}` not found on {self.where}: is it a "
                          "Slurm login node?")
        return rc, bytes(out), bytes(err)

    def _drop_if_dead(self, client) -> None:
        """Forget the connection once it is dead (the next command makes a new one); a
        command that timed out on a live one leaves it to the others."""
        with self._lock:
            if self._client is client and not _alive(client):
                client.close()
                self._client = None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _open_session(transport, connect_timeout: float, timeout: float | None):
    """A new channel. sshd refuses one beyond its MaxSessions, and frees a closed session's
    slot only a moment after the close: on a live connection, a refusal is retried, backing
    off, within the command's time limit (a busy login node, not a lost one)."""
    import paramiko

    deadline = time.monotonic() + (connect_timeout if timeout is None else timeout)
    delay = 0.02
    while True:
        try:
            return transport.open_session(timeout=connect_timeout)
        except paramiko.SSHException:  # ChannelException, or (when several threads open
            # channels at once) paramiko's "Unable to open channel." for the same refusal
            if not transport.is_active() or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 1.0)


def _alive(client) -> bool:
    transport = client.get_transport()
    return transport is not None and transport.is_active()
