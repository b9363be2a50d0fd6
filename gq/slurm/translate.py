"""A gq submit request -> the argv and batch script of `sbatch`, or a one-line refusal of what
Slurm cannot be asked (docs/slurm.md has the table). Pure: no IO, no clock."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from gq.protocol import BadInput
from gq.sbatch.options import block_sets
from gq.units import format_duration, format_size

# Variables of the submitter's environment that belong to the host it was typed on, not to a
# node of the cluster: the job gets the node's own.
HOST_BOUND = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|PWD|OLDPWD|HOSTNAME|HOST|TERM|TERMCAP|COLUMNS|LINES|"
    r"DISPLAY|MAIL|TMPDIR|SHLVL|_|LD_LIBRARY_PATH|LD_PRELOAD|CUDA_VISIBLE_DEVICES|"
    r"SSH_\w+|XDG_\w+|SLURM_\w+|GQ_\w+|DBUS_\w+|TMUX\w*|STY|WINDOW|PS[1-4]|BASH_FUNC_.*)$")
NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEP_WORD = {"after": "afterany", "afterok": "afterok", "afternotok": "afternotok",
            "afterstart": "after"}
DEFAULT_GRACE = 60.0


@dataclass(frozen=True)
class SlurmTarget:
    """Where the peer sends jobs: its name in gq, and the options its `peers add` set."""

    name: str
    partition: str | None = None
    account: str | None = None
    qos: dict[str, str] = field(default_factory=dict)  # tier -> QOS


@dataclass
class Batch:
    argv: list[str]  # sbatch and its options; the script goes on its standard input
    script: str
    notes: list[str]  # what was mapped loosely, said to the submitter
    stdout: str  # the output files, `%j` for the job id
    stderr: str


def sbatch(args: dict[str, Any], target: SlurmTarget) -> Batch:
    """Raise BadInput (exit 2) for a request Slurm cannot be given. A job from a script with
    #SBATCH lines keeps them: the script sbatch reads starts with the author's block, and
    sbatch's command line carries only what was set on gq's (which wins, as it would on
    sbatch's), never a translation of the author's own lines."""
    _refuse_untranslatable(args, target)
    command = args.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in
                                                               command):
        raise BadInput("no command given: gq submit [OPTIONS] -- COMMAND [ARGS...]")
    cwd = str(args.get("cwd") or "")
    if not cwd.startswith("/"):
        raise BadInput(f"--cwd {cwd!r}: a Slurm job needs an absolute directory")
    block, given = author_block(args.get("sbatch_script"))
    authored = block_sets(block)

    def ours(field: str, *options: str) -> bool:
        """Whether gq sets this: given on its command line, or the author left it unset."""
        return field in given if block else not authored.intersection(options)

    notes: list[str] = []
    out_file, err_file = f"{cwd}/slurm-%j.out", f"{cwd}/slurm-%j.err"
    argv = ["sbatch", "--parsable"]
    if not authored.intersection(("chdir",)):
        argv.append(f"--chdir={cwd}")
    if not authored.intersection(("output", "error")):
        argv += [f"--output={out_file}", f"--error={err_file}"]
    if not authored.intersection(("export",)):
        argv.append("--export=ALL")
    if "name" in given or not authored.intersection(("job-name",)):
        argv.append(f"--job-name={args.get('name') or _name(command)}")
    if target.partition and not authored.intersection(("partition",)):
        argv.append(f"--partition={target.partition}")
    if target.account and not authored.intersection(("account",)):
        argv.append(f"--account={target.account}")
    gpus = _whole(args, "gpus", 1)
    if gpus and ours("gpus", "gres", "gpus", "gpus-per-node", "gpus-per-task"):
        argv.append(f"--gres=gpu:{gpus}")
    if ours("cpus", "cpus-per-task"):
        argv.append(f"--cpus-per-task={_whole(args, 'cpus', 1) or 1}")
    if args.get("ram") is not None and ours("ram", "mem", "mem-per-cpu", "mem-per-gpu"):
        argv.append(f"--mem={max(1, math.ceil(int(args['ram']) / 2**20))}M")
    time_limit = args.get("time_limit")
    if time_limit is not None and ours("time_limit", "time"):
        argv.append(f"--time={_minutes(float(time_limit))}")
    if ours("priority", "qos"):
        argv += _tier(args, target, notes)
    requeue = ours("preemptible", "requeue", "no-requeue") or ours("priority", "requeue")
    signal = ours("signal", "signal") or ours("signal_before", "signal")
    argv += [o for o in _preemption(args, time_limit, notes)
             if (requeue if o.endswith("requeue") else signal)]
    dependency = _dependency(args)
    if dependency and any(ours(k, "dependency") for k in DEP_WORD):
        argv.append(f"--dependency={dependency}")
    if args.get("hold") and ours("hold", "hold"):
        argv.append("--hold")
    if args.get("mail") and ours("mail", "mail-user"):
        argv += ["--mail-type=END,FAIL", f"--mail-user={args['mail']}"]
    if args.get("idempotency_key"):
        argv.append(f"--comment=gq:{args['idempotency_key']}")
    return Batch(argv, script(args, target.name, block), notes, out_file, err_file)


MAX_BLOCK_LINES = 256


def author_block(value: Any) -> tuple[list[str], set[str]]:
    """(the author's #SBATCH lines, the fields set on gq's command line) of a request; a
    line that is not one #SBATCH line (a newline in it would be a command) is refused."""
    if value is None:
        return [], set()
    block = value.get("block") if isinstance(value, dict) else None
    given = value.get("given") if isinstance(value, dict) else None
    if (not isinstance(block, list) or not isinstance(given, list)
            or len(block) > MAX_BLOCK_LINES or len(given) > 64):
        raise BadInput("sbatch_script: expected {block: [#SBATCH lines], given: [fields]}")
    for line in block:
        if (not isinstance(line, str) or not line.startswith("#SBATCH") or len(line) > 4096
                or any(c in line for c in "\n\r\0")):
            raise BadInput(f"sbatch_script: {str(line)[:80]!r} is not one #SBATCH line")
    return block, {str(g) for g in given}


def _refuse_untranslatable(args: dict[str, Any], target: SlurmTarget) -> None:
    where = f"--host {target.name} (a Slurm peer)"
    if args.get("mem") is not None:
        shown = "auto" if args["mem"] == "auto" else format_size(int(args["mem"]))
        raise BadInput(f"--mem {shown}: {where} gives whole GPUs; Slurm cannot be asked for "
                       "a share of a card's memory: drop --mem (host memory is --ram)")
    if args.get("array") or args.get("sweep"):
        raise BadInput(f"--array/--sweep: not sent to {where} yet; submit each job, or use "
                       "sbatch --array there")
    if args.get("retry_oom"):
        raise BadInput(f"--retry-oom: {where} cannot resubmit with more GPU memory")
    if args.get("notify"):
        raise BadInput(f"--notify: {where} cannot run a command when the job ends; "
                       "use --mail")
    if args.get("preempt_mode") == "freeze":  # auto there is the signal: Slurm's requeue
        raise BadInput(f"--preempt-mode freeze: {where} preempts by its own PreemptMode; "
                       "use --preempt-mode signal or auto")


def script(args: dict[str, Any], peer: str, block: list[str] = ()) -> str:
    """The batch script: the author's #SBATCH lines if any (before any command, where sbatch
    reads them), the environment, gq's variables, then the command in its place."""
    lines = ["#!/bin/bash", *block, "# written by gq (docs/slurm.md)"]
    umask = args.get("umask")
    if isinstance(umask, int) and not isinstance(umask, bool):
        lines.append(f"umask {umask:03o}")
    env = args.get("env") or {}
    for key in sorted(env):
        if NAME_OK.match(key) and not HOST_BOUND.match(key):
            lines.append(f"export {key}={shlex.quote(str(env[key]))}")
    ckpt = checkpoint_dir(peer, "$SLURM_JOB_ID")
    lines += [
        f'export GQ_JOB_ID="{peer}:$SLURM_JOB_ID"',
        'export GQ_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}"',
        f'export GQ_CHECKPOINT_DIR="{ckpt}"',
        'mkdir -p "$GQ_CHECKPOINT_DIR"',
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
        # exec: the command is the batch step's shell, so --signal=B: reaches it
        f"exec {shlex.join(args['command'])}",
    ]
    return "\n".join(lines) + "\n"


def checkpoint_dir(peer: str, sid: int | str) -> str:
    """GQ_CHECKPOINT_DIR of a job, as the batch script sets it on the node."""
    return f"${{GQ_CHECKPOINT_ROOT:-$HOME/.cache/gq/checkpoints}}/{peer}-{sid}"


def _name(command: list[str]) -> str:
    return command[0].rsplit("/", 1)[-1][:64] or "job"


def _whole(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadInput(f"--{key} {value!r}: expected a whole number, 0 or more")
    return value


def _minutes(seconds: float) -> str:
    """Slurm counts whole minutes: a limit is rounded up, as `D-HH:MM:00`."""
    minutes = max(1, math.ceil(seconds / 60))
    days, rest = divmod(minutes, 1440)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def _tier(args: dict[str, Any], target: SlurmTarget, notes: list[str]) -> list[str]:
    tier = str(args.get("priority") or "normal")
    if tier not in ("high", "normal", "low"):
        raise BadInput(f"--priority {tier!r}: expected high, normal or low")
    if tier in target.qos:
        return [f"--qos={target.qos[tier]}"]
    if tier == "low":
        return ["--nice=1000"]  # behind this user's other jobs; raising needs an operator
    if tier == "high":
        notes.append(f"{target.name}: no QOS set for tier high (gq peers add --slurm --qos "
                     "high=NAME); sent at Slurm's normal priority")
    return []


def _preemption(args: dict[str, Any], time_limit: Any, notes: list[str]) -> list[str]:
    tier = str(args.get("priority") or "normal")
    preemptible = args.get("preemptible")
    preemptible = tier == "low" if preemptible is None else bool(preemptible)
    out = ["--requeue" if preemptible else "--no-requeue"]
    sig = str(args.get("signal") or "SIGTERM")
    before = args.get("signal_before")
    if before is not None:
        if time_limit is None:
            raise BadInput(f"--signal {sig[3:]}@{format_duration(float(before))}: needs "
                           "--time, the limit it is sent before")
        # Slurm sends it up to 60 s late; it counts whole seconds, at most 65535
        out.append(f"--signal=B:{sig[3:]}@{min(65535, max(1, round(float(before))))}")
    elif sig != "SIGTERM":
        notes.append(f"--signal {sig[3:]} without @DUR: Slurm sends SIGTERM on preemption "
                     "(then SIGKILL after its GraceTime); give @DUR to send it before --time")
    grace = args.get("grace")
    if grace is not None and float(grace) != DEFAULT_GRACE:
        notes.append(f"--grace {format_duration(float(grace))}: Slurm's KillWait and "
                     "GraceTime (set by the cluster) decide the time before SIGKILL")
    return out


def _dependency(args: dict[str, Any]) -> str:
    """'afterany:12:13,afterok:14': all must hold, as gq's --after/--afterok do together."""
    parts = []
    for kind, word in DEP_WORD.items():
        ids = args.get(kind) or []
        if not isinstance(ids, list):
            raise BadInput(f"--{kind}: expected a list of job ids")
        bad = [str(i) for i in ids if not str(i).isdigit()]
        if bad:
            raise BadInput(f"--{kind} {bad[0]}: expected a Slurm job id of the same peer")
        if ids:
            parts.append(":".join([word, *map(str, ids)]))
    return ",".join(parts)
