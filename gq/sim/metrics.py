"""What a replay measured: waits, completion times, GPU allocation and makespan, per tier.

Definitions (docs/sim.md has them for people):
- wait = start - submit; completion time (JCT) = end - submit; p95 by the nearest-rank method.
- allocation_rate = GPU-seconds allocated / (GPUs in the cluster x makespan), 0..1; a job on a
  slice of a card counts its share of the card, so packing slices is visible in the figure.
- makespan = last end - first submit, over the jobs that ran.
- max_wait_largest_s: the worst wait among the jobs with the most GPUs (`largest_gpus`) of
  the replayed trace, the jobs a queue is most likely to starve; avg_wait_largest_s their
  average wait (what reservations for big jobs buy, and what the small jobs pay for it).
- by_tier: the same per tier; a tier's allocation_rate is its part of the cluster's, so the
  tiers add up to the whole.
"""

from __future__ import annotations

import math
from typing import Any

from gq.model import Tier
from gq.sim.replay import JobResult, ReplayResult


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile (the smallest value with at least p% of values at or below
    it): always one of the values, so a p95 wait is a wait some job had."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(jobs: list[JobResult], total_gpus: int,
              span: tuple[float, float] | None = None) -> dict[str, Any]:
    """The figures for `jobs`; `span` (first submit, last end) fixes the makespan that the
    allocation rate divides by (the whole replay's, for a tier's share of it)."""
    if not jobs:
        return {"jobs": 0, "avg_wait_s": 0.0, "p95_wait_s": 0.0, "max_wait_s": 0.0,
                "avg_jct_s": 0.0, "allocation_rate": 0.0, "makespan_s": 0.0,
                "largest_gpus": 0, "max_wait_largest_s": 0.0, "avg_wait_largest_s": 0.0}
    waits = [j.wait for j in jobs]
    first = min(j.submit for j in jobs)
    last = max(j.end for j in jobs)
    lo, hi = span if span is not None else (first, last)
    gpu_seconds = sum(j.weight * j.held_seconds for j in jobs)
    capacity = total_gpus * (hi - lo)
    largest = max(j.gpus for j in jobs)
    largest_waits = [j.wait for j in jobs if j.gpus == largest]
    return {
        "jobs": len(jobs),
        "avg_wait_s": sum(waits) / len(waits),
        "p95_wait_s": percentile(waits, 95),
        "max_wait_s": max(waits),
        "avg_jct_s": sum(j.jct for j in jobs) / len(jobs),
        "allocation_rate": gpu_seconds / capacity if capacity > 0 else 0.0,
        "makespan_s": last - first,
        "largest_gpus": largest,
        "max_wait_largest_s": max(largest_waits),
        "avg_wait_largest_s": sum(largest_waits) / len(largest_waits),
    }


def metrics(result: ReplayResult) -> dict[str, Any]:
    """The JSON object `gq sim --json` prints for one policy."""
    total_gpus = sum(len(h.cards) for h in result.hosts)
    overall = summarize(result.jobs, total_gpus)
    span = None
    if result.jobs:
        span = (min(j.submit for j in result.jobs), max(j.end for j in result.jobs))
    by_tier = {}
    for tier in Tier:
        of_tier = [j for j in result.jobs if j.tier == tier]
        if of_tier:
            by_tier[str(tier)] = summarize(of_tier, total_gpus, span)
    return {
        "policy": result.policy,
        **overall,
        "by_tier": by_tier,
        "dropped": sum(result.dropped.values()),
        "dropped_reasons": dict(result.dropped),
        "unfinished": result.unfinished,
        "timed_out": sum(j.timed_out for j in result.jobs),
        "preemptions": result.preemptions,
        "grace_card_seconds": result.grace_card_seconds,
        "at_risk_card_seconds": result.at_risk_card_seconds,
        "freezes": result.freezes,
        "freeze_card_seconds": result.freeze_card_seconds,
        "thaw_card_seconds": result.thaw_card_seconds,
        **_preempted_for(result),
        "sharing": result.sharing,
        "gpus": total_gpus,
        "hosts": len(result.hosts),
        "passes": result.passes,
        "sim_seconds": result.wall_seconds,
        "sim_cpu_seconds": result.cpu_seconds,
    }


def _preempted_for(result: ReplayResult) -> dict[str, Any]:
    """The jobs other jobs were stopped for: how many, their average wait, and how long from
    the first stop for each to its start (a grace, or a freeze)."""
    served = [j for j in result.jobs if j.job_id in result.preempted_for]
    if not served:
        return {"preempted_for": 0, "avg_wait_preempted_for_s": 0.0, "avg_stop_delay_s": 0.0,
                "p50_stop_delay_s": 0.0}
    delays = [j.start - result.preempted_for[j.job_id] for j in served]
    return {"preempted_for": len(served),
            "avg_wait_preempted_for_s": sum(j.wait for j in served) / len(served),
            "avg_stop_delay_s": sum(delays) / len(delays),
            "p50_stop_delay_s": percentile(delays, 50)}
