"""Starting a job's run: the run recorded, then its shim asked of the spawner (gq/daemon/spawner.py,
through the supervisor), whose answer comes later; the shim is then watched (gq/daemon/runs.py),
or the job is told why it could not start."""

from __future__ import annotations

import asyncio
import logging
import secrets
import signal
from pathlib import Path
from typing import Callable, Protocol

from gq.config import Config
from gq.daemon.arrays import set_array_env
from gq.daemon.slurm_env import sbatch_files, set_slurm_env, signals_steps
from gq.daemon.ending import Ending
from gq.daemon.identity import identity_of, prepare_user_dir
from gq.daemon.layout import Layout
from gq.daemon.reading import Reading
from gq.daemon.runs import Runs
from gq.daemon.shim import ShimSpec
from gq.daemon.stopping import STOP_REQUESTS, Stopping
from gq.daemon.supervisor import RUN_TOKEN, Shim, SpawnError, SpawnUnknown
from gq.gpu.base import CardBackend
from gq.model import Job, JobState
from gq.store import Store

log = logging.getLogger("gq.daemon")


class Spawning(Protocol):
    """What starting asks of the supervisor (gq/daemon/supervisor.py): a shim now (`spawn`,
    before the event loop runs) or later (`request`, answered on `reader_fd`, which changes
    with `generation`), and a stop asked of one started while its job was being stopped."""

    generation: int
    run_root: Path  # where the runs' lock files are

    @property
    def reader_fd(self) -> int | None: ...

    def spawn(self, spec: ShimSpec) -> Shim: ...

    def request(self, spec: ShimSpec) -> None: ...

    def answer(self) -> tuple[int, Shim | SpawnError] | None: ...

    def take_lost(self) -> list[int]: ...

    def cgroup_of(self, job_id: int) -> str | None: ...

    def ask(self, shim: Shim, request: signal.Signals) -> None: ...


