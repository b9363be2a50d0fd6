"""The `complete` operation: job ids for shell completion, with a description each.

Cheap on purpose (a shell waits on it at every Tab): active jobs come from the store's memory,
ended ones from one indexed query, and an array is offered once, by its id, unless the word
typed so far names an array (`12_`), in which case its elements are offered.
"""

from __future__ import annotations

from collections import Counter

from gq.daemon.arrays import job_number
from gq.daemon.context import Context
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState, Reason

MAX_ENDED = 50  # most recent ended jobs offered where ended jobs make sense
MAX_OFFERED = 200


# What each command can act on: the states it accepts, and whether only the caller's jobs.
_FOR: dict[str, tuple[frozenset[JobState], bool]] = {
    "cancel": (ACTIVE_STATES, True),
    "hold": (frozenset({JobState.PENDING}), True),
    "release": (frozenset({JobState.HELD, JobState.PENDING}), True),
    "requeue": (frozenset({JobState.RUNNING, JobState.FROZEN}) | ENDED_STATES, True),
    "update": (frozenset({JobState.PENDING, JobState.HELD, JobState.RUNNING}), True),
}
_ANY = (frozenset(JobState), False)


def _wanted(purpose: str, job: Job, caller, authority) -> bool:
    states, only_mine = _FOR.get(purpose, _ANY)
    if job.state not in states or not authority.may_see(caller, job):
        return False
    if only_mine and not authority.may_act(caller, job):
        return False
    if purpose == "release" and job.state == JobState.PENDING:
        return job.reason == Reason.DEPENDENCY_NEVER_SATISFIED
    return True


def _counts(jobs: list[Job]) -> str:
    counts = Counter(str(j.state) for j in jobs)
    return ", ".join(f"{n} {state}" for state, n in counts.most_common())


def candidates(daemon: Context, caller, purpose: str, prefix: str) -> list[list[str]]:
    store = daemon.store
    by_id = {j.id: j for j in store.queue() + store.holding_jobs()}
    if _FOR.get(purpose, _ANY)[0] & ENDED_STATES:
        for job in store.jobs(states=ENDED_STATES, limit=MAX_ENDED, light=True):
            by_id.setdefault(job.id, job)
    array, sep, _ = prefix.partition("_")
    if sep and job_number(array) is not None:  # the elements of one array
        members = sorted(store.jobs(ids=store.array_members(job_number(array)), light=True),
                         key=lambda j: j.array.index)
        return [[f"{array}_{j.array.index}", f"{j.name}, {j.state}"]
                for j in members if _wanted(purpose, j, caller, daemon.authority)][:MAX_OFFERED]
    offered: dict[int, list[Job]] = {}
    for job in sorted(by_id.values(), key=lambda j: -j.id):
        if _wanted(purpose, job, caller, daemon.authority):
            offered.setdefault(job.array.id if job.array else job.id, []).append(job)
    out = []
    for job_id, jobs in offered.items():
        if not str(job_id).startswith(prefix):
            continue
        first = jobs[-1]
        if first.array is None:
            out.append([str(job_id), f"{first.name}, {first.state}"])
        else:
            out.append([str(job_id), f"{first.name}, array of {first.array.size}: "
                                     f"{_counts(jobs)}"])
    # The newest are kept; the shells show them in number order (39 before 353).
    return sorted(out[:MAX_OFFERED], key=lambda row: int(row[0]))


def op_complete(daemon: Context, caller, args: dict) -> list[list[str]]:
    """[[id, description], ...] of the jobs that `args["for"]` (a command) can act on."""
    return candidates(daemon, caller, str(args.get("for") or ""), str(args.get("prefix") or ""))
