"""Longer views for people: one job in full, the cards, a Slurm peer's GPU nodes."""

from __future__ import annotations

import os
import shlex
from typing import Any

from gq.cli.output import escape_controls, table
from gq.wording.jobs import gpus_text, percent
from gq.units import format_duration, format_size, iso


def _prediction_text(p: dict[str, Any] | None) -> str:
    """'~42m00s, like your last 2 runs of train.py', or 'unknown: ...'; '-' once ended."""
    if p is None:
        return "-"
    return p["basis"] if p["seconds"] is None else f"~{format_duration(p['seconds'])}, {p['basis']}"


def _kept(path: str, job: dict[str, Any]) -> str:
    """A log or checkpoint directory that a finished run left empty may have been given to a
    later job's run (docs/daemon.md, How a job runs): say so rather than name what is not
    there. (A peer's job's path is on the peer, another user's may be closed to us: neither
    is looked at.)"""
    if (job.get("ended_at") and isinstance(job["id"], int)
            and os.access(os.path.dirname(path), os.X_OK) and not os.path.lexists(path)):
        return f"{path} (empty, not kept)"
    return path


def print_job(job: dict[str, Any]) -> None:
    mem = format_size(job["mem"]) + " per GPU" if job["mem"] else (
        "whole cards" if job["gpus"] else "-")
    fields = [
        ("job", f"{_label(job)} ({job['name']})"),
        ("state", job["state"] + (f" ({job['reason']})" if job["reason"] else "")),
        ("why", job["why"]),
        ("user", job["user"]),
        ("host", job["host"]),
        ("priority", job["priority"] + _score_text(job.get("score"))),
        ("gpus", ", ".join([gpus_text(job), mem] + [f"pool {job['pool']}"] * bool(job.get("pool"))
                           + ["interactive"] * bool(job.get("interactive")))),
        ("account", job.get("account") or "-"),
        ("gpu ids", ",".join(map(str, job["gpu_ids"])) or "-"),
        ("cpus", str(job["cpus"])),
        ("ram", format_size(job["ram"]) if job["ram"] else "-"),
        ("time limit", format_duration(job["time_limit"]) if job["time_limit"] else "-"),
        ("run time", _prediction_text(job.get("prediction"))),
        ("preemption", _preemption_text(job)),
        ("freezing", _freezing_text(job)),
        ("peak gpu mem", format_size(job["peak_mem"]) if job.get("peak_mem") else "-"),
        ("gpu usage", _usage_text(job.get("usage"))),
        ("command", shlex.join(job["command"])),
        ("cwd", job["cwd"]),
        ("depends on", ", ".join(f"{k} {','.join(map(str, v))}" for k, v in job["deps"].items())
         or "-"),
        ("submitted", job["submitted_at"]),
        ("started", job["started_at"] or "-"),
        ("ended", job["ended_at"] or "-"),
        ("exit code", "-" if job["exit_code"] is None else str(job["exit_code"])),
        *_failure_fields(job),
        ("restarts", str(job["restarts"])),
        ("stdout", _kept(job["stdout"], job)),
        ("stderr", _kept(job["stderr"], job)),
        ("checkpoints", _kept(job["checkpoint_dir"], job)),
    ]
    if job.get("array"):
        fields.insert(1, ("array", _array_text(job["array"])))
    if job.get("notify"):
        notify = job["notify"]
        fields.append(("notify", "; ".join(x for x in (
            notify["command"] and f"runs {notify['command']!r}",
            notify["mail"] and f"mails {notify['mail']}") if x)))
    width = max(len(k) for k, _ in fields)
    # A line a field: whatever a user's text holds is escaped, a newline too (gq/escapes.py).
    for key, value in fields:
        _line(f"{key.rjust(width)}  {value}")
    if job.get("processes"):  # what it really runs on its cards, as nvitop lists it
        print("\nprocesses on its cards:")
        for p in job["processes"]:
            mem = "N/A" if p["used_memory"] is None else format_size(p["used_memory"])
            _line(f"  pid {p['pid']}  GPU {p['gpu']}  {mem}  {p['command']}")
    print("\nhistory:")
    for e in job["events"]:
        change = e["new_state"] if e["old_state"] in (None, e["new_state"]) else (
            f"{e['old_state']} -> {e['new_state']}")
        extra = "; ".join(x for x in (e["reason"], e["detail"]) if x)
        _line(f"  {iso(e['at'])}  {change}" + (f"  ({extra})" if extra else ""))


def _line(line: str) -> None:
    print(escape_controls(line))


def _failure_fields(job: dict[str, Any]) -> list[tuple[str, str]]:
    """Why it failed (docs/triage.md): the class, each line of evidence, what to do."""
    if not job.get("failure"):
        return []
    evidence = job["failure_evidence"] or ["-"]
    return [("failure", job["failure"]), ("evidence", evidence[0]),
            *(("", line) for line in evidence[1:]),
            ("what to do", job["failure_suggestion"])]


def _label(job: dict[str, Any]) -> str:
    array = job.get("array")
    return f"{array['id']}_{array['index']}" if array else str(job["id"])


def _preemption_text(job: dict[str, Any]) -> str:
    """Whether it may be preempted, and how it is asked to save its work."""
    where = "its process group" if job["signal_group"] else "its main process"
    grace = "the configured grace" if job["grace"] is None else format_duration(job["grace"])
    kill = f"SIGKILL {grace} later"
    if job.get("slurm"):  # Slurm's KillWait (GraceTime on preemption) decides
        kill = "SIGKILL when Slurm's KillWait has passed"
    text = (f"{'preemptible' if job['preemptible'] else 'not preemptible'}; {job['signal']} to "
            f"{where}, {kill}")
    if job["signal_before"]:
        text += f"; also {format_duration(job['signal_before'])} before the time limit"
    if job["preemptions"]:
        text += f"; preempted {job['preemptions']} time{'s' * (job['preemptions'] != 1)}"
    if job["retry_oom"]:
        text += f"; out-of-memory retries {job['oom_retries']} of {job['retry_oom']}"
    return text
