"""Find the jobs and processes that waste cards, each with its evidence. Data in, data out:
no clock, no store; the daemon's Policing part (policing.py) feeds it and acts on the result."""

from __future__ import annotations

import pwd
from dataclasses import dataclass, field
from typing import Any

from gq.config.telemetry import OffenderRules, OffendersConfig
from gq.daemon.attribution import Owner
from gq.daemon.stopping import mem_for_peak
from gq.daemon.cpu_usage import CpuWindow
from gq.model import FROZEN_STATES, RUNNING_STATES, Gpu, Job, JobState
from gq.store.samples import JobSample, Window
from gq.units import format_duration, format_size

# A verdict needs measurements for at least this share of what it judges: a card that could
# not be read for most of the window makes no idle job (missing data never counts as idle).
MIN_COVERAGE = 0.5
# ...and at least this share of the samples the window should hold must have been taken (a
# busy daemon samples late; one that was down has no samples to judge by).
MIN_SAMPLED = 0.25


@dataclass
class Candidate:
    """A job or process that looks like an offender in this reading."""

    kind: str
    key: str  # the same offender from one reading to the next
    evidence: str
    suggestion: str
    job_id: int | None = None
    pid: int | None = None
    user: str | None = None
    tier: str | None = None
    gpus: list[int] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobView:
    """A running job with what telemetry knows of it."""

    job: Job
    window: Window | None  # its samples over its tier's idle window; None if not run that long
    peak: int | None  # the most it held on one card this run, bytes
    samples: int  # job-card samples this run
    mem_known: int  # of which with a known memory
    latest: list[JobSample]  # from the last card reading
    # Over its tier's input-bound window (None if not run that long): its cards' samples, and
    # how busy its processes kept the CPUs.
    util_window: Window | None = None
    cpu: CpuWindow | None = None


def job_offences(view: JobView, now: float, interval: float,
                 config: OffendersConfig) -> list[Candidate]:
    job = view.job
    if job.state != JobState.RUNNING or job.gpus == 0 or job.started_at is None:
        return []
    rules = config.rules(str(job.priority))
    ran = now - job.started_at
    base = dict(job_id=job.id, user=job.user, tier=str(job.priority), gpus=list(job.gpu_ids))
    found = []
    starved = input_bound(view, interval, rules)
    if starved is not None:  # more telling than idle, which it would also be, often
        found.append(starved)
    w = view.window
    expected = rules.idle_window / interval * max(1, len(job.gpu_ids)) if interval > 0 else 0
    if starved is None and (w is not None and w.util_mean is not None and w.samples >= MIN_SAMPLED * expected
            and w.util_known >= MIN_COVERAGE * w.samples and w.util_mean < rules.idle_util):
        found.append(Candidate(
            "idle", f"idle:{job.id}",
            f"mean utilisation {w.util_mean:.0f}% over the last "
            f"{format_duration(rules.idle_window)} on GPU {_cards(job.gpu_ids)} (under "
            f"{rules.idle_util:g}%, from {w.util_known} samples)",
            f"give the cards back: `gq cancel {job.id}`, or check it is not stuck",
            figures={"util_mean": round(w.util_mean, 1), "window": rules.idle_window,
                     "threshold": rules.idle_util, "samples": w.util_known}, **base))
    if (job.mem and ran >= rules.over_declared_after and view.peak is not None
            and view.mem_known >= MIN_COVERAGE * view.samples
            and view.peak < rules.over_declared_ratio * job.mem):
        found.append(Candidate(
            "over_declared", f"over_declared:{job.id}",
            f"peak {format_size(view.peak)} of --mem {format_size(job.mem)} per GPU after "
            f"{format_duration(ran)} (under {rules.over_declared_ratio:.0%})",
            f"ask for less next time: --mem {format_size(_rounded_up(view.peak * 1.2))} or "
            "--mem auto",
            figures={"peak_mem": view.peak, "mem": job.mem, "ratio":
                     round(view.peak / job.mem, 3), "threshold": rules.over_declared_ratio},
            **base))
    over = [r for r in view.latest if job.mem and r.mem is not None and r.mem > job.mem]
    if over:
        worst = max(over, key=lambda r: r.mem)
        found.append(Candidate(
            "over_budget", f"over_budget:{job.id}",
            f"holds {format_size(worst.mem)} on GPU {worst.card}, over its --mem "
            f"{format_size(job.mem)}: the jobs sharing the card may run out of memory",
            f"submit it again with room: `gq cancel {job.id}`, then the same command with "
            f"--mem {format_size(mem_for_peak(worst.mem))}; or cap the framework's memory "
            "(PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_MEM_FRACTION); an admin can have gq "
            "do it: [offenders] over_budget = \"requeue\"",
            figures={"mem_used": worst.mem, "mem": job.mem, "gpu": worst.card}, **base))
    return found


