"""`gq demo --no-tui`: watch the demo's daemon and print what happens, as it happens."""

from __future__ import annotations

import time
from typing import Any

from gq.protocol import GqError
from gq.protocol.op_names import Op
from gq.protocol.ops import every_listed, listed_jobs
from gq.states import RUNNING, WAITING
from gq.wording.arrays import label

# A running job back in the queue, or being stopped for another: what preemption does.
PREEMPTED = frozenset({"pending", "preempting"})

POLL = 0.25  # seconds between looks


def _preempted_by(demo, job_id: int) -> str:
    """What its last stop says (`preempted for job 10 ...`), from its events."""
    events = demo.call(Op.SHOW, id=str(job_id))["events"]
    stops = [e for e in events if e["new_state"] == "preempting"]
    if not stops:
        return ""
    return f": {stops[-1]['detail'] or stops[-1]['reason']}"


def _change(job: dict[str, Any], before: dict[str, Any] | None) -> str | None:
    """A line for what changed in a job since the last look, or None."""
    state, reason = job["state"], job["reason"]
    if before is not None and (before["state"], before["reason"]) == (state, reason):
        return None
    if before is not None and state == before["state"] and state not in WAITING:
        return None
    name = f"job {label(job)} {job['name']}"  # 4_1, as gq ls names an element
    if state == "running":
        cards = ",".join(map(str, job["gpu_ids"])) or "no GPU"
        share = "whole cards" if job["mem"] is None else f"{job['mem'] >> 30}G per card"
        return f"{name}: running on GPU {cards} ({share}, {job['priority']} tier)"
    if state in WAITING:
        was = "" if before is None or before["state"] in WAITING else (
            f" (back in the queue after {before['state']})")
        return f"{name}: {state}, {reason}{was}"
    why = f" ({reason})" if reason else ""
    code = "" if job.get("exit_code") is None else f", exit code {job['exit_code']}"
    return f"{name}: {state}{why}{code}"


def watch(demo, seconds: float) -> None:
    """Print job changes and new offenders until `seconds` into the demo, then the cards and
    the queue as they stand."""
    seen: dict[int, dict[str, Any]] = {}
    offences: set[int] = set()
    looked = None  # when the last look was (monotonic)
    while demo.elapsed() < seconds:
        try:
            # The jobs active or ended since the last look (and a margin), a page at a time:
            # not the whole history at every look.
            since = None if looked is None else time.monotonic() - looked + 5.0
            looked = time.monotonic()
            jobs = every_listed(demo.call, all=True, since=since)
            found = demo.call(Op.OFFENDERS)
        except (OSError, GqError) as e:
            demo.say(f"{demo.elapsed():5.1f}s  lost the daemon: {e}")
            return
        for job in jobs:
            before = seen.get(job["id"])
            line = _change(job, before)
            if line and before and before["state"] in RUNNING and (
                    job["state"] in PREEMPTED):
                why = _preempted_by(demo, job["id"])
                line += "" if why[2:] in line else why  # said once, not twice
            if line:
                demo.say(f"{demo.elapsed():5.1f}s  {line}")
            seen[job["id"]] = job
        for o in found:
            if o["id"] not in offences:
                offences.add(o["id"])
                who = f"job {o['job_id']}" if o["job_id"] is not None else f"pid {o['pid']}"
                said = o["evidence"] if o["evidence"].startswith(who) else (
                    f"{who}: {o['evidence']}")
                demo.say(f"{demo.elapsed():5.1f}s  offender ({o['kind'].replace('_', '-')}): "
                         f"{said} -> {o['suggestion']}")
        time.sleep(POLL)
    summary(demo)


def summary(demo) -> None:
    from gq.cli import output
    from gq.wording.arrays import table_rows
    from gq.cli.details import print_gpus

    demo.say(f"\nAfter {demo.elapsed():.0f}s, the cards (gq gpus):")
    print_gpus(demo.call(Op.GPUS))
    demo.say("\nThe queue (gq ls):")
    headers, rows = table_rows(listed_jobs(demo.call(Op.LIST)), with_start=False, expand=False,
                               listed_all=False)
    demo.say(output.table(headers, rows))
    demo.say("\nSee it live: gq demo (the same scenario, in gq top)")
