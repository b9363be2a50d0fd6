"""Advice checked against what the job tried and the host, before it is printed: a GPU OOM
that asked for more than the largest card gets the truth, not a --mem that cannot help; each
cause (gq/triage/rules.py) gets the words that fit it."""

from __future__ import annotations

import re

from gq.triage.rules import (
    COLLECTIVE_TIMEOUT, CUDA_ERROR, DATA_ERROR, DISK_FULL, DRIVER, GPU_OOM, HOST_OOM,
    IMPORT_ENV, LOST_CWD, NCCL, OOM_KILLER, PROCESS_MEMORY, QUOTA, SEGFAULT, SHM, TIME_LIMIT,
    TIMEOUT_SIGNAL, UNKNOWN, cause_of,
)
from gq.units import format_size

_SIZE = r"(\d+(?:\.\d+)?) ?([KMGT]i?B)"
# torch's "Tried to allocate 90.00 GiB" (also MiB, GiB, KiB), as its OOM message words it.
_TRIED = re.compile(r"Tried to allocate " + _SIZE, re.I)
# What it already held: "this process has 70.1 GiB memory in use", "70.00 GiB already allocated".
_HELD = re.compile(r"this process has " + _SIZE + r" memory in use|" + _SIZE
                   + r" already allocated", re.I)
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
WHOLE_CARD_FULL = 0.95  # a whole-card job whose peak reached this share of the card filled it


def _sizes(pattern: re.Pattern, lines: list[str]) -> list[int]:
    out = []
    for line in lines:
        for m in pattern.finditer(line):
            number, unit = next((m[i], m[i + 1]) for i in range(1, len(m.groups()), 2) if m[i])
            out.append(int(float(number) * _UNITS[unit[0].lower()]))
    return out


def tried_bytes(lines: list[str]) -> int | None:
    """The largest allocation the evidence says the job tried, in bytes; None if none says."""
    return max(_sizes(_TRIED, lines), default=None)


def held_bytes(lines: list[str]) -> int:
    """What the evidence says the job already held on the card when it failed (0: unsaid)."""
    return max(_sizes(_HELD, lines), default=0)


def needs_larger_card(tried: int | None, largest_card: int | None, held: int = 0,
                      whole_card: bool = False) -> str | None:
    """The truth for a job that no card of this host can hold: one allocation larger than the
    largest card, what it held plus what it tried more than a card, or a whole card (of the
    largest size) filled; else None."""
    if largest_card is None:
        return None
    if tried is not None and tried > largest_card:
        said = f"it tried to allocate {format_size(tried)} at once"
    elif tried is not None and held + tried > largest_card:
        said = (f"it held {format_size(held)} and tried to allocate {format_size(tried)} "
                f"more, {format_size(held + tried)} in all")
    elif whole_card and held >= WHOLE_CARD_FULL * largest_card:
        said = f"it filled a whole card ({format_size(held)})"
    else:
        return None
    return (f"{said}, more than the largest card here ({format_size(largest_card)}): no --mem "
            "or --retry-oom can make that fit; it needs a larger card, model sharding (FSDP, "
            "DeepSpeed ZeRO, tensor parallelism) or smaller batches, or a peer with larger "
            "cards (--host).")


def mem_hint(known: int, tried: int | None, largest_card: int | None) -> int | None:
    """A --mem worth suggesting: 1.5 times what it held, at least what it held plus what it
    tried, at most a card (when the card is known); None when nothing is known."""
    if not known and tried is None:
        return None
    hint = max(int(known * 1.5), known + (tried or 0))
    return hint if largest_card is None else min(hint, largest_card)