def input_bound(view: JobView, interval: float, rules: OffenderRules) -> Candidate | None:
    """A job whose cards are mostly idle while its processes keep the CPUs it asked for busy
    (or its busiest process one whole core): it starves its cards of data."""
    job, w, cpu = view.job, view.util_window, view.cpu
    if w is None or cpu is None or w.util_mean is None or interval <= 0:
        return None
    expected = rules.input_bound_window / interval
    if (w.samples < MIN_SAMPLED * expected * max(1, len(job.gpu_ids))
            or w.util_known < MIN_COVERAGE * w.samples or cpu.samples < MIN_SAMPLED * expected
            or w.util_mean >= rules.input_bound_util):
        return None
    all_busy = cpu.cores >= rules.input_bound_cpu * job.cpus
    one_busy = cpu.busiest >= rules.input_bound_cpu
    if not (all_busy or one_busy):
        return None
    cores = f"{job.cpus} core{'s' * (job.cpus != 1)}"
    evidence = (f"mean utilisation {w.util_mean:.0f}% over the last "
                f"{format_duration(rules.input_bound_window)} on GPU {_cards(job.gpu_ids)} while "
                f"its {cpu.processes} process{'es' * (cpu.processes != 1)} kept {cpu.cores:.1f} "
                f"of its {cores} busy (the busiest {cpu.busiest:.0%} of a core): it starves its "
                "cards of data")
    if cpu.processes <= 2 and one_busy:
        more = f" with --cpus {max(4, 2 * job.cpus)}" if job.cpus < 4 else ""
        suggestion = (f"load data in worker processes: DataLoader(num_workers=N, "
                      f"pin_memory=True, persistent_workers=True), N up to the cores it asks "
                      f"for ({cores} now; submit{more or ' as is'})")
    else:
        suggestion = (f"its loaders use all {cores} it asked for: ask for more (--cpus "
                      f"{2 * job.cpus}) and raise num_workers, or make each batch cheaper to "
                      "load (prefetch_factor, pin_memory=True, pre-decoded data on local disk)")
    return Candidate(
        "input_bound", f"input_bound:{job.id}", evidence, suggestion, job_id=job.id,
        user=job.user, tier=str(job.priority), gpus=list(job.gpu_ids),
        figures={"util_mean": round(w.util_mean, 1), "window": rules.input_bound_window,
                 "threshold": rules.input_bound_util, "cpu_cores": round(cpu.cores, 2),
                 "cpu_busiest": round(cpu.busiest, 2), "cpus": job.cpus,
                 "processes": cpu.processes})


def process_offences(cards: list[Gpu], owners: dict[int, Owner],
                     jobs: dict[int, Job]) -> list[Candidate]:
    """Zombie memory and strays. `jobs`: the jobs the owners name, by id (missing: unknown)."""
    held: dict[int, dict[int, int | None]] = {}  # pid -> card -> bytes
    for card in cards:
        for proc in card.processes or ():
            held.setdefault(proc.pid, {})[card.index] = proc.used_memory
    found = []
    for pid, on_cards in sorted(held.items()):
        owner = owners.get(pid) or Owner(pid, None, alive=True)
        job = jobs.get(owner.job_id) if owner.job_id is not None else None
        if job is not None and owner.by_environment and owner.uid not in (None, job.uid):
            job = None  # a GQ_JOB_ID that is not the job's owner's: not proof of anything
        where = ", ".join(f"{format_size(m) if m is not None else 'an unknown amount'} on GPU "
                          f"{c}" for c, m in sorted(on_cards.items()))
        figures = {"pid": pid, "mem_by_gpu": {str(c): m for c, m in on_cards.items()},
                   "command": owner.command}
        base = dict(pid=pid, gpus=sorted(on_cards), figures=figures,
                    job_id=job.id if job else None, user=job.user if job else _user(owner.uid),
                    tier=str(job.priority) if job else None)
        if not owner.alive:
            whose = f" (of job {job.id})" if job else ""
            found.append(Candidate(
                "zombie", f"zombie:{pid}",
                f"pid {pid}{whose} is gone but still holds {where}",
                "the driver frees it once the process is reaped; if it stays, reset the card "
                f"when no job uses it: nvidia-smi --gpu-reset -i {min(on_cards)}", **base))
        elif job is not None and job.state not in RUNNING_STATES | FROZEN_STATES:
            found.append(Candidate(
                "zombie", f"zombie:{pid}",
                f"pid {pid} of job {job.id}, which is {job.state}, still holds {where}",
                f"kill it: kill {pid} (its job is over)", **base))
        elif job is None:
            who = f"user {base['user']}" if base["user"] else "an unknown user"
            what = f": {owner.command}" if owner.command else ""
            found.append(Candidate(
                "stray", f"stray:{pid}",
                f"pid {pid} ({who}{what}) holds {where} outside gq",
                "run it through the queue: gq submit -- COMMAND", **base))
    return found


def _user(uid: int | None) -> str | None:
    if uid is None:
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _cards(ids: list[int]) -> str:
    return ",".join(map(str, ids)) or "-"


def _rounded_up(size: float, step: int = 256 << 20) -> int:
    return int(-(-size // step) * step)
