"""The files under one GQ_HOME, as the daemon lays them out.

A system daemon (docs/admin.md) keeps each user's job output and checkpoints in a directory of
that user's, `users/NAME/`, which the jobs write as their owner; everything else is root's.
"""

from __future__ import annotations

from pathlib import Path

from gq.paths import DAEMON_LOG, SOCKET_NAME


class Layout:
    def __init__(self, home: Path | str, socket: Path | str | None = None,
                 config: Path | str | None = None, system: bool = False):
        self.home = Path(home)
        self.system = system
        self.db = self.home / "gq.db"
        self.socket = Path(socket) if socket else self.home / SOCKET_NAME
        self.lock = self.home / "daemon.lock"
        self.daemon_log = self.home / DAEMON_LOG
        self.config = Path(config) if config else self.home / "config.toml"
        self.logs = self.home / "logs"
        self.run = self.home / "run"
        self.checkpoints = self.home / "checkpoints"
        self.sim = self.home / "sim"
        self.users = self.home / "users"

    def user_dir(self, user: str | None) -> Path:
        """Where a user's job files live: GQ_HOME itself, or users/NAME of a system daemon."""
        if not self.system:
            return self.home
        if not user or "/" in user or user in (".", ".."):
            raise ValueError(f"no directory for user {user!r}")
        return self.users / user

    def stdout(self, job_id: int, user: str | None = None) -> Path:
        return self.user_dir(user) / "logs" / f"{job_id}.out"

    def stderr(self, job_id: int, user: str | None = None) -> Path:
        return self.user_dir(user) / "logs" / f"{job_id}.err"

    def checkpoint_dir(self, job_id: int, user: str | None = None) -> Path:
        return self.user_dir(user) / "checkpoints" / str(job_id)
