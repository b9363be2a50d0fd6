"""Run times learned from history, for QSSF in a replay.

QSSF (gq/policy/shortest_first.py) takes its run-time predictor as a parameter. The default,
`FingerprintRunTime`, is the daemon's own rule (gq/policy/predict.py: the mean of the last two
completed runs of the same user, job name and GPU count), as Helios predicts from a user's
earlier jobs of the same name; a job whose fingerprint has no completed run yet falls back on
`UserMeanRunTime`: as long as its user's jobs that ended so far did on average; a user with none
ended yet, as all users' jobs did; before any job has ended, as long as its time limit says (an
hour without one). A job's prediction is made once, the first time a pass asks (as Helios
predicts at submission), so it does not move while the job waits.
"""

from __future__ import annotations

from typing import Protocol

from gq.model import Job
from gq.policy.predict import RunTimes, fingerprint

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


class FingerprintRunTime(UserMeanRunTime):
    """The daemon's predictor (same user, name and GPUs), each user's mean where it knows
    nothing yet."""

    def __init__(self) -> None:
        super().__init__()
        self.book = RunTimes()

    def observe(self, job: Job, run_time: float) -> None:
        super().observe(job, run_time)
        self.book.record(fingerprint(job.user, [job.name], job.gpus), run_time)

    def predict(self, job: Job) -> float:
        known = self.book.predict(job, fp=fingerprint(job.user, [job.name], job.gpus)).seconds
        return super().predict(job) if known is None else known
