"""`gq submit` options: one table, a small argv parser for the hot path, one converter.

`gq submit` is the command users run most and in loops, so it does not wait for Typer to
import (about 40 ms): `gq.cli.entry` parses its argv here. The Typer command in `gq.cli.app`
exists for help, completion and docs, and feeds the same converter; a test keeps both in step.
"""

from __future__ import annotations

import os
from typing import Any

from gq.protocol import BadInput
from gq.units import parse_duration, parse_mem, parse_signal, parse_size


class Opt:
    """One option. A plain class, not a dataclass: importing dataclasses costs ~8 ms."""

    __slots__ = ("long", "short", "dest", "kind", "metavar", "help")

    def __init__(self, long: str, short: str | None, dest: str, kind: str, metavar: str,
                 help: str):
        self.long, self.short, self.dest = long, short, dest
        self.kind = kind  # "value", "multi" (repeatable) or "flag"
        self.metavar, self.help = metavar, help


OPTIONS: tuple[Opt, ...] = (
    Opt("--gpus", "-g", "gpus", "value", "N",
        "GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free "
        "(GQ_NUM_GPUS says how many)  [default: 1]"),
    Opt("--mem", "-m", "mem", "value", "SIZE",
        "GPU memory per GPU, e.g. 20G; the job may share a card. Without it: whole cards. "
        "auto: the peak of this command's last successful runs here, plus 20%"),
    Opt("--cpus", "-c", "cpus", "value", "N", "host CPU cores  [default: 1]"),
    Opt("--ram", None, "ram", "value", "SIZE", "host memory, e.g. 32G"),
    Opt("--priority", "-p", "priority", "value", "TIER", "high | normal | low  [default: normal]"),
    Opt("--time", "-t", "time", "value", "DUR", "wall-time limit, e.g. 90m, 2h, 1d12h"),
    Opt("--pool", None, "pool", "value", "NAME",
        "run on the cards of this pool ([pools.NAME] of the host)  [default: the default pool]"),
    Opt("--interactive", None, "interactive", "flag", "",
        "a short interactive job: goes ahead of batch work, in the interactive pool; needs "
        "--time unless the pool sets max_time"),
    Opt("--preemptible", None, "preemptible", "flag", "",
        "may be stopped and requeued for higher-tier work  [default: low tier yes, others no]"),
    Opt("--no-preemptible", None, "no_preemptible", "flag", "",
        "never stop it for other work, whatever its tier"),
    Opt("--signal", None, "signal", "value", "SIG[@DUR]",
        "checkpoint signal, sent to the job's main process on preemption and DUR before the "
        "--time limit, e.g. USR1@5m  [default: TERM]"),
    Opt("--signal-group", None, "signal_group", "flag", "",
        "send the checkpoint signal to the job's whole process group, not its main process"),
    Opt("--grace", None, "grace", "value", "DUR",
        "time between the checkpoint signal and SIGKILL  [default: 60s]"),
    Opt("--preempt-mode", None, "preempt_mode", "value", "MODE",
        "how it makes way when preempted: freeze (its GPU state to host memory, thawed later "
        "where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it "
        "saves no checkpoints); a freeze that cannot be done takes the signal path  "
        "[default: its tier's, [preemption] mode]"),
    Opt("--retry-oom", None, "retry_oom", "value", "N",
        "after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem"),
    Opt("--after", None, "after", "multi", "ID[,ID]", "start after these jobs end, any outcome"),
    Opt("--afterok", None, "afterok", "multi", "ID[,ID]", "start after these jobs complete"),
    Opt("--afternotok", None, "afternotok", "multi", "ID[,ID]",
        "start after these jobs end other than completed"),
    Opt("--name", "-n", "name", "value", "NAME",
        "a label (default: the script, train.py for python train.py; else the program)"),
    Opt("--cwd", None, "cwd", "value", "DIR", "working directory  [default: the current one]"),
    Opt("--env", None, "env", "multi", "K=V", "set a variable in the job (repeatable)"),
    Opt("--array", None, "array", "value", "SPEC",
        "queue an array: one job per index, e.g. 0-15, 1,3,5, 0-30:2; %N runs at most N at "
        "once (0-15%4). The index is in GQ_ARRAY_INDEX"),
    Opt("--sweep", None, "sweep", "multi", "KEY=V1,V2",
        "queue one job per combination of values (repeatable: the cartesian product), "
        "{KEY} in the command replaced by each value"),
    Opt("--notify", None, "notify", "value", "CMD",
        "run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE... set)"),
    Opt("--mail", None, "mail", "value", "USER", "mail USER when the job ends (needs sendmail)"),
    Opt("--host", None, "host", "value", "HOST|any",
        "run on a peer (gq peers ls); any: on the host where it would start first  "
        "[default: this host]"),
    Opt("--hold", None, "hold", "flag", "", "queue the job held: it waits for `gq release`"),
    Opt("--json", None, "json", "flag", "", "print the job as JSON"),
)
_BY_FLAG = {flag: o for o in OPTIONS for flag in (o.long, o.short) if flag}


