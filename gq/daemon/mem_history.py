"""--mem auto, the warning for a --mem far from history, and the SM utilisation that decides
whether a slice may share a card: learnt from the last successful runs of the same command in
the same directory (its fingerprint)."""

from __future__ import annotations

from typing import Any

from gq.daemon.telemetry import command_key
from gq.model import Job
from gq.protocol import BadInput
from gq.store import Store
from gq.units import format_size

HISTORY_RUNS = 5  # how many of the latest completed runs to learn from
MARGIN = 0.2  # the request is the largest of their peaks plus this share
STEP = 256 << 20  # requests are rounded up to this
FAR_ABOVE = 2.0  # a --mem over this many times what auto would ask is "far" from history


def learnt_request(store: Store, command: list[str], cwd: str) -> tuple[int | None, list[dict]]:
    """What --mem auto would ask (bytes per GPU; None without history), and the runs used."""
    if not isinstance(command, list) or not command or not isinstance(cwd, str):
        return None, []
    runs = store.history.runs_of_command(command_key(command, cwd), HISTORY_RUNS)
    if not runs:
        return None, []
    peak = max(r["peak_mem"] for r in runs)
    return _rounded_up(max(peak, 1) * (1 + MARGIN)), runs


def learned_utils(store: Store, jobs: list[Job], keys: dict[int, str],
                  known: dict[str, float | None]) -> dict[int, float]:
    """Each slice's SM utilisation alone (%), from the mean over the last runs of its command;
    jobs without history are left out (placed by memory). The jobs of a pass are light (no
    command): `keys` (job id -> command key, read once per job) and `known` (command key ->
    answer, until a run ends) are kept by the caller."""
    slices = [j for j in jobs if j.mem is not None]
    missing = [j.id for j in slices if j.id not in keys]
    if missing:
        for full in store.jobs(ids=missing):
            keys[full.id] = command_key(full.command, full.cwd) if full.command else ""
    for gone in keys.keys() - {j.id for j in slices}:
        del keys[gone]
    out = {}
    for job in slices:
        key = keys.get(job.id)
        if not key:
            continue
        if key not in known:
            known[key] = store.history.util_of_command(key, HISTORY_RUNS)
        if known[key] is not None:
            out[job.id] = known[key]
    return out


LEARNED = "memory learned: "  # the event of a job whose --mem was learned, for gq stats


def apply_mem_history(store: Store, args: dict[str, Any], card_memory: tuple[int, ...],
                      learn: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Resolve --mem auto in a submit request, and say what was chosen or what looks wrong.
    Returns the request to build the job from, and notes for the user. `learn` ([scheduler]
    learn_mem): a GPU job without --mem is --mem auto when its command has history, and takes
    whole cards, as asked, when it has none."""
    if learn and args.get("mem") is None and args.get("gpus", 1) != 0:
        asked, _runs = learnt_request(store, args.get("command"), args.get("cwd"))
        if asked is None:
            return args, []
        learned, notes = apply_mem_history(store, {**args, "mem": "auto"}, card_memory)
        if learned.get("mem") is not None:
            notes = [LEARNED + notes[0].removeprefix("--mem auto: ") + " ([scheduler] "
                     "learn_mem; give --mem to choose)"]
        return learned, notes
    mem = args.get("mem")
    if mem != "auto" and (mem is None or isinstance(mem, bool) or not isinstance(mem, int)):
        return args, []  # whole cards, or a bad value that build_job refuses in its words
    asked, runs = learnt_request(store, args.get("command"), args.get("cwd"))
    gpus = args.get("gpus", 1)
    if mem != "auto":
        return args, _far_from_history(mem, asked, runs)
    args = dict(args)
    if isinstance(gpus, int) and gpus == 0:
        raise BadInput("--mem auto is GPU memory per GPU and needs --gpus 1 or more")
    if asked is None:
        args.pop("mem")
        return args, ["--mem auto: no completed run of this command in this directory has a "
                      "recorded peak; the job gets whole cards"]
    peak = max(r["peak_mem"] for r in runs)
    count = f"{len(runs)} run{'s' * (len(runs) != 1)}"
    cards = sorted(card_memory, reverse=True)
    largest = cards[gpus - 1] if isinstance(gpus, int) and 0 < gpus <= len(cards) else None
    if largest is not None and asked >= largest:
        args.pop("mem")
        return args, [f"--mem auto: the peak of the last {count} is {format_size(peak)}; with "
                      f"a {MARGIN:.0%} margin that needs whole cards"]
    args["mem"] = asked
    return args, [f"--mem auto: {format_size(asked)} per GPU, the {format_size(peak)} peak of "
                  f"the last {count} (jobs {_ids(runs)}) plus {MARGIN:.0%}"]


def _far_from_history(mem: int, asked: int | None, runs: list[dict]) -> list[str]:
    if asked is None:
        return []
    peak = max(r["peak_mem"] for r in runs)
    count = f"{len(runs)} completed run{'s' * (len(runs) != 1)}"
    if mem < peak:
        return [f"warning: --mem {format_size(mem)} is less than the {format_size(peak)} this "
                f"command peaked at here (last {count}): it may run out of memory; --mem auto "
                f"would ask {format_size(asked)}"]
    if mem > FAR_ABOVE * asked:
        return [f"warning: --mem {format_size(mem)} is over {FAR_ABOVE:g}x what this command "
                f"used here (peak {format_size(peak)}, last {count}): the rest of the card "
                f"sits idle; --mem auto would ask {format_size(asked)}"]
    return []


def _ids(runs: list[dict]) -> str:
    return ",".join(str(i) for i in dict.fromkeys(r["job_id"] for r in runs))


def _rounded_up(size: float) -> int:
    return int(-(-size // STEP) * STEP)
