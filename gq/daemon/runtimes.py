"""Learned run times in the daemon: the book of each fingerprint's last completed runs, loaded
at start and kept as runs end, and what `gq show`, `gq why` and `gq stats` say of predictions."""

from __future__ import annotations

import json
import statistics

from gq.model import Job
from gq.units import format_duration, iso
from gq.policy.predict import (
    Fingerprint, Prediction, RunTimes, fingerprint, prediction_errors,
)

LEARN_FROM = 90 * 86400.0  # completed runs older than this teach nothing


def load_run_times(history, now: float) -> RunTimes:
    book = RunTimes()
    for row in history.completed_runs(now - LEARN_FROM):
        book.record(fingerprint(row["user"], json.loads(row["command"]), row["gpus"]),
                    row["ended_at"] - row["started_at"])
    return book


def prediction_json(p: Prediction) -> dict:
    """`gq show --json`: {"seconds": ..., "runs": ..., "basis": ...}; seconds None: unknown."""
    return {"seconds": None if p.seconds is None else round(p.seconds, 1), "runs": p.runs,
            "basis": p.basis}


def prediction_quality(history, since: float, now: float) -> dict:
    """For `gq stats`: how far predictions were from the runs that ended in [since, now): the
    median absolute error, over the runs that had a prediction."""
    rows = history.completed_runs(since - LEARN_FROM)
    runs = [(fingerprint(r["user"], json.loads(r["command"]), r["gpus"]),
             r["ended_at"] - r["started_at"], r["ended_at"]) for r in rows]
    errors = [e for ended, e in prediction_errors(runs) if since <= ended < now]
    seen = sum(1 for _fp, _s, ended in runs if since <= ended < now)
    return {"runs": seen, "predicted": len(errors),
            "median_abs_error_s": round(statistics.median(errors), 1) if errors else None}


class Fingerprints:
    """The fingerprint of each queued or running job, read once from its full row: the
    store's cached jobs carry no command."""

    def __init__(self, store):
        self.store = store
        self.known: dict[int, Fingerprint] = {}

    def __call__(self, job: Job) -> Fingerprint:
        fp = self.known.get(job.id)
        if fp is None:
            command = job.command or self.store.command(job.id)
            fp = self.known[job.id] = fingerprint(job.user, command, job.gpus_held)
        return fp

    def keep_only(self, ids: set[int]) -> None:
        self.known = {i: fp for i, fp in self.known.items() if i in ids}


def record_completed(book: RunTimes, job: Job, ended_at: float) -> None:
    if job.started_at is not None:
        book.record(fingerprint(job.user, job.command, job.gpus_held), ended_at - job.started_at)


def start_notes(inp, forecasts: dict, book: RunTimes, fp_of
                ) -> dict[int, tuple[bool, str]]:
    """For each reserved job: whether its expected start is known, and what it rests on, in
    words: the --time of the job it waits for, or that job's predicted run time where it is
    shorter (as the plan has it). A start that waits for a job whose end is only a default
    assumption is unknown."""
    running = {j.id: j for j in inp.running}
    waiting = inp.pending.jobs  # a kept queue: looked up, not copied (it may be long)
    jobs = lambda i: running.get(i) or waiting.get(i)  # noqa: E731
    out = {}
    for job_id, f in forecasts.items():
        after = jobs(f.after) if f.after is not None else None
        if after is None:
            out[job_id] = (True, "when the cards it needs are free")
        elif after.time_limit and inp.run_time_of(after) >= after.time_limit:
            out[job_id] = (True, f"when job {after.id} reaches its --time")
        elif inp.end_known(after):  # planned by its prediction (EASY++), below any --time
            p = book.predict(after, inp.now, fp_of(after))
            basis = p.basis
            reserved = jobs(job_id)
            if reserved is not None and reserved.user != after.user:
                basis = basis.replace("like your ", f"like {after.user}'s ", 1)
            out[job_id] = (True, f"when job {after.id} ends: it runs "
                                 f"~{format_duration(p.seconds)}, {basis}")
        else:
            label = fp_of(after).label
            out[job_id] = (False, f"unknown: it waits for job {after.id}, which has no --time "
                                  f"and no completed run of {label} to learn from")
    return out


def end_note(job: Job, p: Prediction) -> str | None:
    """`gq why` of a running job: when the plan expects it to end, and on what: its predicted
    run time where that is shorter than its --time (EASY++), else its --time; None when
    neither is known. A prediction stops nothing: only --time does."""
    if job.started_at is None:
        return None
    if p.seconds is not None and (not job.time_limit or p.seconds < job.time_limit):
        stop = f" (its --time, {format_duration(job.time_limit)}, stops it)" if (
            job.time_limit) else ""
        return (f"Expected to end by {iso(job.started_at + p.seconds)}: it runs "
                f"~{format_duration(p.seconds)}, {p.basis}{stop}.")
    if job.time_limit:
        return f"Expected to end by {iso(job.started_at + job.time_limit)}, at its --time."
    return None


def learned_mem_quality(history, since: float, now: float) -> dict:
    """For `gq stats`: of the runs of jobs whose --mem was learned, how much of what they
    reserved they left unused (over_reservation: 1 - sum of peaks / sum of --mem, over runs
    with a known peak) and what share died out of memory."""
    rows = history.learned_mem_runs(since, now)
    sized = [r for r in rows if r["peak_mem"] is not None and r["mem"]]
    reserved = sum(r["mem"] for r in sized)
    return {
        "runs": len(rows),
        "over_reservation": (round(1 - sum(min(r["peak_mem"], r["mem"]) for r in sized)
                                   / reserved, 3) if reserved else None),
        "oom_rate": round(sum(r["state"] == "oom" for r in rows) / len(rows), 3) if rows
        else None,
    }
