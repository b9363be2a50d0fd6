"""Run times learned from history, for QSSF in a replay: each user's mean so far.

QSSF (gq/policy/shortest_first.py) takes its run-time predictor as a parameter; this is the
simplest one that learns: a job is expected to run as long as its user's jobs that ended so far
did on average; a user with none ended yet, as all users' jobs did; before any job has ended,
as long as its time limit says (an hour without one). A job's prediction is made once, the first
time a pass asks (as Helios predicts at submission), so it does not move while the job waits.
"""

from __future__ import annotations

from typing import Protocol

from gq.model import Job

NO_HISTORY = 3600.0  # s: expected of a job without a limit before anything has ended


class RunTimePredictor(Protocol):
    def __call__(self, job: Job) -> float: ...

    def observe(self, job: Job, run_time: float) -> None: ...


class UserMeanRunTime:
    def __init__(self) -> None:
        self.sums: dict[str, tuple[float, int]] = {}
        self.total, self.count = 0.0, 0
        self.made: dict[int, float] = {}

    def observe(self, job: Job, run_time: float) -> None:
        """A job ended after running `run_time` seconds."""
        s, n = self.sums.get(job.user, (0.0, 0))
        self.sums[job.user] = (s + run_time, n + 1)
        self.total, self.count = self.total + run_time, self.count + 1

    def __call__(self, job: Job) -> float:
        made = self.made.get(job.id)
        if made is None:
            made = self.made[job.id] = self.predict(job)
        return made

    def predict(self, job: Job) -> float:
        s, n = self.sums.get(job.user, (0.0, 0))
        if n:
            return s / n
        if self.count:
            return self.total / self.count
        return job.time_limit or NO_HISTORY