# What to do, per class and per cause: each names a command or option of gq that exists. The
# second part is for a job gq ran ({id}); a log triaged offline gets the first only. {mem}: a
# --mem that would have fit, when known.
_SUGGESTIONS = {
    GPU_OOM: ("out of GPU memory: resubmit with more per card ({mem}), or without --mem for "
              "whole cards; add --retry-oom 2 and gq retries such deaths with 1.5 times the "
              "memory (at most a card).", " `gq show {id}` gives the peak it reached."),
    HOST_OOM: ("the kernel killed it for host memory: resubmit with --ram SIZE above its peak "
               "(or fewer DataLoader workers); `gq offenders` shows who else holds memory.", ""),
    OOM_KILLER: ("the kernel's OOM killer ended it: the host (or its cgroup) ran out of memory; "
                 "resubmit with --ram SIZE above its peak, or use less (fewer DataLoader "
                 "workers, a smaller prefetch); `gq offenders` shows who else holds memory.",
                 ""),
    PROCESS_MEMORY: ("an allocation of host memory (not card memory) failed: load the data "
                     "lazily or in smaller pieces, use fewer DataLoader workers, and resubmit "
                     "with --ram SIZE above its peak; `gq offenders` shows who else holds "
                     "memory.", ""),
    NCCL: ("a collective failed: the rank that died first has the cause in its own error; if "
           "none did, check the interconnect (NCCL_DEBUG=INFO) and requeue.",
           " Its errors: `gq logs {id} --err`; requeue: `gq requeue {id}`."),
    COLLECTIVE_TIMEOUT: ("a collective (or the rendezvous) timed out: one rank stopped coming "
                         "(it died, hung, or did long work alone, such as saving or evaluating "
                         "on rank 0); find that rank's last lines, give lone work a barrier or "
                         "a longer timeout (init_process_group(timeout=...)), then requeue.",
                         " Its errors: `gq logs {id} --err`; requeue: `gq requeue {id}`."),
    CUDA_ERROR: ("a CUDA fault that more memory will not cure: rerun with "
                 "CUDA_LAUNCH_BLOCKING=1 (`gq submit --env CUDA_LAUNCH_BLOCKING=1 ...`) to find "
                 "the kernel; for 'no kernel image', install a build for this card.", ""),
    DRIVER: ("the host's NVIDIA driver is missing, not loaded, or older than the CUDA the job "
             "was built for: not the job's code. Check `nvidia-smi` and `gq gpus` on that host "
             "(an admin reloads or upgrades the driver), or install a build for the driver's "
             "CUDA version; a job that asked for no card sees none (--gpus N).",
             " Then `gq requeue {id}`, or resubmit to a host whose driver works (--host)."),
    IMPORT_ENV: ("the environment is wrong (module, library or command missing): activate the "
                 "right environment in the job's command, or pass variables with `gq submit "
                 "--env K=V`.", ""),
    LOST_CWD: ("its working directory was gone when it ran (deleted, moved or unmounted after "
               "the submit): nothing in its environment is at fault; resubmit from a directory "
               "that exists, or name one with `gq submit --cwd DIR`.", ""),
    DISK_FULL: ("a disk is full: free space where it writes (`df -h`); checkpoints belong in "
                "$GQ_CHECKPOINT_DIR.", " Then `gq requeue {id}`."),
    QUOTA: ("over a disk quota (the disk itself may have room): free or move your files "
            "(`quota -s`, `du -sh ~/.cache`), point caches elsewhere (`gq submit --env "
            "HF_HOME=/scratch/...`); checkpoints belong in $GQ_CHECKPOINT_DIR.",
            " Then `gq requeue {id}`."),
    SHM: ("/dev/shm (shared memory between DataLoader workers) is full: use fewer workers, or "
          "share tensors through files (torch.multiprocessing.set_sharing_strategy("
          "'file_system')); `df -h /dev/shm` shows its size.", " Then `gq requeue {id}`."),
    SEGFAULT: ("native code crashed: check that compiled extensions match the installed "
               "libraries; a bus error in a DataLoader worker means /dev/shm is full (use "
               "fewer workers).", " The trace: `gq logs {id} --err`."),
    DATA_ERROR: ("an exception in the job's own code: the traceback's last line says which; "
                 "fix it.", " Then `gq requeue {id}`."),
    TIMEOUT_SIGNAL: ("it was stopped from outside (a signal, a cancel): if that was its time "
                     "limit, give it a longer --time; checkpoint on --signal (e.g. "
                     "--signal USR1@5m) to $GQ_CHECKPOINT_DIR so that a requeue resumes.", ""),
    TIME_LIMIT: ("it reached its time limit: give it a longer --time, or checkpoint on "
                 "--signal (e.g. --signal USR1@5m) to $GQ_CHECKPOINT_DIR and resume from it, "
                 "so that a requeue continues where it stopped.", ""),
    UNKNOWN: ("no known cause in the end of its log: read the whole log.",
              " `gq logs {id} --err` and `gq logs {id}`."),
}


def suggest(failure: str, job_id: int | str | None = None, mem: str | None = None,
            evidence: list[str] | None = None, largest_card: int | None = None,
            held: int | None = None, whole_card: bool = False) -> str:
    """The suggestion for a class, for a job (or offline, for a file: job_id None), checked
    against what the evidence says it tried and held, and the largest card. `mem`: a --mem
    that would fit (else one is worked out from the evidence); `held`: what it held on a card
    (its --mem or its peak; else what the evidence says)."""
    evidence = evidence or []
    if failure == GPU_OOM:
        tried = tried_bytes(evidence)
        known = held_bytes(evidence) if held is None else held
        truth = needs_larger_card(tried, largest_card, known, whole_card)
        if truth is not None:
            return truth
        if mem is None:
            hint = mem_hint(known, tried, largest_card)
            mem = None if hint is None else format_size(hint)
    key = cause_of(failure, evidence) or failure
    text, for_job = _SUGGESTIONS.get(key) or _SUGGESTIONS.get(failure) or _SUGGESTIONS[UNKNOWN]
    if job_id is not None:
        text += for_job.format(id=job_id)
    return text.format(mem=f"e.g. --mem {mem}" if mem else "a larger --mem")
