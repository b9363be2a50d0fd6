"""Ended jobs that squeue no longer reports, read from Slurm's accounting (`sacct`), when the
cluster keeps one (slurmdbd); without it the answer is empty."""

from __future__ import annotations

from typing import Any

from gq.slurm.states import ENDED, exit_code, gq_reason, gq_state, utc
from gq.units import iso

SACCT = ["env", "TZ=UTC", "sacct", "--noheader", "--parsable2", "--allocations",
         "--format=JobID,State,ExitCode,Start,End"]


def sacct_jobs(backend, ids: list[int], timeout: float | None = 30.0
               ) -> dict[int, dict[str, Any]]:

    answer = backend.run([*SACCT, "--jobs=" + ",".join(map(str, ids))], timeout=timeout)
    if answer.rc != 0:
        return {}
    out = {}
    for line in answer.out.splitlines():
        parts = line.split("|")
        if len(parts) != 5 or not parts[0].isdigit():
            continue
        state = gq_state(parts[1], "")
        if state not in ENDED:
            continue
        out[int(parts[0])] = {"state": state, "reason": gq_reason(state, ""),
                              "exit_code": exit_code(parts[2]),
                              "started_at": iso(utc(parts[3])), "ended_at": iso(utc(parts[4]))}
    return out
