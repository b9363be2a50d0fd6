"""`gq why`: why a job waits (or how it ended) in words, and the same for a whole array."""

from __future__ import annotations

from collections import Counter

from gq.daemon import arrays
from gq.daemon.context import Context
from gq.daemon.ending import PREEMPTED_FOR
from gq.daemon.listing import expected_start, start_basis
from gq.daemon.lookup import resolve_id
from gq.daemon.runtimes import end_note
from gq.daemon.startable import never_starts
from gq.daemon.submission import Caller
from gq.daemon.views import failure_json, failure_text, job_label, largest_card, why_sentence
from gq.model import Job, JobState, Reason
from gq.units import format_duration, iso

WAITING = (JobState.PENDING, JobState.HELD)
REASONS_READ = 5000  # elements of an array whose reasons `gq why ARRAY` reads


def explain(daemon: Context, job: Job) -> str:
    """One job's sentence, from the last scheduling pass."""
    shortfall = daemon.passes.shortfalls.get(job.id)
    forecast = daemon.passes.forecasts.get(job.id)
    stopping = _stopping_for(daemon, job)
    if stopping:  # it starts when they are gone: a reservation elsewhere is beside the point
        ids = ",".join(job_label(v) for v in stopping)
        cards = ",".join(str(i) for i in sorted({i for v in stopping for i in v.gpu_ids}))
        grace = format_duration(max(daemon.stopping.grace_of(v) for v in stopping))
        said = (f"job(s) {ids}, preempted for it, are stopping on GPU {cards or 'none'}: it "
                f"starts once they have (SIGKILL after at most {grace}, their grace)")
        if all(v.freeze_op == "freeze" for v in stopping):
            said = (f"job(s) {ids}, preempted for it, are being frozen on GPU {cards}: it "
                    "starts once their memory is in host memory")
        shortfall = f"{shortfall}; {said}" if shortfall and "preempting job(s)" not in (
            shortfall) else said
        forecast = None
    never = never_starts(daemon, job) if job.reason == Reason.QUOTA_LIMIT else None
    if never is not None:  # the limits changed since it was queued
        name = job_label(job)
        shortfall = (f"{never[0]}, so it can never start under the current limits: "
                     + (f"`gq update {name} -p normal` lets it start" if never[1] else
                        f"`gq cancel {name}` and submit it with fewer GPUs"))
    said = why_sentence(job, shortfall, forecast, daemon.config.preemption.max_requeues,
                        daemon.passes.start_notes.get(job.id))
    if job.state == JobState.RUNNING:
        p = daemon.run_times.predict(job, daemon.clock(), daemon.fingerprints(job))
        note = end_note(job, p)
        said = f"{said} {note}" if note else said
    return said


def _stopping_for(daemon: Context, job: Job) -> list[Job]:
    """The jobs being preempted for this waiting one (their reason names it)."""
    if job.state != JobState.PENDING:
        return []
    mark = f"{PREEMPTED_FOR} {job.id} ("
    return [j for j in daemon.store.holding_jobs()
            if j.state == JobState.PREEMPTING and (j.reason or "").startswith(mark)]


def op_why(daemon: Context, caller: Caller, args: dict) -> dict:
    text = str(args.get("id", "")).strip()
    job_id = resolve_id(daemon, caller, text)
    daemon.passes.explain_now()  # the reasons as of now, if the queue changed since they were given
    # Light jobs (no command or environment; waiting ones from memory): all a sentence needs,
    # and cheap for each of a 10,000-element array.
    job = daemon.store.light_jobs([job_id])[job_id]
    if job.array is not None and job.array.id == job.id and not arrays.parse_element(text):
        # An array's id: all of it, as wait, cancel and hold take it; its counts exact, the
        # reasons of its first REASONS_READ elements (a request reads at most that many).
        members = daemon.store.array_members(job.id, limit=REASONS_READ)
        found = daemon.store.light_jobs(members)
        return why_array(daemon, job.array.id, [found[i] for i in members],
                         array_tally(daemon, job.array.id))
    return {"id": job.id, "label": job_label(job), "state": str(job.state), "reason": job.reason,
            "why": explain(daemon, job) + failure_text(job, largest_card(daemon.cards)),
            "expected_start": expected_start(daemon, job.id),
            "expected_start_basis": start_basis(daemon, job.id),
            # a waiting `gq run`'s place: the waiting jobs considered before it
            "ahead": daemon.passes.ahead.get(job.id),
            **failure_json(job, largest_card(daemon.cards))}


def array_tally(daemon: Context, array_id: int) -> Counter[str]:
    """An array's elements by state, without reading them: the active ones counted in
    memory as they change (gq/store/resident.py), the ended ones in one grouped query."""
    tally = Counter(daemon.store.resident.array_states.get(array_id, {}))
    tally.update(daemon.store.array_outcomes([array_id]).get(array_id, {}))
    return tally


def why_array(daemon: Context, array_id: int, jobs: list[Job],
              tally: Counter[str] | None = None) -> dict:
    """The elements counted by state (`tally`, or counted from `jobs`), then one sentence
    for each different reason to wait, said of the first element it keeps and naming the
    others it keeps as well."""
    tally = tally or Counter(str(j.state) for j in jobs)
    lines = [f"Array {array_id}: {tally.total()} elements: "
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
    known = daemon.passes.forecasts
    forecasts = [known[j.id].start for j in jobs if j.id in known]
    return {"id": array_id, "label": str(array_id), "state": None, "reason": None, "why": "\n".join(lines),
            "expected_start": iso(min(forecasts)) if forecasts else None,
            "elements": {str(s): n for s, n in tally.items()}}
