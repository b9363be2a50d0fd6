"""Card telemetry: what each running job uses of each card, sampled into the store and rolled up.

Every card reading (each daemon tick) updates the peak memory of each running job per card;
every [telemetry] interval a sample of every card and of every job on it is written; once a
minute the ended minutes are rolled up, and old rows are pruned. A value that could not be
read stays None all the way: never 0, so never idle.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field

from gq.config.telemetry import TelemetryConfig
from gq.daemon.attribution import Owner
from gq.model import Gpu, GpuProcess, Job
from gq.store.samples import CardSample, JobSample, Samples, Window

PRUNE_EVERY = 3600.0  # seconds; retention is counted in days, no need to delete more often


@dataclass
class RunUsage:
    """What one run of a job has used so far."""

    peaks: dict[int, int] = field(default_factory=dict)  # card -> most bytes held at once
    samples: int = 0  # job-card samples taken
    util_known: int = 0
    util_sum: int = 0
    mem_known: int = 0

    @property
    def util_mean(self) -> float | None:
        return self.util_sum / self.util_known if self.util_known else None

    @property
    def peak(self) -> int | None:
        return max(self.peaks.values()) if self.peaks else None


def command_key(command: list[str], cwd: str) -> str:
    """Names "the same command in the same directory", for learning its memory."""
    return hashlib.sha1(json.dumps([cwd, command]).encode()).hexdigest()[:16]


def job_card_use(cards: list[Gpu], owners: dict[int, Owner],
                 holding: dict[int, Job]) -> list[JobSample]:
    """What each job holding resources uses of each card it holds (or has processes on).

    Utilisation: the card's own when the job is alone on it, else the sum of its processes'
    when the driver gives each one, else unknown. A job with no process on a card whose
    process list is known uses none of it: 0, measured."""
    rows = []
    for card in cards:
        mine: dict[int, list[GpuProcess]] = {}
        others = 0
        for proc in card.processes or ():
            owner = owners.get(proc.pid)
            if (owner is not None and owner.alive and not owner.by_environment
                    and owner.job_id in holding):
                mine.setdefault(owner.job_id, []).append(proc)
            else:
                others += 1
        holders = {j.id for j in holding.values() if card.index in j.gpu_ids} | set(mine)
        for job_id in sorted(holders):
            procs = mine.get(job_id, [])
            if card.processes is None:
                mem = util = None
            else:
                mem = (None if any(p.used_memory is None for p in procs)
                       else sum(p.used_memory for p in procs))
                if not others and set(mine) <= {job_id}:
                    util = card.utilization
                elif not procs:
                    util = 0
                elif all(p.utilization is not None for p in procs):
                    util = min(100, sum(p.utilization for p in procs))
                else:
                    util = None
            rows.append(JobSample(job_id, card.index, mem, util))
    return rows


class Telemetry:
    """Samples cards and jobs into the store; keeps each running job's usage in memory."""

    def __init__(self, samples: Samples, config: TelemetryConfig, keep: float = 900.0,
                 since: float = float("inf")):
        self.samples = samples
        self.config = config
        # When this daemon began: a run started since has its usage in memory from its first
        # sample, so one without is one that had none (a job off the cards, or a short one),
        # and there is nothing in the store to read back.
        self.since = since
        self.usage: dict[int, RunUsage] = {}  # job id -> its current run's usage
        # The last `keep` seconds of each running job's samples, (t, util, mem) a card and
        # sample: idle windows are judged from memory, at a cost that does not grow with them.
        self.keep = keep
        self.recent: dict[int, deque[tuple[float, int | None, int | None]]] = {}
        self.latest: list[JobSample] = []  # from the last card reading
        self._sampled_at = float("-inf")
        self._rolled_at = float("-inf")
        self._pruned_at = float("-inf")

    @property
    def enabled(self) -> bool:
        return self.config.interval > 0

    def observe(self, cards: list[Gpu], owners: dict[int, Owner], holding: dict[int, Job],
                external: dict[int, int | None], now: float) -> bool:
        """Take in one card reading; write a sample when one is due. True if it wrote one."""
        self.latest = job_card_use(cards, owners, holding)
        for row in self.latest:
            usage = self.usage_of(holding[row.job_id])
            if row.mem is not None and row.mem > usage.peaks.get(row.card, -1):
                usage.peaks[row.card] = row.mem
        for job_id in list(self.usage):
            if job_id not in holding:
                del self.usage[job_id]
        if not self.enabled or now - self._sampled_at < self.config.interval * 0.95:
            return False
        self._sampled_at = now
        self._sample(cards, external, holding, now)
        return True

    def _sample(self, cards: list[Gpu], external: dict[int, int | None],
                holding: dict[int, Job], now: float) -> None:
        card_rows = [CardSample(c.index, c.utilization, c.memory_used, external.get(c.index),
                                c.temperature, c.power_w) for c in cards]
        for job_id in [j for j in self.recent if j not in holding]:
            del self.recent[job_id]
        for job_id in {r.job_id for r in self.latest} - set(self.recent):
            # First seen by this daemon: what the run had before a restart is in the store.
            began = holding[job_id].started_at or now
            self.recent[job_id] = deque(
                (p["at"], p["utilization"], p["memory_used"])
                for p in self.samples.job_series(job_id, max(began, now - self.keep)))
        self.samples.write(now, card_rows, self.latest)
        for row in self.latest:
            usage = self.usage.get(row.job_id)
            if usage is None:
                continue
            recent = self.recent.setdefault(row.job_id, deque())
            recent.append((now, row.util, row.mem))
            while recent and recent[0][0] < now - self.keep:
                recent.popleft()
            usage.samples += 1
            usage.mem_known += row.mem is not None
            if row.util is not None:
                usage.util_known += 1
                usage.util_sum += row.util

    def maintain(self, now: float) -> None:
        """Roll up the minutes that ended; now and then drop what is past its retention."""
        if now - self._rolled_at >= 60.0:
            self._rolled_at = now
            self.samples.roll_up(now)
        if now - self._pruned_at >= PRUNE_EVERY:
            self._pruned_at = now
            self.samples.prune(now - self.config.raw_retention,
                               now - self.config.rollup_retention)

    def window(self, job: Job, length: float, now: float) -> Window:
        """The job's samples over the last `length` seconds (at most `keep`), of this run."""
        since = now - length
        rows = [r for r in self.recent.get(job.id, ()) if r[0] >= since]
        util = [r[1] for r in rows if r[1] is not None]
        mem = [r[2] for r in rows if r[2] is not None]
        return Window(len(rows), len(util), sum(util) / len(util) if util else None, len(mem),
                      max(mem) if mem else None)

    def usage_of(self, job: Job) -> RunUsage:
        """The job's usage in its current run; after a daemon restart, read back from the
        samples of the run so far."""
        usage = self.usage.get(job.id)
        if usage is None:
            usage = RunUsage()
            if job.started_at is not None and job.started_at < self.since:
                usage.peaks = self.samples.job_peaks(job.id, job.started_at)
                for row in self.samples.job_minutes(job.started_at, job.id):
                    usage.samples += row["n"]
                    usage.util_known += row["util_n"]
                    usage.util_sum += row["util_sum"]
                    usage.mem_known += row["n"] if row["mem_max"] is not None else 0
            self.usage[job.id] = usage
        return usage

    def run_record(self, job: Job) -> dict:
        """What the run that is ending used, for the runs table."""
        usage = self.usage.pop(job.id, None) or self.usage_of(job)
        self.usage.pop(job.id, None)
        self.recent.pop(job.id, None)
        mean = usage.util_mean
        return {"peaks": usage.peaks, "util_mean": None if mean is None else round(mean, 1),
                "cmd_key": command_key(job.command, job.cwd) if job.command else None}
