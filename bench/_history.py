"""A daemon's history, made fast: ended jobs written through the daemon's own store (the Store
API, as the daemon writes them) while no daemon runs on that GQ_HOME, so that a benchmark can
start a daemon over 10,000 ended jobs in seconds instead of running them."""

from __future__ import annotations

import os
import pwd
import time

from gq.model import Job, JobState
from gq.store import Store

COMMANDS = (["python", "train.py", "--lr", "3e-4"], ["python", "-m", "eval", "--split", "val"],
            ["bash", "prep.sh"], ["torchrun", "--nproc_per_node", "2", "finetune.py"])


def add_ended_jobs(home: str, count: int, days_ago: float = 3.0) -> None:
    """`count` jobs of this user that ran and ended `days_ago` days ago, each with the
    submitter's environment (as `gq submit` sends it), a run record and its events: older
    than [daemon] show_ended, so they are history (`gq ls --all`), not recent."""
    os.makedirs(home, mode=0o700, exist_ok=True)
    store = Store(os.path.join(home, "gq.db"))
    user = pwd.getpwuid(os.getuid()).pw_name
    start = time.time() - days_ago * 86400 - count * 2.0
    env = dict(os.environ)
    with store.relaxed(), store.atomic():
        for i in range(count):
            at = start + 2.0 * i
            state = JobState.COMPLETED if i % 10 else JobState.FAILED
            job = Job(id=0, user=user, uid=os.getuid(), command=list(COMMANDS[i % 4]),
                      cwd=home, state=state, name=COMMANDS[i % 4][1], gpus=i % 3, env=env,
                      submitted_at=at, started_at=at + 0.5, ended_at=at + 1.5,
                      exit_code=0 if i % 10 else 1, host="bench")
            job.id = store.insert_job(job, at)
            store.add_run(job, weight=job.gpus, ended_at=at + 1.5, state=str(state))
    store.close()
