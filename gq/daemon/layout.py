"""The files under one GQ_HOME, as the daemon lays them out.

A system daemon (docs/admin.md) keeps each user's job output and checkpoints in a directory of
that user's, `users/NAME/`, which the jobs write as their owner; everything else is root's.
"""

from __future__ import annotations

import os
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

    def job_files(self, job_id: int, user: str | None = None) -> tuple[str, str, str]:
        """A job's stdout and stderr logs and its checkpoint directory, as strings (every
        start names all three: pathlib's joins were a tenth of the daemon's own time in
        Python a trivial job)."""
        base = self.user_dir(user)
        return f"{base}/logs/{job_id}.out", f"{base}/logs/{job_id}.err", \
            f"{base}/checkpoints/{job_id}"

    def stdout(self, job_id: int, user: str | None = None) -> Path:
        return Path(self.job_files(job_id, user)[0])

    def stderr(self, job_id: int, user: str | None = None) -> Path:
        return Path(self.job_files(job_id, user)[1])

    def checkpoint_dir(self, job_id: int, user: str | None = None) -> Path:
        return Path(self.job_files(job_id, user)[2])

    def highest_job_id(self, users_below: int | None = None) -> int:
        """The highest job id with files under GQ_HOME (logs, run files, checkpoints; of a
        system daemon, also in each user's directory): no new job may take such an id, or it
        would append to an old job's log. A user can make any name in their own directory, so
        from there only ids below `users_below` count (None: all)."""
        highest = max(_highest_id(_names(folder)) for folder in (self.logs, self.run,
                                                                 self.checkpoints))
        if self.system:
            for names in _user_dir_names(self.users):
                ids = [i for i in _ids(names) if users_below is None or i < users_below]
                highest = max([highest, *ids])
        return highest


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _ids(names: list[str]) -> list[int]:
    stems = (name.split(".", 1)[0] for name in names)
    return [int(stem) for stem in stems if stem.isascii() and stem.isdigit()]


def _highest_id(names: list[str]) -> int:
    return max(_ids(names), default=0)


def _user_dir_names(users: Path):
    """The names in each user's logs/ and checkpoints/, each directory opened without
    following a link (a user may have replaced theirs with one): root lists nothing else."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        users_fd = os.open(users, flags)
    except OSError:
        return
    try:
        for user in os.listdir(users_fd):
            try:
                user_fd = os.open(user, flags, dir_fd=users_fd)
            except OSError:
                continue
            try:
                for sub in ("logs", "checkpoints"):
                    try:
                        fd = os.open(sub, flags, dir_fd=user_fd)
                    except OSError:
                        continue
                    try:
                        yield os.listdir(fd)
                    finally:
                        os.close(fd)
            finally:
                os.close(user_fd)
    finally:
        os.close(users_fd)
