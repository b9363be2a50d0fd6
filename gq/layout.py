"""The files under one GQ_HOME, as the daemon lays them out."""

from __future__ import annotations

from pathlib import Path

from gq.paths import DAEMON_LOG, SOCKET_NAME


class Layout:
    def __init__(self, home: Path | str):
        self.home = Path(home)
        self.db = self.home / "gq.db"
        self.socket = self.home / SOCKET_NAME
        self.lock = self.home / "daemon.lock"
        self.daemon_log = self.home / DAEMON_LOG
        self.config = self.home / "config.toml"
        self.logs = self.home / "logs"
        self.run = self.home / "run"
        self.checkpoints = self.home / "checkpoints"
        self.sim = self.home / "sim"

    def stdout(self, job_id: int) -> Path:
        return self.logs / f"{job_id}.out"

    def stderr(self, job_id: int) -> Path:
        return self.logs / f"{job_id}.err"

    def checkpoint_dir(self, job_id: int) -> Path:
        return self.checkpoints / str(job_id)
