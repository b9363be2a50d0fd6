"""Run Slurm's client commands (sbatch, squeue, scancel, scontrol, sacct) here, or on a login
node over the peer's SSH connection (an exec channel a command, no `gq rpc` there)."""

from __future__ import annotations

import shlex
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from gq.protocol import GqError


@dataclass(frozen=True)
class Output:
    rc: int
    out: str
    err: str

    def error_line(self) -> str:
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        return lines[-1].removeprefix("sbatch: error: ").strip() if lines else f"exit {self.rc}"


class LocalSlurm:
    """The Slurm client commands of this host."""

    where = "this host"

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        pass

    def run(self, argv: list[str], stdin: str | None = None,
            timeout: float | None = 30.0) -> Output:
        from gq.peers.transport import Unreachable

        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                                  timeout=timeout)
        except FileNotFoundError:
            raise GqError(f"{argv[0]}: not found on this host: install Slurm's client "
                          "commands, or add the Slurm peer with a login node HOST") from None
        except subprocess.TimeoutExpired:
            raise Unreachable(f"{argv[0]} did not answer in {timeout:.0f}s") from None
        return Output(done.returncode, done.stdout, done.stderr)

    def read(self, path: str, offset: int, size: int) -> bytes:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read(size)
        except FileNotFoundError:
            return b""

    def close(self) -> None:
        pass


class SshSlurm:
    """The Slurm client commands of a login node, over one kept SSH connection."""

    def __init__(self, spec, known_hosts: Path, connect_timeout: float):
        self.spec, self.known_hosts, self.timeout = spec, known_hosts, connect_timeout
        self.where = spec.where()
        self._lock = threading.Lock()
        self._client = None

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        from gq.peers.transport import open_client

        with self._lock:
            if self._client is not None and not self._client.get_transport().is_active():
                self._client.close()
                self._client = None
            if self._client is None:
                self._client = open_client(self.spec, self.known_hosts, self.timeout,
                                           accept_new, accepted)

    def run(self, argv: list[str], stdin: str | None = None,
            timeout: float | None = 30.0) -> Output:
        rc, out, err = self._exec(shlex.join(argv), stdin, timeout)
        return Output(rc, out.decode(errors="replace"), err.decode(errors="replace"))

    def read(self, path: str, offset: int, size: int) -> bytes:
        command = (f"tail -c +{offset + 1} {shlex.quote(path)} 2>/dev/null | head -c {size}")
        return self._exec(command, None, 30.0)[1]

    def _exec(self, command: str, stdin: str | None, timeout: float | None):
        import paramiko

        from gq.peers.transport import Unreachable

        self.open()
        try:
            chan = self._client.get_transport().open_session(timeout=self.timeout)
            chan.settimeout(timeout)
            chan.exec_command(command)
            if stdin is not None:
                chan.sendall(stdin.encode())
            chan.shutdown_write()
            out, err = bytearray(), bytearray()
            while True:
                chunk = chan.recv(1 << 16)
                if not chunk:
                    break
                out += chunk
            while chan.recv_stderr_ready() or not chan.exit_status_ready():
                chunk = chan.recv_stderr(1 << 16)
                if not chunk:
                    break
                err += chunk
            rc = chan.recv_exit_status()
            chan.close()
        except (OSError, EOFError, paramiko.SSHException) as e:
            self.close()
            what = "no answer in time" if isinstance(e, TimeoutError) else str(e) or type(e)
            raise Unreachable(f"{self.spec.name}: {what}") from None
        if rc == 127:
            raise GqError(f"{self.spec.name}: `{command.split()[0]}` not found on "
                          f"{self.where}: is it a Slurm login node?")
        return rc, bytes(out), bytes(err)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
