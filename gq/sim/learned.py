"""Run times learned during a replay (`gq sim --learn`), with the daemon's predictor."""

from __future__ import annotations

from gq.model import Job
from gq.policy.predict import Fingerprint, RunTimes, fingerprint, predict
from gq.sim.traces import TraceJob


class Learned:
    """Run times learned during a replay, as the daemon learns them: the prediction of each
    waiting job (at most its --time: the plan takes the smaller, EASY++), kept up to date as
    runs of its fingerprint complete (a pass then reads them without recomputing), and each
    running one's, doubled as it outlives it."""

    def __init__(self):
        self.book = RunTimes()
        self.fps: dict[int, Fingerprint] = {}
        self.waiting: dict[Fingerprint, dict[int, Job]] = {}  # waiting jobs, by fingerprint
        self.predicted: dict[int, float] = {}  # of waiting jobs

    def arrive(self, job: Job, tj: TraceJob) -> None:
        fp = self.fps[job.id] = fingerprint(job.user, [tj.name or ""], job.gpus)
        self.waiting.setdefault(fp, {})[job.id] = job
        p = self.book.predict(job, fp=fp)
        if p.seconds is not None:
            self.predicted[job.id] = p.seconds

    def started(self, job: Job) -> None:
        self.predicted.pop(job.id, None)
        jobs = self.waiting.get(self.fps[job.id])
        if jobs is not None:
            jobs.pop(job.id, None)

    def completed(self, job: Job, seconds: float) -> list[int]:
        """Learn from a completed run; returns the waiting jobs without --time whose
        prediction changed (their score counts it: the replay places them again in its kept
        queue, PendingQueue.rekey)."""
        fp = self.fps[job.id]
        self.book.record(fp, seconds)
        mean = predict(list(self.book.last[fp]), fp.label).seconds
        rescored = []
        for job_id, waiting in self.waiting.get(fp, {}).items():
            planned = min(mean, waiting.time_limit) if waiting.time_limit else mean
            if self.predicted.get(job_id) != planned:
                self.predicted[job_id] = planned
                if not waiting.time_limit:
                    rescored.append(job_id)
        return rescored

    def limits(self, running: list[Job], now: float) -> dict[int, float]:
        out = dict(self.predicted)
        out.update(self.book.limits(running, now, lambda j: self.fps[j.id]))
        return out
