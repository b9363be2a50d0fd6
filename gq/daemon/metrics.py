"""What `/metrics` serves (docs/telemetry.md, "The Prometheus endpoint"): a snapshot the daemon's
loop builds at each tick, which the endpoint's thread renders for each scrape.

The loop reads only what it keeps anyway: the counters' table (a row per counter and label
value), the card reading, the jobs holding cards and the store's counts of jobs in memory, kept
as jobs come and go (gq/store/resident.py): nothing here grows with the queue. The endpoint's
thread never touches the database: it reads `families`, a list replaced whole and never changed
after. Labels are closed sets (states, tiers, kinds, classes, modes), the card's identity and
the user's name: never a command, directory, environment or job name.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

from prometheus_client.core import (
    CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric,
)

from gq import __version__
from gq.config.telemetry import KINDS
from gq.daemon.reading import Reading
from gq.model import ACTIVE_STATES, ENDED_STATES, JobState, Tier
from gq.policy.freezing import held_ram
from gq.store import Store
from gq.store.tallies import BUCKETS, HISTOGRAMS, TALLIES, histogram
from gq.triage.rules import CLASSES

TIERS = [str(t) for t in Tier]
CARD_LABELS = ["host", "gpu", "uuid", "model"]
# Counter (gq/store/tallies.py, which names its label) -> its Prometheus name (`_total` is
# added), help, and the label's values shown at 0 before the first one (a series born at 1
# loses that 1 to rate()).
COUNTERS = {
    "jobs_submitted": ("gq_jobs_submitted", "Jobs queued (each array element counts).", ()),
    "jobs_ended": ("gq_jobs_ended", "Jobs that ended, by end state.",
                   sorted(str(s) for s in ENDED_STATES)),
    "runs_failed": ("gq_runs_failed", "Runs that failed, by failure class (docs/triage.md).",
                    CLASSES),
    "oom": ("gq_oom", "Runs that ended out of GPU memory.", ()),
    "preemptions": ("gq_preemptions", "Running jobs preempted, by mode (signal, freeze).",
                    ("signal", "freeze")),
    "offences": ("gq_offences", "Offences that began, by kind (docs/telemetry.md).", KINDS),
    "gpu_seconds": ("gq_gpu_seconds", "Card-seconds held by ended runs, by user.", ()),
}
HISTOGRAM_HELP = {
    "wait_seconds": ("gq_wait_seconds", "Waits from submit to first start, by tier."),
    "run_seconds": ("gq_run_seconds", "Lengths of ended runs, by tier."),
}


class Metrics:
    """The families `/metrics` serves: `refresh` (the loop) builds them, `collect` (the
    endpoint's thread, through prometheus_client's registry) hands them out."""

    def __init__(self, store: Store, reading: Reading, last_pass: Callable[[], float],
                 db_path: str, hostname: str, clock: Callable[[], float]):
        self.clock = clock
        self.store = store
        self.reading = reading
        self.last_pass = last_pass
        self.db_path = db_path
        self.hostname = hostname
        self.families: list[Metric] = []

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)

    def refresh(self) -> None:
        found = self.store.tallies()
        self.families = [*self._health(), *_counters(found), *self._cards(), *self._jobs(),
                         *_histograms(found)]

    def _health(self) -> list[Metric]:
        info = GaugeMetricFamily("gq_info", "The daemon's host and gq's version.",
                                 labels=["host", "version"])
        info.add_metric([self.hostname, __version__], 1)
        up = GaugeMetricFamily("gq_up", "1 while the daemon serves.", labels=["host"])
        up.add_metric([self.hostname], 1)
        size = 0
        for path in (self.db_path, self.db_path + "-wal"):
            try:
                size += os.stat(path).st_size
            except OSError:
                pass
        return [info, up,
                GaugeMetricFamily("gq_last_pass_seconds",
                                  "How long the last scheduling pass took.",
                                  value=self.last_pass()),
                GaugeMetricFamily("gq_database_bytes", "The database and its write-ahead log.",
                                  value=size)]

    def _cards(self) -> list[Metric]:
        names = {
            "total": ("gq_gpu_memory_total_bytes", "Each card's memory."),
            "used": ("gq_gpu_memory_used_bytes", "Memory in use on each card (absent: unknown)."),
            "reserved": ("gq_gpu_memory_reserved_bytes",
                         "Memory the jobs on each card hold: their --mem, or the whole card."),
            "outside": ("gq_gpu_memory_outside_bytes",
                        "Memory held by processes outside gq's running jobs (absent: unknown)."),
            "busy": ("gq_gpu_busy_ratio",
                     "Each card's utilisation at the last reading, 0 to 1 (absent: unknown)."),
            "jobs": ("gq_gpu_jobs", "Jobs holding each card."),
        }
        out = {k: GaugeMetricFamily(n, h, labels=CARD_LABELS) for k, (n, h) in names.items()}
        holding = [j for j in self.store.holding_jobs() if j.state != JobState.FROZEN]
        for card in self.reading.cards:
            labels = [self.hostname, str(card.index), card.uuid, card.name]
            on = [j for j in holding if card.index in j.gpu_ids]
            values = {"total": card.memory_total, "used": card.memory_used,
                      "reserved": sum(j.mem or card.memory_total for j in on),
                      "outside": self.reading.external.get(card.index),
                      "busy": None if card.utilization is None else card.utilization / 100,
                      "jobs": len(on)}
            for key, value in values.items():
                if value is not None:  # unknown is no sample, never 0
                    out[key].add_metric(labels, value)
        return list(out.values())

    def _jobs(self) -> list[Metric]:
        resident = self.store.resident
        jobs = GaugeMetricFamily("gq_jobs", "Jobs waiting or holding resources now, by state "
                                 "and tier.", labels=["state", "tier"])
        for state in sorted(str(s) for s in ACTIVE_STATES):
            for tier in TIERS:
                jobs.add_metric([state, tier], resident.by_state.get((state, tier), 0))
        oldest = GaugeMetricFamily("gq_oldest_pending_seconds", "Age of each tier's oldest "
                                   "pending job (0: none pending).", labels=["tier"])
        now, since = self.clock(), resident.oldest_pending()
        for tier in TIERS:
            oldest.add_metric([tier], max(0.0, now - since[tier]) if tier in since else 0.0)
        frozen = GaugeMetricFamily("gq_frozen_host_memory_bytes", "Host memory that frozen "
                                   "jobs hold (docs/preemption.md#freezing).",
                                   value=held_ram(self.store.holding_jobs()))
        return [jobs, oldest, frozen]


def _counters(found: dict[str, dict[str, float]]) -> list[Metric]:
    out = []
    for key, (name, help_text, known) in COUNTERS.items():
        label = TALLIES[key] or None
        family = CounterMetricFamily(name, help_text, labels=[label] if label else None)
        values = found[key]
        if label is None:
            family.add_metric([], values.get("", 0.0))
        else:
            for value in sorted(set(known) | set(values)):
                family.add_metric([value], values.get(value, 0.0))
        out.append(family)
    return out


def _histograms(found: dict[str, dict[str, float]]) -> list[Metric]:
    out = []
    for key in HISTOGRAMS:
        name, help_text = HISTOGRAM_HELP[key]
        family = HistogramMetricFamily(name, help_text, labels=["tier"])
        seen = histogram(found, key)
        for tier in TIERS:
            buckets, total, count = seen.get(tier, ([(le, 0.0) for le in BUCKETS], 0.0, 0.0))
            family.add_metric([tier], [(f"{le:g}", n) for le, n in buckets] + [("+Inf", count)],
                              total)
        out.append(family)
    return out