class Starting:
    """Starts the runs a pass decided: records each (`store`), builds its shim's spec (the
    environment of its cards in `reading` and of the card `backend`, its files under `layout`,
    its grace from `stopping`, `config`'s kill wait; replaced on reload) and asks `supervisor`
    for the shim; watches it through `runs` once the spawner answers. A run that could not
    start ends through `ending` (stopped meanwhile) or fails, its waiters told (`notify`)."""

    def __init__(self, store: Store, config: Config, layout: Layout, backend: CardBackend,
                 supervisor: Spawning, runs: Runs, reading: Reading, stopping: Stopping,
                 ending: Ending, notify: Callable[[int], None], clock: Callable[[], float]):
        self.store, self.config, self.layout, self.backend = store, config, layout, backend
        self.supervisor, self.runs, self.reading = supervisor, runs, reading
        self.stopping, self.ending, self.notify, self.clock = stopping, ending, notify, clock
        self.loop: asyncio.AbstractEventLoop | None = None
        self._spawner_fd: int | None = None  # the spawner's socket, read for its answers
        self._spawner_read = 0  # the spawner (Supervisor.generation) whose answers are read

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def close(self) -> None:
        if self.loop and self._spawner_fd is not None:
            self.loop.remove_reader(self._spawner_fd)

    def job_env(self, job: Job, gpu_ids: list[int]) -> dict[str, str]:
        cards = {g.index: g for g in self.reading.cards}
        env = dict(job.env)
        env.update(
            CUDA_VISIBLE_DEVICES=",".join(cards[i].visible_id for i in gpu_ids if i in cards),
            CUDA_DEVICE_ORDER="PCI_BUS_ID",
            GQ_JOB_ID=str(job.id),
            GQ_RESTART_COUNT=str(job.restarts),
            GQ_CHECKPOINT_DIR=self.layout.job_files(job.id, job.user)[2],
            GQ_NUM_GPUS=str(len(gpu_ids)),  # what an elastic job got: torchrun --nproc_per_node
        )
        if gpu_ids:
            limit = job.mem or min(cards[i].memory_total for i in gpu_ids if i in cards)
            env["GQ_GPU_MEM"] = str(limit)
        env.update(self.backend.job_env())
        set_array_env(env, job)
        set_slurm_env(env, job, gpu_ids)
        return env

    def start(self, job: Job, gpu_ids: list[int]) -> None:
        now = self.clock()
        # Durable before the fork: a daemon that dies in between finds the job running
        # with no shim, and requeues it, so it never runs twice.
        self.store.transition(
            job.id, JobState.RUNNING, now, started_at=now, gpu_ids=gpu_ids, holding=1,
            ended_at=None, exit_code=None, peak_mem=None,
        )
        try:
            spec = self.shim_spec(job, gpu_ids)
            if self.loop is not None:  # the spawner answers later: on_spawned
                self.supervisor.request(spec)
                self._follow_spawner()
                return
            shim = self.supervisor.spawn(spec)
        except SpawnUnknown as e:
            self._spawn_unknown(job.id, e)
            return
        except OSError as e:  # no shim, or (system daemon) no account or directory for it
            self._not_started(job.id, e)
            return
        self.runs.watch(shim)

    def _not_started(self, job_id: int, e: OSError) -> None:
        log.error("job %s: cannot start its shim: %s", job_id, e)
        job = self.store.light_jobs([job_id]).get(job_id)
        if job is not None and job.state != JobState.RUNNING:  # stopped meanwhile: as asked
            self.ending.finish(job_id, None, never_started=True)
            return
        now = self.clock()
        self.store.transition(job_id, JobState.FAILED, now, reason=f"could not start: {e}",
                              ended_at=now, holding=0)
        self.notify(job_id)

    def _spawn_unknown(self, job_id: int, e: Exception) -> None:
        log.error("job %s: %s; the next tick settles it", job_id, e)
        self.runs.later(job_id)

    def _follow_spawner(self) -> None:
        """Read the spawner's answers as they come (its socket changes when it is started
        again), and hand the jobs a dead spawner was asked for to the next tick."""
        if self._spawner_read != self.supervisor.generation:
            if self._spawner_fd is not None:
                self.loop.remove_reader(self._spawner_fd)
            self._spawner_fd = self.supervisor.reader_fd
            self._spawner_read = self.supervisor.generation
            if self._spawner_fd is not None:
                self.loop.add_reader(self._spawner_fd, self.on_spawned)
        for job_id in self.supervisor.take_lost():
            self._spawn_unknown(job_id, SpawnUnknown("the shim spawner died while starting "
                                                     "its shim"))

    def on_spawned(self) -> None:
        """The spawner answered: watch the shim it started, or record why it could not."""
        answer = self.supervisor.answer()
        if answer is not None:
            job_id, shim = answer
            with self.store.relaxed():
                if isinstance(shim, SpawnUnknown):
                    self._spawn_unknown(job_id, shim)
                elif isinstance(shim, OSError):
                    self._not_started(job_id, shim)
                else:
                    self.runs.watch(shim)
                    job = self.store.light_jobs([job_id]).get(job_id)
                    if job is not None and job.state in STOP_REQUESTS:
                        # Stopped while its shim was being started (stop() found none to ask).
                        self.supervisor.ask(shim, STOP_REQUESTS[job.state])
        else:  # the spawner is gone: forget its socket
            self._spawner_read = -1
        self._follow_spawner()

    def shim_spec(self, job: Job, gpu_ids: list[int]) -> ShimSpec:
        env = self.job_env(job, gpu_ids)
        run_as: dict = {"uid": None, "gid": None, "groups": None}
        if self.layout.system:  # the job runs as its submitter, in their own directory
            who = identity_of(job.uid)
            prepare_user_dir(self.layout, who)
            env.update(who.env())
            run_as = who.credentials()
        token = secrets.token_hex(16)
        env[RUN_TOKEN] = token
        warn_after = None
        if job.time_limit and job.signal_before:
            warn_after = job.time_limit - job.signal_before
        stdout, stderr, checkpoint_dir = self.layout.job_files(job.id, job.user)
        named = sbatch_files(job)  # #SBATCH -o/-e: opened by the job's process, as its user
        if named is not None:
            stdout, stderr = named
        return ShimSpec(
            job_id=job.id,
            run=job.restarts,
            command=job.command,
            cwd=job.cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            checkpoint_dir=checkpoint_dir,
            run_dir=self.supervisor.run_dir,
            kill_wait=self.config.kill_wait,
            start_timeout=self.config.start_timeout,
            cgroup=self.supervisor.cgroup_of(job.id),
            max_procs=self.config.max_procs_per_job,
            grace=self.stopping.grace_of(job),
            checkpoint_signal=int(signal.Signals[job.signal]),
            signal_group=job.signal_group,
            signal_steps=signals_steps(job),
            warn_after=warn_after,
            umask=job.umask,
            token=token,
            # Its empty logs may become another job's (shim.keep_empty): not when a
            # notification reads them after the end, nor as root.
            recyclable=(not self.layout.system and job.notify is None and named is None
                        and not self.config.notify.on_finish and job.attach is None),
            attach=job.attach,
            **run_as,
        )
