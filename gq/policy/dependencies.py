"""Whether a job's dependencies are met, still possible, or can never be met."""

from __future__ import annotations

from enum import Enum

from gq.model import ENDED_STATES, DepKind, Job, JobState
from gq.policy.types import Outcome


class DepStatus(Enum):
    MET = "met"
    WAITING = "waiting"
    NEVER = "never"


def _status(kind: DepKind, outcome: Outcome | None) -> DepStatus:
    if outcome is None:  # neither started nor ended yet
        return DepStatus.WAITING
    if kind == DepKind.AFTERSTART:  # started, or ended without starting (cancelled)
        return DepStatus.MET
    if outcome.state not in ENDED_STATES:
        return DepStatus.WAITING
    ok = outcome.state == JobState.COMPLETED
    if kind == DepKind.AFTEROK:
        return DepStatus.MET if ok else DepStatus.NEVER
    if kind == DepKind.AFTERNOTOK:
        return DepStatus.NEVER if ok else DepStatus.MET
    return DepStatus.MET


def dependency_status(job: Job, outcomes: dict[int, Outcome]) -> DepStatus:
    """`outcomes`: what happened to the jobs depended on (Outcome.of), those that have."""
    waiting = False
    for kind, ids in job.deps.items():
        for dep_id in ids:
            status = _status(kind, outcomes.get(dep_id))
            if status is DepStatus.NEVER:
                return status
            waiting = waiting or status is DepStatus.WAITING
    return DepStatus.WAITING if waiting else DepStatus.MET
