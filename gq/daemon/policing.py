"""Keep track of the offenders found in each sample and act on them: record, notify, requeue,
cancel, as [offenders] says for the job's tier. Every action is an event of the job.

A service of the daemon with its own collaborators: the store, the settings, the telemetry it
judges by, whoever stops jobs (`Stopper`) and whoever runs notify commands (`Runner`). The
daemon hands it each card reading (`sample`); tests drive it the same way, with a store in a
temporary directory and a recording stopper (tests/unit/test_policing.py)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Callable, Protocol

from gq.config import Config
from gq.config.telemetry import Action
from gq.daemon.attribution import Owner
from gq.daemon.telemetry import Telemetry
from gq.daemon.cpu_usage import CpuMeter
from gq.daemon.offenders import Candidate, JobView, job_offences, process_offences
from gq.model import Gpu, Job, JobState
from gq.store import Store

log = logging.getLogger("gq.daemon")

REWRITE_EVERY = 30.0  # seconds between updates of an ongoing offence's row
ABSENT_SAMPLES, ABSENT_MIN = 10, 2.0  # an offence not seen for this long (samples, s) ends


class Stopper(Protocol):
    """Stops a running job (the daemon's supervision)."""

    def stop(self, job: Job, new_state: JobState, reason: str, **fields) -> None: ...

    def requeue_over_budget(self, job: Job, peak: int, why: str) -> None: ...


class Runner(Protocol):
    """Runs a notify command, never fatally (gq/daemon/notify.py Notifier)."""

    def run(self, argv: list[str], env: dict[str, str], cwd: str, output: Path,
            record: Callable[[str], None]) -> None: ...


class Police:
    def __init__(self, store: Store, config: Config, telemetry: Telemetry, stopper: Stopper,
                 runner: Runner, home: Path, notify_log: Path):
        self.store, self.config, self.telemetry = store, config, telemetry
        self.stopper, self.runner = stopper, runner
        self.home, self.notify_log = home, notify_log
        self.cpu_meter = CpuMeter(keep=config.offenders.longest_idle_window)
        self._candidate_since: dict[str, float] = {}
        self.open_offences: dict[str, dict] = {}  # key -> its row in the store
        self.cards: list[Gpu] = []
        self.owners: dict[int, Owner] = {}  # pid -> who holds each process on the cards
        for row in self.store.offences.still_open():
            key = _key(row)
            self.open_offences[key] = {**row, "present_at": row["last_seen"]}
            self._candidate_since[key] = row["first_seen"]

    def reconfigure(self, config: Config) -> None:
        self.config = config
        self.cpu_meter.keep = config.offenders.longest_idle_window

    def sample(self, holding: dict[int, Job], now: float, cards: list[Gpu],
               owners: dict[int, Owner], shim_pids: dict[int, int]) -> None:
        """After each sample: find the offenders, record them, act on them. `shim_pids`: job
        id -> the pid of its shim, whose process tree is the job's."""
        self.cards, self.owners = cards, owners
        self.cpu_meter.sample({j: pid for j, pid in shim_pids.items() if j in holding}, now)
        found = {c.key: c for c in self.find_offenders(holding, now)}
        for key in [k for k in self._candidate_since if k not in found]:
            del self._candidate_since[key]
        for key, cand in found.items():
            since = self._candidate_since.setdefault(key, now)
            row = self.open_offences.get(key)
            if row is not None:  # the latest evidence in memory, in the store now and then
                row.update(present_at=now, evidence=cand.evidence, figures=_figures(cand))
                if now - row["last_seen"] >= REWRITE_EVERY:
                    self.store.offences.seen(row["id"], now, cand.evidence, row["figures"])
                    row["last_seen"] = now
            elif now - since >= self._persistence(cand):
                self._open(cand, now)
        # An offence ends at once when its job stops or its process leaves the cards; one
        # that is merely not seen in a sample (too few readings in its window) ends only after
        # a while, so that it does not end and begin again, notifying each time.
        grace = max(ABSENT_SAMPLES * self.config.telemetry.interval, ABSENT_MIN)
        for key, row in list(self.open_offences.items()):
            if key in found:
                self._act(row, now)
            elif self._subject_gone(row, holding) or now - row["present_at"] >= grace:
                del self.open_offences[key]
                self.store.offences.mark(row["id"], ended_at=now, last_seen=row["present_at"])

    def _subject_gone(self, row: dict, holding: dict[int, Job]) -> bool:
        if row["kind"] in ("zombie", "stray"):
            return row["pid"] not in self.owners
        job = holding.get(row["job_id"])
        return job is None or job.state != JobState.RUNNING

    def find_offenders(self, holding: dict[int, Job], now: float) -> list[Candidate]:
        config = self.config.offenders
        interval = max(self.config.telemetry.interval, self.config.tick)
        found = []
        for job in holding.values():
            if job.state != JobState.RUNNING or job.gpus == 0 or job.started_at is None:
                continue
            rules = config.rules(str(job.priority))
            window_len = rules.idle_window
            window = (self.telemetry.window(job, window_len, now)
                      if now - job.started_at >= window_len else None)
            usage = self.telemetry.usage_of(job)
            latest = [r for r in self.telemetry.latest if r.job_id == job.id]
            view = JobView(job, window, usage.peak, usage.samples, usage.mem_known, latest)
            if now - job.started_at >= rules.input_bound_window:
                view.util_window = self.telemetry.window(job, rules.input_bound_window, now)
                view.cpu = self.cpu_meter.window(job.id, rules.input_bound_window, now)
            found += job_offences(view, now, interval, config)
        named = {o.job_id for o in self.owners.values() if o.job_id is not None}
        jobs = {j.id: j for j in self.store.jobs(ids=named, light=True)} if named else {}
        return found + process_offences(self.cards, self.owners, jobs)

    def action_of(self, kind: str, tier: str | None) -> Action:
        config = self.config.offenders
        return (config.rules(tier) if tier and kind not in ("zombie", "stray")
                else config.default).action(kind)

    def _persistence(self, cand: Candidate) -> float:
        """How long a candidate must be seen before it is an offender."""
        config = self.config.offenders
        if cand.kind == "zombie":
            return config.zombie_after
        if cand.kind == "stray":
            return config.stray_after
        if cand.kind == "over_budget":
            return config.rules(cand.tier).over_budget_after
        return 0.0  # idle and over-declared are judged over a window already

    def _open(self, cand: Candidate, now: float) -> None:
        action = self.action_of(cand.kind, cand.tier)
        figures = _figures(cand)
        offence_id = self.store.offences.open(
            cand.kind, now, cand.evidence, figures, str(action), job_id=cand.job_id,
            pid=cand.pid, card=cand.gpus[0] if cand.gpus else None, user=cand.user)
        self.open_offences[cand.key] = {
            "id": offence_id, "kind": cand.kind, "job_id": cand.job_id, "pid": cand.pid,
            "user": cand.user, "first_seen": now, "last_seen": now, "ended_at": None,
            "evidence": cand.evidence, "figures": figures, "action": str(action),
            "notified_at": None, "acted": None, "acted_at": None, "present_at": now,
        }
        log.info("offender (%s): %s", cand.kind, cand.evidence)
        if cand.job_id is not None:
            self.store.note(cand.job_id, now, f"offender ({cand.kind}): {cand.evidence}; "
                                              f"action: {action}")

    def _act(self, row: dict, now: float) -> None:
        action = self.action_of(row["kind"], row["figures"].get("tier"))
        if action.what == "report":
            return
        if row["notified_at"] is None:
            outcome = self._notify_offence(row, action)
            row["notified_at"] = now
            self.store.offences.mark(row["id"], notified_at=now)
            if row["job_id"] is not None:
                self.store.note(row["job_id"], now, f"offender ({row['kind']}): {outcome}")
        if action.what not in ("requeue", "cancel") or row["acted"] or (
                now - row["first_seen"] < action.after):
            return
        job = self.store.get_job(row["job_id"])
        row.update(acted="requeued" if action.what == "requeue" else "cancelled", acted_at=now)
        self.store.offences.mark(row["id"], acted=row["acted"], acted_at=now)
        if job is None or job.state != JobState.RUNNING:
            return
        why = f"{row['kind'].replace('_', '-')}: {row['evidence']}"
        if action.what == "requeue" and row["kind"] == "over_budget":
            held = row["figures"].get("mem_used") or 0
            self.stopper.requeue_over_budget(job, max(held, job.peak_mem or 0), why)
        elif action.what == "requeue":
            self.stopper.stop(job, JobState.PREEMPTING, f"requeued by gq ({why})")
        else:
            self.stopper.stop(job, JobState.CANCELLED, f"cancelled by gq ({why})")

    def _notify_offence(self, row: dict, action: Action) -> str:
        """Start the [offenders] notify command (through the job-end notifier: same timeout,
        same concurrency cap, never fatal); say what happened, for the job's history."""
        command = self.config.offenders.notify
        if not command:
            return "no notify command is configured"
        kind = row["kind"]
        self.runner.run(
            ["/bin/sh", "-c", command], {**os.environ, **_variables(row, action)},
            str(self.home), self.notify_log,
            lambda outcome: (log.info if outcome == "sent" else log.warning)(
                "offender (%s): notify command %s", kind, outcome))
        return "notify command started"


def _figures(cand: Candidate) -> dict:
    """The numbers behind the evidence, with what an offence row keeps beside them."""
    return {**cand.figures, "suggestion": cand.suggestion, "gpus": cand.gpus, "tier": cand.tier}


def _key(row: dict) -> str:
    if row["kind"] in ("zombie", "stray"):
        return f"{row['kind']}:{row['pid']}"
    return f"{row['kind']}:{row['job_id']}"


def _variables(row: dict, action: Action) -> dict[str, str]:
    """What the notify command is told, in its environment."""
    figures = row["figures"]
    return {
        "GQ_OFFENCE_KIND": row["kind"],
        "GQ_OFFENCE_EVIDENCE": row["evidence"],
        "GQ_OFFENCE_ACTION": str(action),
        "GQ_OFFENCE_SUGGESTION": figures.get("suggestion", ""),
        "GQ_OFFENCE_JSON": json.dumps(row),
        "GQ_JOB_ID": "" if row["job_id"] is None else str(row["job_id"]),
        "GQ_USER": row["user"] or "",
        "GQ_PID": "" if row["pid"] is None else str(row["pid"]),
        "GQ_GPUS": ",".join(map(str, figures.get("gpus") or [])),
    }
