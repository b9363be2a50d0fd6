"""Acting on freezing (docs/preemption.md#freezing): the facts the policy decides from, the
freeze and thaw helpers (gq/daemon/freezer.py) the daemon starts and watches, and what each
one's record means for its job.

A freeze is recorded first (the job `preempting`, `freeze_op` "freeze", its `host_mem`), then
its helper started; a thaw likewise (the job `running` on its new card, so that nothing else is
placed there, `freeze_op` "thaw"). When the helper ends, its record decides: frozen, thawed, or
the signal path with the step that failed as the reason; a thaw that found its card without
room after all does not begin, and the job is frozen again. A restarted daemon finishes what its
predecessor began: it watches a helper that still runs, reads the record of one that ended, and
starts another where there is neither (each op starts from the driver's state of the process).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gq.config import Config
from gq.daemon import shim as requests
from gq.daemon.ending import PREEMPTED_FOR, RecordRun
from gq.daemon.layout import Layout
from gq.daemon.reading import Reading
from gq.daemon.runs import Runs
from gq.daemon.stopping import Stopping
from gq.daemon.userfiles import checkpoint_times
from gq.gpu.checkpoint import Checkpointer, Support
from gq.model import Job, JobState
from gq.store import Store
from gq.policy.freezing import SIGNAL, Choice, FreezeRule, JobFacts, held_ram, too_big, why_not
from gq.units import format_size

log = logging.getLogger("gq.daemon")

FREEZING = "freezing"  # said after the preemption's reason while a freeze is under way


@dataclass
class Helper:
    job_id: int
    op: str
    pid: int
    pidfd: int
    process: subprocess.Popen | None  # None: started by an earlier daemon (not ours to reap)


class Freezing:
    """Freezes and thaws through the card backend's `checkpointer`, with the processes the
    last `reading` found on each job's card; starts and watches its helpers (`locked(path)`:
    whether a helper still holds its lock, the supervisor's test); asks shims through `runs`
    and takes the signal path through `stopping`; records a frozen run's cost with
    `record_run`, and calls `cards_freed()` when a helper ends."""

    def __init__(self, store: Store, config: Config, layout: Layout, checkpointer: Checkpointer,
                 reading: Reading, runs: Runs, stopping: Stopping,
                 locked: Callable[[Path], bool], record_run: RecordRun,
                 cards_freed: Callable[[], None], clock: Callable[[], float]):
        self.store, self.config, self.layout = store, config, layout
        self.checkpointer, self.reading, self.runs, self.stopping = (
            checkpointer, reading, runs, stopping)
        self.locked, self.record_run, self.cards_freed = locked, record_run, cards_freed
        self.clock = clock
        self.helpers: dict[int, Helper] = {}  # job id -> its freeze or thaw helper
        self.loop: asyncio.AbstractEventLoop | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def freeze_support(self) -> Support:
        try:
            return self.checkpointer.support(self.reading.cards)
        except Exception as e:  # a probe must never take the daemon down
            log.exception("probing checkpoint support failed")
            return Support(why=f"the probe failed: {e}")

    # ---- what the policy is given ---------------------------------------------------------

    def freeze_rule(self, candidates: list[Job]) -> FreezeRule:
        cfg = self.config.preemption
        support = self.freeze_support()
        return FreezeRule(
            modes=cfg.modes, freeze_ram=cfg.freeze_ram_bytes(self.config.host_ram),
            host_free=self.checkpointer.host_memory_free() if candidates else None,
            facts={j.id: self.job_facts(j, support) for j in candidates}, remap=support.remap)

    def job_facts(self, job: Job, support: Support) -> JobFacts:
        """Its processes holding memory on its cards, and how much, as NVML (or the simulator)
        lists them and attribution tells whose they are; why its card cannot checkpoint."""
        pids, mem = set(), 0
        for card in self.reading.cards:
            if card.index not in job.gpu_ids:
                continue
            if card.processes is None:
                return JobFacts(None, None)
            for p in card.processes:
                owner = self.reading.owners.get(p.pid)
                if owner is None or owner.job_id != job.id or not owner.alive \
                        or owner.by_environment:
                    continue
                pids.add(p.pid)
                mem = None if mem is None or p.used_memory is None else mem + p.used_memory
        problem = next((support.card_problem(i) for i in job.gpu_ids
                        if support.card_problem(i)), None)
        return JobFacts(len(pids), mem, problem)

    def cuda_pid(self, job: Job) -> int | None:
        """The one process of the job that holds memory on its card."""
        pids = {p.pid for card in self.reading.cards if card.index in job.gpu_ids
                for p in card.processes or () if (o := self.reading.owners.get(p.pid)) is not None
                and o.job_id == job.id and o.alive and not o.by_environment}
        return pids.pop() if len(pids) == 1 else None

    # ---- what gq show and gq gpus say --------------------------------------------------------

    def freeze_view(self, job: Job) -> dict:
        """Its preempt mode and where it comes from; for a running job, whether it could be
        frozen now, and why not."""
        tier = str(job.priority)
        mode = job.preempt_mode or self.config.preemption.modes.get(tier, SIGNAL)
        out = {"mode": mode, "from": "--preempt-mode" if job.preempt_mode
               else f"[preemption] mode of the {tier} tier", "can": None, "why": None}
        if job.state == JobState.RUNNING and not job.freeze_op and job.gpus:
            rule = self.freeze_rule([job])
            why = why_not(job, rule, job.id in checkpoint_times(self.layout, [job]))
            if why is None:
                budget = None if rule.freeze_ram is None else (
                    rule.freeze_ram - held_ram(self.store.holding_jobs()))
                why = too_big(rule.facts[job.id].device_mem, (budget, rule.host_free))
            out["can"], out["why"] = why is None, why
            if why is None:
                out["host_mem"] = rule.facts[job.id].device_mem
        return out

    def cards_freeze_json(self) -> dict[int, dict]:
        support = self.freeze_support()
        return {c.index: {"can": support.card_problem(c.index) is None,
                          "why": support.card_problem(c.index), "driver": support.driver,
                          "remap": support.remap} for c in self.reading.cards}

    # ---- freezing -------------------------------------------------------------------------

    def freeze(self, job_id: int, reason: str, choice: Choice) -> None:
        """Freeze a victim; without its process or its shim at hand, the signal path."""
        job = self.store.get_job(job_id)
        pid, shim = self.cuda_pid(job), self.runs.shims.get(job_id)
        if pid is None or shim is None or len(job.gpu_ids) != 1:
            self.stopping.preempt(job_id, reason, note="not frozen: its process was not found on "
                                  "its card at the moment of freezing")
            return
        card = next(c for c in self.reading.cards if c.index == job.gpu_ids[0])
        cards = [{"index": card.index, "uuid": card.uuid, "name": card.name,
                  "mem": choice.host_mem, "pid": pid}]
        self.store.transition(job_id, JobState.PREEMPTING, self.clock(),
                              reason=f"{reason}: {FREEZING}", detail=choice.reason,
                              freeze_op="freeze", host_mem=choice.host_mem, frozen_cards=cards,
                              freeze_note=None)
        self.start_helper(self.store.get_job(job_id))

    def thaw(self, job_id: int, gpu_ids: list[int]) -> None:
        """Record the job running on its new cards (their memory is its from now), then have a
        helper restore it there."""
        job = self.store.get_job(job_id)
        now = self.clock()
        cards = {c.index: c for c in self.reading.cards}
        onto = ", ".join(map(str, gpu_ids))
        self.store.transition(job_id, JobState.RUNNING, now, started_at=now, gpu_ids=gpu_ids,
                              freeze_op="thaw", detail=f"thawing on GPU {onto}")
        job = self.store.get_job(job_id)
        if any(i not in cards for i in gpu_ids) or len(gpu_ids) != len(job.frozen_cards):
            self.after_helper(job, {"op": "thaw", "done": True, "ok": False,
                                    "error": f"GPU {onto} is not one of this host's cards"})
            return
        self.runs.mark_thawed(job_id)  # a new run: its shim's warning counts from now
        self.start_helper(job)

    def start_helper(self, job: Job) -> None:
        """Start the job's freeze or thaw helper, or watch the one that runs already."""
        if self.watch_helper(job.id):
            return
        shim = self.runs.shims.get(job.id)
        if shim is None:  # not adopted yet: the next tick (settle_or_retry) comes back here
            self.runs.later(job.id)
            return
        cards = {c.index: c for c in self.reading.cards}
        frozen = job.frozen_cards
        remap = {c["uuid"]: cards[i].uuid for c, i in zip(frozen, job.gpu_ids) if i in cards}
        spec = {"op": job.freeze_op, "job_id": job.id, "pid": frozen[0]["pid"],
                "shim": shim.pid, "record": str(self.helper_record(job.id)),
                "lock": str(self.helper_lock(job.id)), "checkpointer": self.checkpointer.spec(),
                "timeout": self.config.preemption.lock_timeout, "remap": remap,
                "need": {remap.get(c["uuid"], c["uuid"]): c["mem"] for c in frozen}}
        self.helper_record(job.id).unlink(missing_ok=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "gq.daemon.freezer", json.dumps(spec)],
            stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        self._watch(Helper(job.id, job.freeze_op, process.pid, os.pidfd_open(process.pid),
                           process))
        log.info("job %s: %s helper started (pid %s)", job.id, job.freeze_op, process.pid)

    def helper_record(self, job_id: int):
        return self.layout.run / f"{job_id}.freeze"

    def helper_lock(self, job_id: int):
        return self.layout.run / f"{job_id}.freeze.lock"

    def watch_helper(self, job_id: int) -> bool:
        """Watch a helper an earlier daemon started, if it still runs (it holds its lock)."""
        if job_id in self.helpers:
            return True
        lock = self.helper_lock(job_id)
        if not self.locked(lock):
            return False
        try:
            pid = json.loads(lock.read_text())["pid"]
            pidfd = os.pidfd_open(pid)
        except (OSError, ValueError, KeyError):
            return False
        if not self.locked(lock):  # it ended meanwhile, and the pid is not its
            os.close(pidfd)
            return False
        self._watch(Helper(job_id, "?", pid, pidfd, None))
        return True

    def _watch(self, helper: Helper) -> None:
        self.helpers[helper.job_id] = helper
        if self.loop is not None:
            self.loop.add_reader(helper.pidfd, self.on_helper_exit, helper.job_id)

    def on_helper_exit(self, job_id: int) -> None:
        helper = self.helpers.pop(job_id)
        if self.loop is not None:
            self.loop.remove_reader(helper.pidfd)
        os.close(helper.pidfd)
        if helper.process is not None:
            helper.process.wait()
        record = self.read_helper_record(job_id)
        with self.store.relaxed():
            job = self.store.get_job(job_id)
            if job is not None and job.freeze_op:
                if record is None or not record.get("done"):
                    record = {"op": job.freeze_op, "done": True, "ok": False,
                              "error": "the helper died without saying how it went"}
                self.after_helper(job, record)
        self.cards_freed()

    def read_helper_record(self, job_id: int) -> dict | None:
        try:
            return json.loads(self.helper_record(job_id).read_text())
        except (OSError, ValueError):
            return None

    def resume(self, job: Job) -> None:
        """For a re-adopted job whose freeze or thaw an earlier daemon began: watch its helper,
        apply the record it left, or start another."""
        if self.watch_helper(job.id):
            return
        record = self.read_helper_record(job.id)
        if record is not None and record.get("done") and record.get("op") == job.freeze_op:
            self.after_helper(job, record)
        else:
            self.start_helper(job)

    # ---- what a helper's record means -----------------------------------------------------

    def after_helper(self, job: Job, record: dict) -> None:
        now = self.clock()
        self.helper_record(job.id).unlink(missing_ok=True)
        if job.freeze_op == "freeze" and job.state == JobState.PREEMPTING:
            if record.get("ok"):
                self._frozen(job, record, now)
            else:
                self.fall_back(job, f"not frozen: {record.get('error')}")
        elif job.freeze_op == "thaw" and job.state == JobState.RUNNING:
            if record.get("ok"):
                onto = ",".join(map(str, job.gpu_ids))
                note = f"thawed on GPU {onto} in {record.get('seconds', 0):.1f}s"
                self.store.update(job.id, freeze_op=None, host_mem=None, freeze_note=note)
                self.store.note(job.id, now, note + _steps(record))
            elif record.get("retry"):
                self.store.transition(job.id, JobState.FROZEN, now, reason=job.reason,
                                      detail=f"not thawed: {record.get('error')}; it waits",
                                      gpu_ids=[], freeze_op=None)
            else:
                self.fall_back(job, f"thaw failed: {record.get('error')}")
        else:  # the job moved on meanwhile (cancelled, ended): only the bookkeeping is left
            self.store.update(job.id, freeze_op=None,
                              host_mem=job.host_mem if job.state == JobState.FROZEN else None)

    def _frozen(self, job: Job, record: dict, now: float) -> None:
        reason = (job.reason or "").removesuffix(f": {FREEZING}")
        size = format_size(job.host_mem or 0)
        with self.store.atomic():
            self.store.transition(
                job.id, JobState.FROZEN, now, reason=f"{reason}: frozen, {size} in host memory",
                detail=f"frozen in {record.get('seconds', 0):.1f}s" + _steps(record),
                gpu_ids=[], frozen_at=now, freeze_op=None,
                freeze_note=f"frozen in {record.get('seconds', 0):.1f}s")
            # The run so far, charged and recorded as a run; a thaw starts the next one.
            self.record_run(job, now, "frozen", None)

    def fall_back(self, job: Job, note: str) -> None:
        """The signal path, after a freeze or thaw that failed: the shim sends the checkpoint
        signal (a SIGCONT first), and the job is requeued once its processes are gone."""
        log.warning("job %s: %s; it takes the signal path", job.id, note)
        base = (job.reason or "").removesuffix(f": {FREEZING}")
        reason = f"{base}; {note}: signal path" if base.startswith(PREEMPTED_FOR) else (
            f"{note}: signal path")
        fields = dict(freeze_op=None, host_mem=None, frozen_cards=[], freeze_note=note,
                      preemptions=job.preemptions + 1)
        if job.state == JobState.PREEMPTING:
            self.store.update(job.id, reason=reason, **fields)
            self.store.note(job.id, self.clock(), f"{note}: it takes the signal path")
            self.runs.ask(job.id, requests.PREEMPT)
        else:
            self.stopping.stop(job, JobState.PREEMPTING, reason, **fields)

    def stop_helpers(self) -> None:
        for helper in self.helpers.values():
            if self.loop is not None:
                self.loop.remove_reader(helper.pidfd)
            os.close(helper.pidfd)
        self.helpers.clear()


def _steps(record: dict) -> str:
    steps = record.get("steps") or {}
    if not steps:
        return ""
    return " (" + ", ".join(f"{k} {v:.1f}s" for k, v in steps.items()) + ")"

