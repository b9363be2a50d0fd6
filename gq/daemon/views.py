"""Jobs and cards as the protocol shows them: the stable JSON schema of the design."""

from __future__ import annotations

from typing import Any

from gq.model import DepKind, Gpu, Job, JobState, Reason
from gq.policy.types import Forecast
from gq.triage.advice import mem_hint, tried_bytes
from gq.triage.classify import suggest
from gq.units import format_size, iso

PUBLIC_FIELDS = (
    "id name user host state reason priority gpus mem cpus command cwd submitted_at started_at "
    "ended_at exit_code restarts gpu_ids"
).split()


# A job decided cancelled or timed out whose run may still hold its cards (Job.is_stopping):
# not ended yet. `stop` says what it ends as; the daemon's reason says when its SIGKILL is due
# (gq/daemon/stopping.py's describe).
STOPPING = "stopping"


def shown_state(job: Job) -> str:
    return STOPPING if job.is_stopping else str(job.state)


def job_json(job: Job, largest: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in PUBLIC_FIELDS:
        value = getattr(job, key)
        if key.endswith("_at"):
            value = iso(value)
        elif key == "state":
            value = shown_state(job)
        elif key == "priority":
            value = str(value)
        out[key] = value
    out["stop"] = str(job.state) if job.is_stopping else None
    out["ram"] = job.ram
    out["time_limit"] = job.time_limit
    out["deps"] = {str(k): v for k, v in job.deps.items()}
    # Preemption and memory (docs/preemption.md); grace None: the [preemption] default.
    for key in ("preemptible", "signal", "signal_before", "signal_group", "grace",
                "preemptions", "retry_oom", "oom_retries", "peak_mem"):
        out[key] = getattr(job, key)
    # Governance (docs/governance.md): gpus is an elastic range's minimum, gpus_max its top;
    # len(gpu_ids) is what the run got.
    for key in ("pool", "gpus_max", "interactive"):
        out[key] = getattr(job, key)
    # Freezing (docs/preemption.md#freezing): preempt_mode None is the tier's default.
    for key in ("preempt_mode", "host_mem", "frozen_cards", "freeze_op", "freeze_note"):
        out[key] = getattr(job, key)
    out["frozen_at"] = iso(job.frozen_at)
    out["array"] = None if job.array is None else {
        "id": job.array.id, "index": job.array.index, "size": job.array.size,
        "limit": job.array.limit, "params": job.array.params,
    }
    # `gq run` (docs/run.md): attached to its caller's terminal or pipes; never its key.
    out["attached"] = None if job.attach is None else {
        key: job.attach.get(key, False) for key in ("tty", "no_hangup", "log")}
    out.update(failure_json(job, largest))
    return out


def failure_json(job: Job, largest_card: int | None = None) -> dict[str, Any]:
    """Why the job's last run failed (docs/triage.md): its class, the evidence, what to do,
    the advice checked against what it held and tried and the host's largest card."""
    if job.failure is None:
        return {"failure": None, "failure_evidence": [], "failure_suggestion": None}
    known = max(job.mem or 0, job.peak_mem or 0)
    hint = mem_hint(known, tried_bytes(job.failure_evidence), largest_card)
    return {"failure": job.failure, "failure_evidence": job.failure_evidence,
            "failure_suggestion": suggest(job.failure, job.id,
                                          None if hint is None else format_size(hint),
                                          job.failure_evidence, largest_card, known,
                                          whole_card=job.gpus > 0 and job.mem is None)}


def largest_card(cards: list[Gpu]) -> int | None:
    """The memory of the host's largest card (or MIG instance); None without cards."""
    return max((g.memory_total for g in cards), default=None)


# What `gq ls` shows of a job: read from the store's memory, or its light rows, so that a
# listing of thousands of queued jobs costs no command lines and environments.
BRIEF_FIELDS = (
    "id name user state reason priority gpus mem cpus submitted_at started_at ended_at "
    "exit_code gpu_ids gpus_max interactive"
).split()


def brief_json(job: Job) -> dict[str, Any]:
    out = {key: getattr(job, key) for key in BRIEF_FIELDS}
    for key in ("submitted_at", "started_at", "ended_at"):
        out[key] = iso(out[key])
    out["state"], out["priority"] = shown_state(job), str(job.priority)
    out["stop"] = str(job.state) if job.is_stopping else None
    out["array"] = None if job.array is None else {
        "id": job.array.id, "index": job.array.index, "size": job.array.size,
        "limit": job.array.limit}
    out["failure"] = job.failure
    out["host_mem"], out["frozen_at"] = job.host_mem, iso(job.frozen_at)
    return out


def _waits(job: Job) -> str:
    """'job(s) 12,13 to end and job(s) 14 to start'."""
    ends = [str(i) for kind, ids in job.deps.items() if kind != DepKind.AFTERSTART for i in ids]
    starts = [str(i) for i in job.deps.get(DepKind.AFTERSTART, ())]
    parts = [f"job(s) {','.join(ids)} to {what}" for ids, what in ((ends, "end"),
                                                                   (starts, "start")) if ids]
    return " and ".join(parts)


_REASON_TEXT = {
    Reason.RESOURCES: "it waits for free resources: {need}",
    Reason.PRIORITY: "the scheduler has not reached it yet: jobs ahead of it come first",
    Reason.DEPENDENCY: "it waits for {waits}",
    Reason.DEPENDENCY_NEVER_SATISFIED: (
        "its dependency on job(s) {deps} can no longer be met; cancel it, or release it to run "
        "it anyway"
    ),
    Reason.HELD: "it is held; `gq release {id}` lets it run",
    Reason.QUOTA_LIMIT: "its owner is over a limit of the configuration",
    Reason.PEER_DOWN: "no peer host it may run on can be reached",
    Reason.NO_GPUS: "it asks for GPUs and this host has none",
    Reason.ARRAY_LIMIT: "its array {array} already runs {limit} element(s), as many as its "
                        "limit allows",
}


def describe_need(job: Job) -> str:
    if job.gpus == 0:
        parts = ["no GPU (CPU-only)"]
    elif job.mem is None:
        parts = [f"{job.gpus} whole card{'s' if job.gpus > 1 else ''}"]
    else:
        parts = [f"{job.gpus} card{'s' if job.gpus > 1 else ''} with {format_size(job.mem)} free"]
    parts.append(f"{job.cpus} CPU core{'s' if job.cpus > 1 else ''}")
    if job.ram:
        parts.append(f"{format_size(job.ram)} host memory")
    return ", ".join(parts)


def _limit_setting(shortfall: str) -> str:
    """Where the limit a shortfall names is set: an account's own table, or [limits]."""
    if shortfall.startswith("account "):  # gq/policy/quotas.py: "account NAME may hold ..."
        return f"[accounts.{shortfall.split()[1]}]"
    return "[limits]"


def job_label(job: Job) -> str:
    """How users name a job: `12_3` for element 3 of array 12 (the element's own job id is
    internal), else its id."""
    return f"{job.array.id}_{job.array.index}" if job.array else str(job.id)


def why_sentence(job: Job, shortfall: str | None = None, forecast: Forecast | None = None,
                 max_requeues: int | None = None,
                 start_note: tuple[bool, str] | None = None) -> str:
    """From the last scheduling pass: `shortfall`, what keeps a waiting job; `forecast`, its
    reservation, if it has one. `max_requeues`: of [preemption], to say why a job is held."""
    name = job_label(job)
    if (job.state == JobState.HELD and max_requeues is not None
            and job.preemptions > max_requeues):
        return (f"Job {name} is held: it was preempted {job.preemptions} times, more than "
                f"[preemption] max_requeues = {max_requeues}; `gq release {name}` queues it "
                "again.")
    if job.state == JobState.PENDING or job.state == JobState.HELD:
        template = _REASON_TEXT.get(job.reason or "", "it waits for the next scheduling pass")
        deps = ",".join(str(i) for ids in job.deps.values() for i in ids)
        array, limit = (job.array.id, job.array.limit) if job.array else (None, None)
        text = template.format(need=describe_need(job), deps=deps, id=name, array=array,
                               limit=limit, waits=_waits(job))
        if job.reason == Reason.RESOURCES and shortfall:
            text += f"; short of {shortfall}"
        elif job.reason == Reason.PRIORITY and shortfall:
            text = f"it would fit now, but only in {shortfall}"
        elif job.reason == Reason.QUOTA_LIMIT and shortfall:
            text = f"{shortfall} ({_limit_setting(shortfall)} in config.toml)"
        if forecast is not None and start_note is not None and not start_note[0]:
            cards = ",".join(map(str, forecast.gpu_ids)) or "no GPU"
            text += f". GPU {cards} reserved for it; its start is {start_note[1]}"
        elif forecast is not None:
            cards = ",".join(map(str, forecast.gpu_ids)) or "no GPU"
            basis = (f"{start_note[1]}" if start_note is not None
                     else "if running jobs end by their time limits")
            text += (f". Expected to start by {iso(forecast.start)} (GPU {cards} reserved), "
                     f"{basis}")
        return f"Job {name} is {job.state} ({job.reason}): {text}."
    if job.state in (JobState.RUNNING, JobState.PREEMPTING):
        cards = ",".join(str(i) for i in job.gpu_ids) or "no cards (CPU-only)"
        why = f" ({job.reason})" if job.state == JobState.PREEMPTING and job.reason else ""
        thawing = "; it is being thawed there" if job.freeze_op == "thaw" else ""
        return f"Job {name} is {job.state}{why} on {job.host}, GPU {cards}{thawing}."
    if job.state == JobState.FROZEN:
        return frozen_sentence(job, shortfall)
    ended = f" with exit code {job.exit_code}" if job.exit_code is not None else ""
    why = f" ({job.reason})" if job.reason else ""
    return f"Job {name} ended as {job.state}{ended}{why}."


def frozen_sentence(job: Job, shortfall: str | None = None) -> str:
    """A frozen job: what it holds, and what its thaw waits for."""
    name = job_label(job)
    was = ",".join(str(c.get("index")) for c in job.frozen_cards) or "?"
    size = format_size(job.host_mem or 0)
    why = f" ({job.reason})" if job.reason else ""
    text = (f"Job {name} is frozen{why} on {job.host}: its GPU state ({size}) is in host "
            f"memory and its processes are stopped; it is thawed once GPU {was}, or a card of "
            "its model where the driver can move it, has room")
    if shortfall:
        text += f"; short of {shortfall}"
    return text + "."


def failure_text(job: Job, largest: int | None = None) -> str:
    """`gq why` of a failed job, after its sentence: the class, evidence and what to do."""
    if job.failure is None:
        return ""
    lines = [f"Failure: {job.failure}", *(f"  {line}" for line in job.failure_evidence),
             f"What to do: {failure_json(job, largest)['failure_suggestion']}"]
    return "\n" + "\n".join(lines)


def gpu_json(gpu: Gpu, jobs_on_card: list[dict[str, Any]], external: int | None) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "uuid": gpu.uuid,
        "name": gpu.name,
        "memory_total": gpu.memory_total,
        "memory_used": gpu.memory_used,
        "utilization": gpu.utilization,
        "temperature": gpu.temperature,
        "power_w": gpu.power_w,
        "simulated": gpu.simulated,
        "parent_uuid": gpu.parent_uuid,
        "island": gpu.island,
        "jobs": jobs_on_card,
        "external_used": external,
        # None: the card's process list could not be read (unknown, not empty).
        "processes": None if gpu.processes is None else [
            {"pid": p.pid, "used_memory": p.used_memory, "utilization": p.utilization}
            for p in gpu.processes],
    }