def _freezing_text(job: dict[str, Any]) -> str:
    """Its preempt mode, and whether it can be frozen now, or what it holds while frozen."""
    view = job.get("freeze") or {}
    if not view:
        return "-"
    text = f"{view['mode']} ({view['from']})"
    if job["state"] == "frozen":
        cards = ",".join(str(c.get("index")) for c in job.get("frozen_cards") or ())
        text += (f"; frozen since {job['frozen_at']}, {format_size(job['host_mem'] or 0)} in "
                 f"host memory, from GPU {cards}")
    elif view.get("can"):
        text += f"; can be frozen now ({format_size(view['host_mem'])} to host memory)"
    elif view.get("why"):
        text += f"; cannot be frozen now: {view['why']}"
    if job.get("freeze_note"):
        text += f"; last: {job['freeze_note']}"
    return text


def _array_text(array: dict) -> str:
    limit = f", at most {array['limit']} at once" if array["limit"] else ""
    params = " ".join(f"{k}={v}" for k, v in array["params"].items())
    return (f"element {array['index']} ({array['id']}_{array['index']}) of array {array['id']}"
            f" ({array['size']} elements{limit})" + (f"; {params}" if params else ""))


def _usage_text(usage: dict | None) -> str:
    """What its current or last run used of each card, from telemetry."""
    if not usage or not (usage["peak_mem_by_gpu"] or usage["util_mean"] is not None):
        return "-"
    peaks = ", ".join(f"{format_size(v)} on GPU {k}" for k, v in usage["peak_mem_by_gpu"].items())
    util = "unknown" if usage["util_mean"] is None else f"{usage['util_mean']:.0f}%"
    return f"{usage['run']} run: peak {peaks or 'unknown'}; mean utilisation {util}"


def _score_text(score: dict | None) -> str:
    """How the job ranks within its tier: the score and the parts it is made of."""
    if not score:
        return ""
    w = score["weights"]
    return (f"; within the tier, score {score['total']:.3f} = {w['fairshare']:g} x fair share "
            f"{score['fairshare']:.3f} + {w['age']:g} x age {score['age']:.3f} + {w['short']:g} "
            f"x length {score['short']:.3f} (the user used "
            f"{score['usage_card_hours']:.1f} card-hours lately, halving weekly)")


def print_gpus(cards: list[dict[str, Any]]) -> None:
    if not cards:
        print("no GPUs on this host (no NVIDIA driver found and GQ_SIM_GPUS is not set)")
        return
    rows = []
    for c in cards:
        used = "N/A" if c["memory_used"] is None else format_size(c["memory_used"])
        jobs = " ".join(
            f"{j['id'] or '-'}:{j['user'] or 'other'}:"
            f"{'whole' if j['whole_card'] else format_size(j['mem'])}"
            + (f"(holds {format_size(j['used'])}!)" if not j["whole_card"] and j.get("used")
               and j["used"] > j["mem"] else "")
            for j in c["jobs"]
        )
        ext = c["external_used"]
        other = "N/A" if ext is None else (format_size(ext) if ext else "-")
        name = c["name"] + (" (sim)" if c["simulated"] else "")
        rows.append([str(c["index"]), name, f"{used}/{format_size(c['memory_total'])}",
                     percent(c["utilization"]), jobs or "-", other])
    headers = ["GPU", "NAME", "MEMORY", "UTIL", "JOBS (id:user:mem)", "OUTSIDE GQ"]
    if any(c.get("pool") for c in cards):  # a lab with [pools.NAME]: each card's pool
        headers.insert(1, "POOL")
        for row, c in zip(rows, cards):
            row.insert(1, c.get("pool") or "-")
    print(table(headers, rows))
    print(escape_controls(_freeze_summary(cards)))


def _freeze_summary(cards: list[dict[str, Any]]) -> str:
    """Whether jobs on each card can be frozen to host memory, and why not, in a line or two."""
    views = [(c["index"], c.get("freeze")) for c in cards if c.get("freeze")]
    if not views:
        return "freezing: not known (a daemon from before freezing)"
    driver = views[0][1]["driver"]
    can = [str(i) for i, v in views if v["can"]]
    why: dict[str, list[str]] = {}
    for i, v in views:
        if not v["can"]:
            why.setdefault(v["why"], []).append(str(i))
    parts = [f"GPU {','.join(can)} can" + (" (a thaw may move a job to a card of its model)"
                                           if views[0][1]["remap"] else "")] if can else []
    parts += [f"GPU {','.join(ids)} cannot: {text}" for text, ids in why.items()]
    return f"freezing{f' (driver {driver})' if driver else ''}: " + "; ".join(parts)


def print_slurm_nodes(nodes: list[dict[str, Any]]) -> None:
    """A Slurm peer's part of `gq gpus`: its GPU nodes as sinfo reports them (Slurm places
    jobs on the cards of a node itself)."""
    if not nodes:
        print("no GPU nodes (sinfo reports no gpu GRES in the peer's partition)")
        return
    rows = [[n["node"], n["state"], ",".join(n["partitions"]), f"{n['gpus_used']}/{n['gpus']}",
             ",".join(n["gpu_types"]) or "-",
             "N/A" if n["cpus"] is None else f"{n['cpus_used']}/{n['cpus']}"] for n in nodes]
    print(table(["NODE", "STATE", "PARTITIONS", "GPUS USED", "GPU TYPE", "CPUS USED"], rows))
