"""`gq update`: change a waiting job's request (--mem, --gpus, --cpus, --ram, --time, --name,
--priority) with the checks of submit, or a running job's --time (lower it; raise it: admins)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gq.daemon import arrays
from gq.daemon.authz import require_owner
from gq.daemon.context import Context
from gq.daemon.lookup import host_limits, load_jobs
from gq.daemon.startable import refuse_never
from gq.daemon.submission import Caller, check_name
from gq.job_request import HostLimits, _opt_positive, check_resources, request_mem
from gq.model import WAITING_STATES, Job, JobState, Tier
from gq.protocol import BadInput
from gq.units import format_duration, format_size

FIELDS = ("priority", "gpus", "mem", "cpus", "ram", "time_limit", "name")
FLAGS = {"priority": "-p", "gpus": "--gpus", "mem": "--mem", "cpus": "--cpus", "ram": "--ram",
         "time_limit": "--time", "name": "-n"}


def requested_changes(args: dict[str, Any]) -> dict[str, Any]:
    """The fields to change, each checked on its own as submit checks it."""
    changes = {k: args[k] for k in FIELDS if args.get(k) is not None}
    if not changes:
        raise BadInput("nothing to change: give --mem, --gpus, --cpus, --ram, --time, -n or -p")
    if "priority" in changes:
        try:
            changes["priority"] = Tier(str(changes["priority"]).lower())
        except ValueError:
            raise BadInput(f"--priority {changes['priority']!r}: expected high, normal or low"
                           ) from None
    if "mem" in changes:
        changes["mem"] = request_mem(changes["mem"])
    for key in ("ram", "time_limit"):
        if key in changes:
            changes[key] = _opt_positive(changes, key, FLAGS[key])
    if "name" in changes:
        changes["name"] = check_name(changes["name"])
    return changes


def check_against(job: Job, changes: dict[str, Any], host: HostLimits) -> None:
    """Submit's checks of the job's request as it would be after the changes."""
    if not {"gpus", "mem", "cpus", "ram"} & changes.keys():
        return
    merged = {"gpus": changes.get("gpus", job.gpus), "cpus": changes.get("cpus", job.cpus),
              "mem": changes.get("mem", job.mem)}
    if merged["mem"] is None:
        merged.pop("mem")
    try:
        check_resources(merged, host)
        ram = changes.get("ram")
        if ram is not None and host.ram is not None and ram > host.ram:
            raise BadInput(f"--ram {format_size(ram)}: {host.name} has "
                           f"{format_size(host.ram)}")
        if job.gpus_max is not None and "gpus" in changes:
            raise BadInput(f"--gpus: job {job.id} asks for a range ({job.gpus}-"
                           f"{job.gpus_max}); cancel it and submit it again to change it")
    except BadInput as e:
        raise BadInput(f"job {job.id}: {e}") from None


def refusal(job: Job, changes: dict[str, Any], admin: bool) -> str | None:
    """Why this job cannot take these changes, or None."""
    if job.state in WAITING_STATES:
        return None
    if job.state != JobState.RUNNING:
        return f"is {job.state}; only a pending or held job's request can change"
    if set(changes) != {"time_limit"}:
        others = ", ".join(FLAGS[k] for k in changes if k != "time_limit")
        return f"is running; only --time can change for a running job, not {others}"
    new, old = changes["time_limit"], job.time_limit
    if not admin and (old is None or new > old):
        was = "no limit" if old is None else f"--time {format_duration(old)}"
        return (f"is running with {was}; you may lower its --time, raising it is for an "
                "admin (as in Slurm)")
    return None


def _never(daemon: Context, job: Job, changes: dict[str, Any]) -> str | None:
    """A waiting job that the change would leave unable ever to start: refused, as submit
    refuses such a job (gq/daemon/startable.py)."""

    if job.state not in WAITING_STATES or not {"priority", "gpus"} & changes.keys():
        return None
    never = refuse_never(daemon, replace(job, **{k: v for k, v in changes.items()
                                                 if k in ("priority", "gpus")}))
    if never is None:
        return None
    tier = changes.get("priority")
    return f"not {tier}: {never}" if tier is not None else never


def describe(job: Job, changes: dict[str, Any]) -> str:
    """'--mem 20G -> 30G, --time 1h00m -> 30m00s', for the answer and the job's history."""
    shown = {"mem": lambda v: "whole cards" if v is None else format_size(v),
             "ram": format_size, "time_limit": format_duration}
    parts = []
    for key, new in changes.items():
        old = getattr(job, key)
        fmt = shown.get(key, str)
        parts.append(f"{FLAGS[key]} {fmt(old)} -> {fmt(new)}")
    return ", ".join(parts)


def apply(store, job: Job, changes: dict[str, Any], caller: Caller, now: float,
          preemptible_tiers: frozenset[str]) -> str:
    fields = {k: (str(v) if k == "priority" else v) for k, v in changes.items()
              if getattr(job, k) != v}
    if not fields:
        return "unchanged"
    tier = changes.get("priority")
    text = describe(job, {k: changes[k] for k in fields})
    if tier is not None and "priority" in fields:
        # A job that took its tier's default preemptibility takes the new tier's; one
        # submitted with the other choice (--preemptible, --no-preemptible) keeps it.
        now_default = str(tier) in preemptible_tiers
        if job.preemptible == (str(job.priority) in preemptible_tiers) != now_default:
            fields["preemptible"] = now_default
            text += f", {'' if now_default else 'not '}preemptible"
    store.update(job.id, **fields)
    store.note(job.id, now, f"updated by {caller.user}: {text}")
    return text


def op_update(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    """`gq update ID... [--mem ...] [--time ...]`: all or nothing; a job that cannot take the
    change (running, ended) is reported and left as it is."""

    changes = requested_changes(args)
    from_array: set[int] = set()
    jobs = load_jobs(daemon, caller, args.get("ids"), from_array)
    require_owner(daemon, caller, jobs, "update")
    host = host_limits(daemon)
    admin = daemon.authority.is_admin(caller)
    verdicts = [(job, refusal(job, changes, admin) or _never(daemon, job, changes))
                for job in jobs]
    for job, refused in verdicts:
        if refused is None:
            check_against(job, changes, host)
    results = []
    for job, refused in verdicts:
        if refused is not None:
            results.append(arrays.result(job, False, refused, from_array))
            continue
        text = apply(daemon.store, job, changes, caller, daemon.clock(), host.preemptible_tiers)
        daemon.fingerprints.known.pop(job.id, None)  # --gpus is part of its fingerprint
        results.append(arrays.result(job, True, text, from_array))
    daemon.passes.request_pass()
    return results
