"""A real OpenSSH server on 127.0.0.1 for the peer tests and bench/peers.py: its own host and
user keys and sshd_config in a temporary directory; no system configuration is read or changed
(only /run/sshd, the privilege-separation directory sshd insists on, is created if missing)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gq-test", "-f",
                    str(path)], check=True)
    return path


class LoopbackSshd:
    """sshd -D on a free loopback port. `user_key` logs in as the current user."""

    def __init__(self, root: Path, env: dict[str, str] | None = None, max_sessions: int = 100):
        """env: variables every session gets (sshd's SetEnv), e.g. a test Slurm's SLURM_CONF
        (HOME is `root` unless given);
        max_sessions: sshd's MaxSessions, channels open at once on one connection."""
        self.root = root
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A fresh HOME unless asked for one: a login's shell then reads no ~/.bashrc of the
        # machine's (one that runs pyenv waits 60 s on a lock an interrupted login left).
        env = {"HOME": str(root), **(env or {})}
        self.port = free_port()
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.host_key = keygen(root / "host_ed25519")
        self.user_key = keygen(root / "user_ed25519")
        shutil.copy(root / "user_ed25519.pub", root / "authorized_keys")
        self.config = root / "sshd_config"
        self.config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nLogLevel ERROR\n"
            f"ClientAliveInterval 0\nMaxStartups 100\nMaxSessions {max_sessions}\n"
            # one line: sshd takes the first SetEnv only
            + (f"SetEnv {' '.join(f'{k}={v}' for k, v in env.items())}\n" if env else "")
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if os.getuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        log = open(self.root / "sshd.log", "ab")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)],
                                     stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.root / 'sshd.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("sshd did not listen within 20s") from None
                time.sleep(0.02)

    def stop(self) -> None:
        """Kill the server and every session it serves: connections drop at once."""
        if self.proc is None:
            return
        import psutil

        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for child in children:
            try:
                child.kill()
            except psutil.Error:
                pass
        self.proc = None

    def new_host_key(self) -> None:
        """The host 'reinstalled': another host key at the same address."""
        for path in (self.host_key, self.host_key.with_suffix(".pub")):
            path.unlink()
        keygen(self.host_key)

    def fingerprint(self) -> str:
        out = subprocess.run(["ssh-keygen", "-l", "-f", str(self.host_key)], check=True,
                             capture_output=True, text=True).stdout
        return out.split()[1]
