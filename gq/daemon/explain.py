"""`gq why`: why a job waits (or how it ended) in words, and the same for a whole array."""

from __future__ import annotations

from collections import Counter

from gq.daemon import arrays
from gq.daemon.core import Daemon
from gq.daemon.startable import never_starts
from gq.daemon.submission import Caller
from gq.daemon.views import job_label, why_sentence
from gq.model import Job, JobState, Reason
from gq.units import iso

WAITING = (JobState.PENDING, JobState.HELD)


def explain(daemon: Daemon, job: Job) -> str:
    """One job's sentence, from the last scheduling pass."""
    shortfall = daemon.shortfalls.get(job.id)
    never = never_starts(daemon, job) if job.reason == Reason.QUOTA_LIMIT else None
    if never is not None:  # the limits changed since it was queued
        name = job_label(job)
        shortfall = (f"{never[0]}, so it can never start under the current limits: "
                     + (f"`gq update {name} -p normal` lets it start" if never[1] else
                        f"`gq cancel {name}` and submit it with fewer GPUs"))
    return why_sentence(job, shortfall, daemon.forecasts.get(job.id),
                        daemon.config.preemption.max_requeues)


def op_why(daemon: Daemon, caller: Caller, args: dict) -> dict:
    from gq.daemon.ops import resolve_id

    text = str(args.get("id", "")).strip()
    job = daemon.store.get_job(resolve_id(daemon, caller, text))
    members = None if arrays.parse_element(text) or job.array is None else (
        arrays.whole_array(daemon.store, job.id))
    if members:  # an array's id: all of it, as wait, cancel and hold take it
        return why_array(daemon, job.array.id, [daemon.store.get_job(i) for i in members])
    forecast = daemon.forecasts.get(job.id)
    return {"id": job.id, "label": job_label(job), "state": str(job.state), "reason": job.reason,
            "why": explain(daemon, job), "expected_start": iso(forecast.start) if forecast
            else None}


def why_array(daemon: Daemon, array_id: int, jobs: list[Job]) -> dict:
    """The elements counted by state, then one sentence for each different reason to wait,
    said of the first element it keeps and naming the others it keeps as well."""
    tally = Counter(str(j.state) for j in jobs)
    lines = [f"Array {array_id}: {len(jobs)} elements: "
             + ", ".join(f"{n} {state}" for state, n in tally.most_common()) + "."]
    by_reason: dict[tuple[str, str | None], list[Job]] = {}
    for job in jobs:
        if job.state in WAITING:
            by_reason.setdefault((str(job.state), job.reason), []).append(job)
    for group in by_reason.values():
        line = explain(daemon, group[0])
        if len(group) > 1:
            others = [job_label(j) for j in group[1:]]
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5
                                             else "")
            line += f" So is {shown}."
        lines.append(line)
    forecasts = [daemon.forecasts[j.id].start for j in jobs if j.id in daemon.forecasts]
    return {"id": array_id, "label": str(array_id), "state": None, "reason": None, "why": "\n".join(lines),
            "expected_start": iso(min(forecasts)) if forecasts else None,
            "elements": {str(s): n for s, n in tally.items()}}
