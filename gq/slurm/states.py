"""Slurm's job states and reasons as gq's states and reasons, in words. Pure: from literals."""

from __future__ import annotations

import calendar
import signal
import time

# Slurm state -> gq state (docs/slurm.md). A pending job's reason decides pending or held.
STATES = {
    "PENDING": "pending", "REQUEUED": "pending", "REQUEUE_FED": "pending",
    "REQUEUE_HOLD": "held", "RESV_DEL_HOLD": "held",
    "CONFIGURING": "running", "RUNNING": "running", "COMPLETING": "running",
    "RESIZING": "running", "STAGE_OUT": "running", "SUSPENDED": "running",
    "STOPPED": "running", "SIGNALING": "preempting", "PREEMPTED": "cancelled",
    "COMPLETED": "completed", "FAILED": "failed", "SPECIAL_EXIT": "failed",
    "CANCELLED": "cancelled", "REVOKED": "cancelled", "DEADLINE": "timeout",
    "TIMEOUT": "timeout", "OUT_OF_MEMORY": "oom", "NODE_FAIL": "lost", "BOOT_FAIL": "lost",
}
ENDED = {"completed", "failed", "cancelled", "timeout", "oom", "lost"}

# Slurm reasons that have a word in gq's vocabulary (design.md: Slurm's, where it fits).
REASONS = {
    "Priority": "Priority", "Resources": "Resources", "Dependency": "Dependency",
    "DependencyNeverSatisfied": "DependencyNeverSatisfied", "JobHeldUser": "Held",
    "JobHeldAdmin": "Held", "BeginTime": "BeginTime",
}
QUOTA_PREFIXES = ("QOS", "Assoc", "AssocGrp", "AssocMax", "MaxCpuPerAccount", "Partition")

# What a reason means, for `gq why` (the words Slurm's squeue(1) gives, shortened).
WORDS = {
    "Priority": "other jobs of higher priority are queued ahead of it in Slurm",
    "Resources": "it waits in Slurm for the resources it asks for to become free",
    "Dependency": "it waits for the jobs it depends on to end",
    "DependencyNeverSatisfied": "a job it depends on ended in a way that can never satisfy "
                                "the dependency: cancel it",
    "JobHeldUser": "held by its owner (gq release to let it run)",
    "JobHeldAdmin": "held by a Slurm administrator",
    "BeginTime": "its earliest start time has not come yet",
    "ReqNodeNotAvail": "a node it needs is not available (down, drained or reserved)",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is inactive",
    "PartitionNodeLimit": "it asks for more nodes than its partition allows",
    "PartitionTimeLimit": "its --time is longer than its partition allows",
    "QOSMaxGRESPerUser": "you hold as many GPUs as your QOS allows",
    "QOSMaxJobsPerUserLimit": "you run as many jobs as your QOS allows",
    "AssocGrpGRES": "your account holds as many GPUs as its limit allows",
    "AssocMaxJobsLimit": "your account runs as many jobs as its limit allows",
    "InvalidQOS": "its QOS is not valid for the account: cancel it and fix [--qos]",
    "InvalidAccount": "its account is not valid: cancel it",
    "launch failed requeued held": "Slurm could not start it on a node; it requeued it held",
    "NonZeroExitCode": "it exited with a non-zero code",
    "TimeLimit": "it ran out of its time limit",
    "NodeDown": "a node it ran on went down",
    "BadConstraints": "its request can never be satisfied by the nodes of the partition",
    "Reservation": "it waits for its advance reservation",
    "Licenses": "it waits for a licence",
}


def gq_state(slurm_state: str, reason: str) -> str:
    """'PENDING', 'JobHeldUser' -> 'held'. An unknown state keeps its own name, lower-case."""
    base = slurm_state.split()[0].split("+")[0].upper() if slurm_state else ""
    state = STATES.get(base, base.lower() or "lost")
    if state == "pending" and reason in ("JobHeldUser", "JobHeldAdmin"):
        return "held"
    return state


def gq_reason(state: str, reason: str) -> str | None:
    """The reason gq shows: its own word where one fits, else Slurm's; None when running."""
    reason = (reason or "").strip()
    if state in ("running", "completed") or reason in ("", "None"):
        return "Priority" if state == "pending" else None
    if reason in REASONS:
        return REASONS[reason]
    if state in ("pending", "held") and reason.startswith(QUOTA_PREFIXES) and "Limit" in reason:
        return "QuotaLimit"
    return reason


def in_words(state: str, reason: str, expected_start: str | None = None) -> str:
    """`gq why` of a Slurm job: what its state and Slurm's reason mean."""
    meaning = WORDS.get(reason) or (f"Slurm says {reason!r} (see squeue(1), JOB REASON CODES)"
                                   if reason and reason != "None" else "")
    if state in ("pending", "held"):
        line = f"{state} in Slurm: {meaning or 'waiting to be scheduled'}"
        return line + (f"; Slurm expects it to start at {expected_start}"
                       if expected_start else "")
    if state in ENDED:
        return f"{state} in Slurm" + (f": {meaning}" if meaning and state != "completed" else "")
    return f"{state} in Slurm" + (f" ({meaning})" if meaning else "")


def exit_code(status: str | int | None) -> int | None:
    """squeue's exit_code is a wait status (768 = exit 3); a signal gives 128 + its number.
    sacct and scontrol write 'CODE:SIGNAL'."""
    if status in (None, "", "N/A"):
        return None
    text = str(status)
    if ":" in text:
        code, _, sig = text.partition(":")
        return 128 + int(sig) if int(sig or 0) else int(code)
    value = int(text)
    if value & 0x7F:
        return 128 + (value & 0x7F)
    return (value >> 8) & 0xFF


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def utc(text: str) -> float | None:
    """Slurm's time (printed in UTC: the backend runs it with TZ=UTC) -> epoch seconds."""
    if not text or text in ("N/A", "NONE", "Unknown", "None"):
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None
