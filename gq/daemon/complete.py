"""The `complete` operation: job ids for shell completion, with a description each.

Cheap on purpose (a shell waits on it at every Tab): active jobs come from the store's sorted
index of the listing's lines, newest first, only the ranges of ids that start with what was
typed, at most MAX_READ of them (an array counted by state in memory, not read); ended ones
from one indexed query; an array is offered once, by its id, unless the word typed so far
names an array (`12_`), in which case its first elements are offered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from itertools import islice

from gq.daemon.arrays import job_number
from gq.daemon.context import Context
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState, Reason

MAX_ENDED = 50  # most recent ended jobs offered where ended jobs make sense
MAX_OFFERED = 200
MAX_READ = 2000  # lines (jobs, arrays) or an array's elements one answer looks at, at most


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


def _counts(states: Counter[str]) -> str:
    return ", ".join(f"{n} {state}" for state, n in states.most_common())


def _with_prefix(lines, prefix: str) -> Iterator[int]:
    """The ids in `lines` (a sorted list) whose number starts with `prefix`, newest first:
    read from the few ranges they lie in (12: 12, 120-129, 1200-1299...), not by looking at
    every id."""
    if not lines:
        return
    if not prefix:
        yield from reversed(lines)
        return
    if not prefix.isdigit() or prefix.startswith("0"):
        return
    first, scale, ranges = int(prefix), 1, []
    while first * scale <= lines[-1]:
        ranges.append((first * scale, (first + 1) * scale - 1))
        scale *= 10
    for low, high in reversed(ranges):
        yield from lines.irange(low, high, reverse=True)


def candidates(daemon: Context, caller, purpose: str, prefix: str) -> list[list[str]]:
    store = daemon.store
    resident = store.resident
    array, sep, _ = prefix.partition("_")
    if sep and job_number(array) is not None:  # the elements of one array, by index
        members = store.array_members(job_number(array), limit=MAX_READ)
        found = store.light_jobs(members)
        return [[f"{array}_{j.array.index}", f"{j.name}, {j.state}"]
                for j in (found[i] for i in members if i in found)
                if _wanted(purpose, j, caller, daemon.authority)][:MAX_OFFERED]
    states = _FOR.get(purpose, _ANY)[0]
    out: list[list[str]] = []
    # Newest first, at most MAX_READ of the listing's lines (a job, or an array by its id):
    # a shell's Tab reads the same whatever waits.
    for line in islice(_with_prefix(resident.listing_lines(), prefix), MAX_READ):
        if len(out) >= MAX_OFFERED:
            break
        resident.read += 1
        counts = resident.array_states.get(line)
        job = resident.get(line) if counts is None else store.light_jobs([line]).get(line)
        if job is None:
            continue
        if counts is None:
            if _wanted(purpose, job, caller, daemon.authority):
                out.append([str(line), f"{job.name}, {job.state}"])
            continue
        able = Counter({s: n for s, n in counts.items() if JobState(s) in states})
        if able and _wanted(purpose, replace(job, state=JobState(next(iter(able)))), caller,
                            daemon.authority):
            out.append([str(line), f"{job.name}, array of {job.array.size}: {_counts(able)}"])
    offered = {int(row[0]) for row in out}
    # Those whose run still stops, and the last ended jobs, where ended jobs make sense.
    extra = [j for j in store.holding_jobs() if j.state not in ACTIVE_STATES]
    if states & ENDED_STATES:
        extra += store.jobs(states=ENDED_STATES, limit=MAX_ENDED, light=True)
    for job in sorted(extra, key=lambda j: -j.id):
        line = job.array.id if job.array else job.id
        if (line in offered or not str(line).startswith(prefix) or len(out) >= MAX_OFFERED
                or not _wanted(purpose, job, caller, daemon.authority)):
            continue
        offered.add(line)
        out.append([str(line), f"{job.name}, {job.state}" if job.array is None else
                    f"{job.name}, array of {job.array.size}: 1 {job.state}"])
    # The newest are kept; the shells show them in number order (39 before 353).
    return sorted(out, key=lambda row: int(row[0]))


def op_complete(daemon: Context, caller, args: dict) -> list[list[str]]:
    """[[id, description], ...] of the jobs that `args["for"]` (a command) can act on."""
    return candidates(daemon, caller, str(args.get("for") or ""), str(args.get("prefix") or ""))