def parse_argv(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Options up to `--` or the first word that is not an option; the rest is the command."""
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return values, argv[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            return values, argv[i:]
        flag, eq, inline = arg.partition("=") if arg.startswith("--") else (arg[:2], "", arg[2:])
        opt = _BY_FLAG.get(flag)
        if opt is None:
            raise BadInput(f"no such option: {flag} (see gq submit --help)")
        if opt.kind == "flag":
            if eq or inline:
                raise BadInput(f"{flag} takes no value")
            values[opt.dest] = True
            i += 1
            continue
        if eq or inline:
            value = inline
            i += 1
        elif i + 1 < len(argv):
            value = argv[i + 1]
            i += 2
        else:
            raise BadInput(f"{flag} needs a value ({opt.metavar})")
        if opt.kind == "multi":
            values.setdefault(opt.dest, []).append(value)
        else:
            values[opt.dest] = value
    return values, []


def update_args(mem=None, gpus=None, cpus=None, ram=None, time=None, name=None,
                priority=None) -> dict[str, Any]:
    """`gq update`'s options, parsed as submit parses them."""
    args: dict[str, Any] = {}
    if mem is not None:
        args["mem"] = _parsed("--mem", mem, parse_mem)
    if gpus is not None:
        args["gpus"] = _whole("--gpus", gpus)
    if cpus is not None:
        args["cpus"] = _whole("--cpus", cpus)
    if ram is not None:
        args["ram"] = _parsed("--ram", ram, parse_size)
    if time is not None:
        args["time_limit"] = _parsed("--time", time, parse_duration)
    if name is not None:
        args["name"] = name
    if priority is not None:
        args["priority"] = priority.lower()
    return args


def _whole(flag: str, text: str) -> int:
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()):  # int() takes "0_1" and "١٠" too
        raise BadInput(f"{flag} {text}: expected a whole number")
    return int(text)


def _parsed(flag: str, text: Any, parse, prefixed: bool = False) -> Any:
    try:
        return parse(text)
    except ValueError as e:
        raise BadInput(str(e) if prefixed else f"{flag} {e}") from None


def _ids(values: list[str]) -> list[str]:
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def _env(values: list[str]) -> dict[str, str]:
    out = {}
    for item in values:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise BadInput(f"--env {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _signal_spec(text: str) -> tuple[str, float | None]:
    """'USR1@5m' -> ('SIGUSR1', 300.0); 'USR1' -> ('SIGUSR1', None)."""
    name, at, before = text.partition("@")
    sig = _parsed("--signal", name, parse_signal)
    if not at:
        return sig, None
    try:
        return sig, parse_duration(before)
    except ValueError as e:
        raise BadInput(f"--signal {text}: after @, {e}") from None


def _preemption_args(values: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if values.get("preemptible") and values.get("no_preemptible"):
        raise BadInput("--preemptible and --no-preemptible contradict each other; give one")
    if values.get("preemptible") or values.get("no_preemptible"):
        args["preemptible"] = bool(values.get("preemptible"))
    if values.get("signal") is not None:
        args["signal"], before = _signal_spec(values["signal"])
        if before is not None:
            args["signal_before"] = before
    if values.get("signal_group"):
        args["signal_group"] = True
    if values.get("grace") is not None:
        args["grace"] = _parsed("--grace", values["grace"],
                                lambda t: parse_duration(t, allow_zero=True))
    if values.get("retry_oom") is not None:
        args["retry_oom"] = _whole("--retry-oom", values["retry_oom"])
    if values.get("preempt_mode") is not None:
        from gq.model import parse_preempt_mode

        args["preempt_mode"] = _parsed("--preempt-mode", values["preempt_mode"],
                                       parse_preempt_mode, prefixed=True)
    return args


def request_args(values: dict[str, Any], command: list[str]) -> dict[str, Any]:
    """Option values as typed (strings) -> the arguments of the daemon's submit operation."""
    for arg in command:
        if "\0" in arg:
            raise BadInput("the command contains a NUL byte")
    if not command:
        raise BadInput("no command given: gq submit [OPTIONS] -- COMMAND [ARGS...]")
    cwd = os.path.abspath(values.get("cwd") or os.getcwd())
    if not values.get("host") and not os.path.isdir(cwd):  # else the host that runs it checks
        raise BadInput(f"--cwd {values.get('cwd')!r}: no such directory")
    env = dict(os.environ)  # as sbatch --export=ALL
    umask = os.umask(0o022)  # read it the only way there is, and put it back
    os.umask(umask)
    env.update(_env(values.get("env") or []))
    args: dict[str, Any] = {
        "command": command,
        "cwd": cwd,
        "env": env,
        "hold": bool(values.get("hold")),
        "umask": umask,
        # An empty -p "$TIER" is refused, not taken for the default.
        "priority": (values.get("priority") if values.get("priority") is not None
                     else "normal").lower(),
    }
    if values.get("gpus") is not None:
        low, dash, high = str(values["gpus"]).partition("-")
        args["gpus"] = _whole("--gpus", low) if dash and low else _whole("--gpus", values["gpus"])
        if dash and low:
            args["gpus_max"] = _whole("--gpus", high)
    if values.get("pool") is not None:
        args["pool"] = values["pool"]
    if values.get("interactive"):
        args["interactive"] = True
    if values.get("cpus") is not None:
        args["cpus"] = _whole("--cpus", values["cpus"])
    if values.get("mem") is not None:
        auto = values["mem"].strip().lower() == "auto"
        args["mem"] = "auto" if auto else _parsed("--mem", values["mem"], parse_mem)
    if values.get("ram") is not None:
        args["ram"] = _parsed("--ram", values["ram"], parse_size)
    if values.get("time") is not None:
        args["time_limit"] = _parsed("--time", values["time"], parse_duration)
    if values.get("name") is not None:
        args["name"] = values["name"]
    args.update(_preemption_args(values))
    for kind in ("after", "afterok", "afternotok"):
        if values.get(kind):
            args[kind] = _ids(values[kind])
    if values.get("array") is not None or values.get("sweep"):
        from gq.arrayspec import parse_array, parse_sweep

        if values.get("array") is not None:
            args["array"] = _parsed("--array", values["array"], parse_array, prefixed=True)
        if values.get("sweep"):
            args["sweep"] = _parsed("--sweep", values["sweep"], parse_sweep, prefixed=True)
    for key in ("notify", "mail", "host"):
        if values.get(key) is not None:
            args[key] = values[key]
    return args
