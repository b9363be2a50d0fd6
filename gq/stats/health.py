"""The three numbers labs judge a scheduler by, each against its target, for `gq stats`.

- card utilisation: the mean utilisation of the cards over the period, over 70%;
- waits: most jobs (the 80th percentile, nearest rank) start within 10 minutes of submission;
- bad ends: under 5% of the jobs whose runs ended in the period lost one to a resource (its
  failure class, docs/triage.md: out of GPU or host memory, a full disk, a time limit or
  signal) or to preemption.

Each indicator is pass, fail, or unknown (no data: missing data never passes or fails).
"""

from __future__ import annotations

from typing import Any

from gq.units import format_measured

UTILIZATION_TARGET = 70.0  # percent, more than
WAIT_PERCENTILE, WAIT_TARGET = 80, 600.0  # seconds, at most
BAD_END_TARGET = 5.0  # percent, less than
BAD_END_STATES = frozenset({"oom", "preempted"})  # how a run ends because of resources or preemption
# Failure classes whose cause is a resource (gq/triage/rules.py RESOURCE_CLASSES; repeated
# here so that the stats need not import the classifier).
RESOURCE_FAILURES = frozenset({"gpu_oom", "host_oom", "disk_full", "timeout_signal"})
NO_ACCOUNT = "(no account)"  # where the use of users in no [accounts] entry is counted


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest rank: the smallest value with at least p% of the values at or below it."""
    if not sorted_values:
        return None
    rank = max(1, -(-p * len(sorted_values) // 100))
    return sorted_values[int(rank) - 1]


def bad_end_share(runs: list[dict[str, Any]]) -> tuple[float | None, int, int]:
    """(percent of jobs with a run that failed for a resource or was preempted, those jobs, all
    jobs with a run that ended), from the runs that ended in the period. Runs recorded before
    failures were classified count by their state only."""
    jobs: dict[int, bool] = {}
    for run in runs:
        bad = run["state"] in BAD_END_STATES or run.get("failure") in RESOURCE_FAILURES
        jobs[run["job_id"]] = jobs.get(run["job_id"], False) or bad
    bad = sum(jobs.values())
    return (round(100.0 * bad / len(jobs), 2) if jobs else None), bad, len(jobs)


def health(util_mean: float | None, waits: list[float], runs: list[dict[str, Any]]
           ) -> list[dict[str, Any]]:
    """The indicators, in the order `gq stats` prints them. `waits`: submit to first start of
    the jobs that first started in the period, sorted; `runs`: the runs that ended in it."""
    p80 = percentile(waits, WAIT_PERCENTILE)
    share, bad, ended = bad_end_share(runs)
    return [
        _indicator("utilization", "card utilisation", util_mean, "%",
                   f"over {UTILIZATION_TARGET:g}%",
                   None if util_mean is None else util_mean > UTILIZATION_TARGET),
        _indicator("wait_p80", f"p{WAIT_PERCENTILE} wait", p80, "s",
                   f"{WAIT_TARGET / 60:g}m or less",
                   None if p80 is None else p80 <= WAIT_TARGET, jobs=len(waits)),
        _indicator("bad_ends", "ended by resources or preemption", share, "%",
                   f"under {BAD_END_TARGET:g}%",
                   None if share is None else share < BAD_END_TARGET, jobs=ended, bad=bad),
    ]


def _indicator(key: str, label: str, value: float | None, unit: str, target: str,
               ok: bool | None, **counts: int) -> dict[str, Any]:
    return {"name": key, "label": label, "value": value, "unit": unit, "target": target,
            "status": {True: "pass", False: "fail", None: "unknown"}[ok], **counts}


def shown(ind: dict[str, Any]) -> str:
    """An indicator's value for people: 72.3%, 4m10s, N/A."""
    value = ind["value"]
    if value is None:
        return "N/A"
    return format_measured(value) if ind["unit"] == "s" else f"{value:.1f}%"


def print_health(indicators: list[dict[str, Any]]) -> list[str]:
    """The lines that open `gq stats`."""
    width = max(len(i["label"]) for i in indicators)
    lines = ["health"]
    for i in indicators:
        mark = {"pass": "PASS", "fail": "FAIL", "unknown": "N/A"}[i["status"]]
        lines.append(f"  {mark:<4}  {i['label']:<{width}}  {shown(i):>8}   target: "
                     f"{i['target']}")
    return lines
