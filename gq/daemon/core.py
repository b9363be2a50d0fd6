"""The daemon: its event loop, the card reading and the accounting the policy reads, and the
services it builds.

Each service has its own constructor and is given the collaborators it uses (docs/architecture.md,
"The daemon's services"): Runs (runs.py), Stopping (stopping.py), Collateral, Ending, Starting,
Freezing, Preempting, Passes (when and how the policy runs, and what it said of waiting jobs)
and Recovery. The daemon owns the loop: it attaches the services to it, and ticks."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from functools import partial
from typing import Callable

from gq.config import Config
from gq.config.scheduling import scheduler_input
from gq.daemon.attribution import Attributor, job_memory_by_card, split_memory
from gq.daemon.authz import Authority
from gq.daemon.backups import BackupSchedule
from gq.daemon.cgroups import prepare as prepare_cgroups
from gq.daemon.collateral import Collateral
from gq.daemon.diskfull import CutLogs
from gq.daemon.ending import Ending
from gq.daemon.freezing import Freezing
from gq.daemon.group_commit import GroupCommit
from gq.daemon.kept_queue import KeptQueue
from gq.daemon.layout import Layout
from gq.daemon.mem_history import learned_utils
from gq.daemon.metrics_service import MetricsService
from gq.daemon.notify import Notifier
from gq.daemon.passes import Passes, predict_waiting
from gq.daemon.peers.registry import Peers
from gq.daemon.policing import Police
from gq.daemon.preempting import Preempting
from gq.daemon.recovery import Recovery, skip_lost_ids
from gq.daemon.reading import Reading
from gq.daemon.reservations import windows as admin_windows
from gq.daemon.runs import Runs
from gq.daemon.runtimes import Fingerprints, load_run_times
from gq.daemon.shim import sweep_spares
from gq.daemon.starting import Starting
from gq.daemon.stopping import Stopping
from gq.daemon.supervisor import Supervisor
from gq.daemon.telemetry import Telemetry
from gq.gpu.base import CardBackend
from gq.model import Job, JobState, Reason
from gq.policy.accounts import dominant_weight
from gq.policy.cardshare import cards_held
from gq.store import Store
from gq.policy import (
    Card, Host, Outcome, PendingQueue, RunInterval, SchedulerInput, decayed_usage,
)

log = logging.getLogger("gq.daemon")


class Daemon:
    def __init__(
        self,
        layout: Layout,
        config: Config,
        backend: CardBackend,
        hostname: str,
        clock: Callable[[], float] = time.time,
    ):
        self.layout = layout
        self.config = config
        self.backend = backend
        self.hostname = hostname
        self.clock = clock
        # A system daemon's job files are in users/NAME/, made as each user's first job starts.
        for d in (layout.logs, layout.run) + (() if layout.system else (layout.checkpoints,)):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.store = Store(layout.db)
        self.group_commit = GroupCommit(lambda: self.store.unsynced, self.store.sync_wal)
        # Said at start (the log, `gq daemon status`).
        self.warnings: list[str] = [w for w in [skip_lost_ids(self.store, layout)] if w]
        job_cgroups, said = prepare_cgroups(config.cgroups, layout.system)
        log.info("%s", said)
        if config.max_procs_per_job and (job_cgroups is None or not job_cgroups.pids):
            self.warnings.append(f"[host] max_procs_per_job is not applied: {said}")
        self.supervisor = Supervisor(layout.run, job_cgroups)
        self.runs = Runs(self.supervisor, self.on_shim_exit)
        self.reading = Reading()  # the cards, and whose memory is whose (read_cards)
        self.stopping = Stopping(self.store, config, self.runs, self.reading, clock)
        self.attributor = Attributor()
        self.telemetry = Telemetry(self.store.samples, config.telemetry,
                                   keep=config.offenders.longest_idle_window, since=clock())
        self.run_times = load_run_times(self.store.history, clock())
        self.fingerprints = Fingerprints(self.store)
        self.usage: dict[str, float] = {}  # decayed card-seconds per user (refresh_usage)
        # Command key -> the SM utilisation its last runs had (None: none measured); emptied
        # when a run is recorded (record_run).
        self.known_utils: dict[str, float | None] = {}
        self.command_keys: dict[int, str] = {}  # slice job id -> its command key
        self._usage_at = float("-inf")
        self.waiters: dict[int, list[asyncio.Future]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        # What a pass reads (gq/daemon/passes.py); sorted again when usage is (refresh_usage).
        self.kept = KeptQueue(partial(predict_waiting, self.run_times, self.fingerprints))
        self.loop_stop = asyncio.Event()  # set to stop serving
        self.notifier = Notifier(self)
        self.police = Police(self.store, config, self.telemetry, self.stopping, self.notifier,
                             layout.home, layout.logs / "notify.log")
        self.collateral = Collateral(self.store, self.reading, self.stopping,
                                     self.police.action_of)
        self.peers = Peers(self)
        self.authority = Authority(config.access)
        self.backups = BackupSchedule(self.store, layout.db, config.backup)
        self.cut_logs = CutLogs(layout.logs)
        self.ending = Ending(self.store, config, layout, self.supervisor, self.stopping,
                             self.collateral, self.reading, self.cut_logs, self.record_run,
                             self.run_times, self.notify, clock)
        self.starting = Starting(self.store, config, layout, backend, self.supervisor, self.runs,
                                 self.reading, self.stopping, self.ending, self.notify, clock)
        self.freezing = Freezing(self.store, config, layout, backend.checkpointer(),
                                 self.reading, self.runs, self.stopping, self.supervisor.locked,
                                 self.record_run, self._cards_freed, clock)
        self.preempting = Preempting(self.store, config, layout, self.freezing, self.stopping)
        self.passes = Passes(self.store, config, self.kept, self.reading, self.collateral,
                             self.starting, self.freezing, self.preempting, self.run_times,
                             self.fingerprints, self.host, self.policy_input, clock)
        self.recovery = Recovery(self.store, self.supervisor, self.runs, self.ending,
                                 self.freezing.resume, clock)
        # /metrics, with [metrics] listen (main.py starts it; a reload moves it)
        self.metrics = MetricsService(self.store, self.reading, lambda: self.passes.last_cost,
                                      layout, hostname, clock)
        self.read_cards()

    # ---- lifecycle ----------------------------------------------------------------------

    # The cards of the last reading, which many handlers read of the daemon.
    cards = property(lambda self: self.reading.cards)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.runs.attach(loop)
        self.starting.attach(loop)
        self.passes.attach(loop)
        self.freezing.attach(loop)
        self.peers.start(loop)
        if not self.layout.system:  # a user's shims keep empty files for their next run
            sweep_spares([str(self.layout.logs), str(self.layout.checkpoints)])
        self.recovery.recover()
        # With the shims adopted: the first pass and answer see whose memory is whose. Not a
        # sample: telemetry and policing go on from the first tick, as before a restart.
        self.read_cards(observe=False)
        self.backups.tick(loop, self.clock())
        self.refresh_usage()
        self.passes.request_pass()

    def close(self) -> None:
        self.metrics.close()
        self.peers.close()
        self.freezing.stop_helpers()
        self.runs.close()
        self.starting.close()
        self.supervisor.close()
        self.store.close()
        self.backend.close()

    def tick(self) -> None:
        with self.store.relaxed():
            self._tick()

    def _tick(self) -> None:
        self.supervisor.forget_finished()
        self.supervisor.retire_idle()
        self.read_cards()
        self.refresh_usage()
        for job_id in list(self.runs.unadopted):  # a failure (a full disk) waits for the next tick
            self.recovery.settle_or_retry(job_id)
        self.cut_logs.watch([j.id for j in self.store.holding_jobs()])
        self.stopping.enforce_time_limits()
        self.stopping.free_stuck()
        self.telemetry.maintain(self.clock())
        self.metrics.tick()
        # Spaced like any other (request_pass): under a flood of requests, a pass on every
        # tick as well would leave the daemon little time to answer them.
        self.passes.request_pass(tick=True)
        if self.loop is not None:
            self.backups.tick(self.loop, self.clock())

    def refresh_usage(self, every: float = 60.0) -> None:
        """Each user's decayed card-seconds, from ended runs and the jobs running now. At most
        once a minute: it reads weeks of runs, and fair share needs no second-by-second
        accuracy (Slurm recalculates every five minutes)."""
        now, half_life = self.clock(), self.config.fairshare.half_life
        if now - self._usage_at < every:
            return
        self._usage_at = now
        intervals = [
            RunInterval(r["user"], r["share"], r["started_at"], r["ended_at"])
            for r in self.store.runs_since(now - 10 * half_life)  # older: under 0.1%
        ]
        holding = self.store.holding_jobs()
        intervals += [
            RunInterval(j.user, self.charge(j), j.started_at, None)
            for j in holding
            if j.started_at is not None and j.state in (JobState.RUNNING, JobState.PREEMPTING)
        ]
        self.usage = decayed_usage(intervals, now, half_life)
        # Scores change: the queue is sorted again at the next pass, with predicted run times
        # taken again too (held in between, as scores are: gq/daemon/kept_queue.py).
        self.fingerprints.keep_only(set(self.kept.queue.jobs) | {j.id for j in holding})
        self.kept.repredict()

    def read_cards(self, observe: bool = True) -> None:
        try:
            self.reading.cards = self.backend.read()
        except Exception:  # a card backend must never take the daemon down
            log.exception("reading the cards failed; keeping the last reading")
        holding = {j.id: j for j in self.store.holding_jobs()}
        shim_pids = {shim.pid: job_id for job_id, shim in self.runs.shims.items()}
        # Until every running job's shim is watched (after a restart), a process outside
        # them all may yet be found inside one: do not remember it as outside gq.
        complete = self.loop is not None and not self.runs.unadopted and all(
            j in self.runs.shims for j in holding)
        reading = self.reading
        reading.owners = self.attributor.owners(reading.cards, shim_pids,
                                                remember_outside=complete)
        # Not complete: nothing unmatched is taken for outside gq yet (fail closed).
        reading.external, used = split_memory(reading.cards, reading.owners, set(holding),
                                              complete)
        reading.job_memory = job_memory_by_card(reading.cards, reading.owners, set(holding))
        for job in holding.values():  # the peak of each run, for out-of-memory reasons
            if used.get(job.id, 0) > (job.peak_mem or 0):
                self.store.update(job.id, peak_mem=used[job.id])
        if self.loop is None or not observe:
            return  # not serving yet: the shims of running jobs are not adopted
        now = self.clock()
        if self.telemetry.observe(reading.cards, reading.owners, holding, reading.external, now):
            self.police.sample(holding, now, reading.cards, reading.owners,
                               {j: shim.pid for j, shim in self.runs.shims.items()})

    # ---- scheduling ---------------------------------------------------------------------

    def host(self) -> Host:
        cards = tuple(
            Card(g.index, g.memory_total, self.reading.external.get(g.index, 0), g.island,
                 tuple(self.reading.job_memory.get(g.index, {}).items()), g.name)
            for g in self.cards
        )
        return Host(cpus=self.config.host_cpus, ram=self.config.host_ram, cards=cards)

    def local_queue(self) -> list[Job]:
        """Pending and held jobs to run here, as a list (the `--host any` estimate; a pass
        reads the kept queue): not those waiting to be sent to a peer
        (gq/daemon/peers/forwarding.py), which it keeps at reason PeerDown."""
        queue = self.store.queue()
        waiting = {j.id: Reason.PEER_DOWN for j in queue
                   if j.forward is not None and j.state == JobState.PENDING}
        if not waiting:
            return queue
        self.store.set_reasons(waiting)
        return [j for j in queue if j.forward is None]

    def scheduler_input(self, pending: list[Job], running: list[Job]) -> SchedulerInput:
        """The policy's input for these jobs, read afresh (the `--host any` estimate; a pass
        reads the kept queue: Passes.pass_input)."""
        dep_ids = {i for job in pending for ids in job.deps.values() for i in ids}
        outcomes = {
            j.id: outcome for j in self.store.jobs(ids=dep_ids, light=True)
            if (outcome := Outcome.of(j)) is not None
        } if dep_ids else {}
        now = self.clock()
        return self.policy_input(
            pending, running, outcomes, now,
            self.run_times.limits(pending + running, now, self.fingerprints),
            [j for j in pending if j.mem is not None])

    def policy_input(self, pending: list[Job] | PendingQueue, running: list[Job],
                     outcomes: dict[int, Outcome], now: float, predicted: dict[int, float],
                     slices: list[Job]) -> SchedulerInput:
        """The input of a pass: these jobs, with the host, the settings and what was learned
        (`slices`: the waiting jobs with --mem, whose learned utilisation it carries)."""
        return scheduler_input(
            self.config, self.host(), pending, running, outcomes=outcomes, now=now,
            predicted=predicted, usage=self.usage, score_time=self._usage_at,
            util=learned_utils(self.store, [*slices, *running], self.command_keys,
                               self.known_utils),
            windows=admin_windows(self, now),
        )

    # ---- runs ---------------------------------------------------------------------------

    def on_shim_exit(self, job_id: int) -> None:
        """A watched shim exited (Runs let it go): record the run's end, and have a pass."""
        with self.store.relaxed():
            # A failure (a full disk): the next tick tries again.
            self.recovery.settle_or_retry(job_id)
        if job_id not in self.runs.unadopted:
            self.passes.request_pass(freed=True)

    def _cards_freed(self) -> None:  # Freezing's: a helper ended (built before the passes)
        self.passes.request_pass(freed=True)

    def record_run(self, job: Job, ended_at: float, label: str,
                   failure: str | None = None) -> None:
        """What the run cost, for fair share and stats (Ending's and Freezing's record_run);
        what it measured changes what its command is known for (the learned utilisation)."""
        self.store.add_run(job, self.card_weight(job), ended_at, label,
                           self.telemetry.run_record(job), share=self.charge(job),
                           account=self.config.accounts.members.get(job.user), failure=failure)
        self.known_utils.clear()

    def charge(self, job: Job) -> float:
        """What the job costs in fair share while it runs: its dominant share of the host."""
        return dominant_weight(job, self.host())

    def card_weight(self, job: Job) -> float:
        """How many cards the job holds, for fair share: slices count as their share."""
        return cards_held(job, {g.index: g.memory_total for g in self.cards})

    # ---- waiting ------------------------------------------------------------------------

    def notify(self, job_id: int) -> None:
        self.notify_many([job_id])

    def notify_many(self, job_ids: list[int]) -> None:
        self.notifier.jobs_ended(job_ids)  # --notify, --mail, on_finish: gq/daemon/notify.py
        self.wake_waiters(job_ids)

    def wake_waiters(self, job_ids: list[int]) -> None:
        """Answer each `gq wait` on these jobs: they ended, or left for a peer."""
        for job_id in job_ids:
            for fut in self.waiters.pop(job_id, []):
                if not fut.done():
                    fut.set_result(job_id)

    def apply_config(self, new: Config) -> None:
        """New settings (`gq daemon reload`), handed to each part that keeps its own; those
        read once when serving begins stay (gq/daemon/reload.py AT_START)."""
        self.metrics.serve(new.metrics)  # first: a refusal leaves every setting as it was
        new.access = replace(new.access, max_connections=self.config.access.max_connections,
                             max_request=self.config.access.max_request)
        self.config = new
        self.telemetry.config = new.telemetry
        self.telemetry.keep = new.offenders.longest_idle_window
        self.police.reconfigure(new)
        for service in (self.stopping, self.ending, self.freezing, self.preempting,
                        self.starting, self.passes):
            service.config = new
        self.authority.access = new.access
        self.backups.config = new.backup
        self.peers.config = new.peers
        self.passes.request_pass()

    def wait_for_end(self, job_id: int) -> asyncio.Future:
        fut = self.loop.create_future()
        self.waiters.setdefault(job_id, []).append(fut)
        return fut

