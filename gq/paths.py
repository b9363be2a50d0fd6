"""Where gq keeps its state: one GQ_HOME per daemon."""

from __future__ import annotations

import os
from pathlib import Path

SOCKET_NAME = "gq.sock"
# sun_path holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


def gq_home(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("GQ_HOME"):
        return Path(env["GQ_HOME"]).expanduser().absolute()
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "gq"


class Layout:
    """The files under one GQ_HOME."""

    def __init__(self, home: Path):
        self.home = home
        self.db = home / "gq.db"
        self.socket = home / SOCKET_NAME
        self.lock = home / "daemon.lock"
        self.daemon_log = home / "daemon.log"
        self.logs = home / "logs"
        self.run = home / "run"
        self.checkpoints = home / "checkpoints"
        self.sim = home / "sim"

    def stdout(self, job_id: int) -> Path:
        return self.logs / f"{job_id}.out"

    def stderr(self, job_id: int) -> Path:
        return self.logs / f"{job_id}.err"

    def run_dir(self, job_id: int) -> Path:
        return self.run / str(job_id)

    def checkpoint_dir(self, job_id: int) -> Path:
        return self.checkpoints / str(job_id)
