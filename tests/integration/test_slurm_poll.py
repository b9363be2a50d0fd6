"""The Slurm peer's squeue poller against a stand-in `squeue` on PATH (a real process whose
answer the test holds back): a job sbatch made while a poll was under way is in the next
answer asked for, not missing from it."""

from __future__ import annotations

import threading
import time

from gq.slurm.backend import LocalSlurm
from gq.slurm.poller import FIELDS, Tracker
from tests.support.hosts import wait_for

SQUEUE = """#!/bin/sh
# squeue's view is read when it is asked; the answer waits while $DIR/hold exists.
rows=$(cat "$DIR/rows")
touch "$DIR/asked"
while [ -e "$DIR/hold" ]; do sleep 0.01; done
[ -n "$rows" ] && printf '%s\\n' "$rows"
exit 0
"""


def row(sid: int) -> str:
    values = {"JobID": str(sid), "State": "PENDING", "Reason": "None", "exit_code": "0",
              "SubmitTime": "2026-12-01T00:00:00", "StartTime": "N/A", "EndTime": "N/A",
              "TimeLimit": "5:00", "NumCPUs": "1", "Requeue": "0", "RestartCnt": "0",
              "Account": "lab", "NodeList": "", "tres-per-node": "N/A", "UserName": "root",
              "Partition": "debug", "STDOUT": "/tmp/o", "STDERR": "/tmp/e", "WorkDir": "/tmp",
              "Comment": "(null)", "Name": "sleep"}
    return "|".join(values[f] for f in FIELDS) + "|"


def test_a_job_made_while_a_poll_is_under_way_is_in_the_next_answer(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(SQUEUE)
    (bin_dir / "squeue").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("DIR", str(tmp_path))
    (tmp_path / "rows").write_text("")
    (tmp_path / "hold").touch()
    tracker = Tracker(LocalSlurm(), "hpc")
    background = threading.Thread(target=tracker.fresh, args=(0.0, 30))
    background.start()  # the daemon's own poll: squeue has read its view, its answer held
    wait_for(lambda: (tmp_path / "asked").exists(), what="squeue to be asked")
    (tmp_path / "rows").write_text(row(14))  # sbatch made job 14 meanwhile
    made = time.monotonic()
    (tmp_path / "hold").unlink()
    background.join(30)
    # The submit asks for a view at least as new as the job: the poll that answered after it
    # was made had read squeue before.
    tracker.fresh(time.monotonic() - made, 30)
    job = tracker.get(14)
    assert job is not None and job["state"] == "pending"
