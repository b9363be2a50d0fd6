"""Whether a job's dependencies are met, still possible, or can never be met."""

from __future__ import annotations

from enum import Enum

from gq.model import DepKind, Job, JobState
from gq.policy.types import Outcome


class DepStatus(Enum):
    MET = "met"
    WAITING = "waiting"
    NEVER = "never"


def _satisfies(kind: DepKind, outcome: Outcome) -> bool:
    ok = outcome.state == JobState.COMPLETED
    if kind == DepKind.AFTEROK:
        return ok
    if kind == DepKind.AFTERNOTOK:
        return not ok
    return True


def dependency_status(job: Job, outcomes: dict[int, Outcome]) -> DepStatus:
    waiting = False
    for kind, ids in job.deps.items():
        for dep_id in ids:
            outcome = outcomes.get(dep_id)
            if outcome is None:
                waiting = True
            elif not _satisfies(kind, outcome):
                return DepStatus.NEVER
    return DepStatus.WAITING if waiting else DepStatus.MET
