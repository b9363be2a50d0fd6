"""Run times learned during a replay (`gq sim --learn`), with the daemon's predictor."""

from __future__ import annotations

from gq.model import Job
from gq.policy.predict import Fingerprint, RunTimes, fingerprint, predict
from gq.sim.traces import TraceJob


class Learned:
    """Run times learned during a replay, as the daemon learns them: the prediction of each
    waiting job without a limit, kept up to date as runs of its fingerprint complete (a pass
    then reads them without recomputing), and each running one's, doubled as it outlives it."""

    def __init__(self):
        self.book = RunTimes()
        self.fps: dict[int, Fingerprint] = {}
        self.waiting: dict[Fingerprint, set[int]] = {}  # jobs without --time, by fingerprint
        self.predicted: dict[int, float] = {}  # of waiting jobs

    def arrive(self, job: Job, tj: TraceJob) -> None:
        fp = self.fps[job.id] = fingerprint(job.user, [tj.name or ""], job.gpus)
        if not job.time_limit:
            self.waiting.setdefault(fp, set()).add(job.id)
            p = self.book.predict(job, fp=fp)
            if p.seconds is not None:
                self.predicted[job.id] = p.seconds

    def started(self, job: Job) -> None:
        self.predicted.pop(job.id, None)
        ids = self.waiting.get(self.fps[job.id])
        if ids is not None:
            ids.discard(job.id)

    def completed(self, job: Job, seconds: float) -> list[int]:
        """Learn from a completed run; returns the waiting jobs whose prediction changed (the
        replay places them again in its kept queue: PendingQueue.rekey)."""
        fp = self.fps[job.id]
        self.book.record(fp, seconds)
        mean = predict(list(self.book.last[fp]), fp.label).seconds
        changed = [i for i in self.waiting.get(fp, ()) if self.predicted.get(i) != mean]
        for job_id in changed:
            self.predicted[job_id] = mean
        return changed

    def limits(self, running: list[Job], now: float) -> dict[int, float]:
        out = dict(self.predicted)
        out.update(self.book.limits(running, now, lambda j: self.fps[j.id]))
        return out
