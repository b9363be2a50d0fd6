"""`gq submit`: a small argv parser for the hot path, and one converter to a request.

`gq submit` is the command users run most and in loops, so it does not wait for Typer to
import (about 40 ms): `gq.cli.entry` parses its argv here, with its options from the command
table (gq.cli.commands), from which the Typer command (help, completion, docs) is made too;
both feed the same converter, and a test keeps the two parsers in step.
"""

from __future__ import annotations

import os
from typing import Any

from gq.cli.commands import RUN_OPTIONS, SUBMIT_OPTIONS
from gq.cli.directives import working_dir
from gq.protocol import BadInput
from gq.units import parse_duration, parse_mem, parse_signal, parse_size

OPTIONS = SUBMIT_OPTIONS
_BY_FLAG = {flag: o for o in OPTIONS for flag in o.flags}
_RUN_BY_FLAG = {flag: o for o in RUN_OPTIONS for flag in o.flags}


def parse_argv(argv: list[str], run: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Options up to `--` or the first word that is not an option; the rest is the command.
    run: `gq run`'s options."""
    by_flag, name = (_RUN_BY_FLAG, "run") if run else (_BY_FLAG, "submit")
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return values, argv[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            return values, argv[i:]
        flag, eq, inline = arg.partition("=") if arg.startswith("--") else (arg[:2], "", arg[2:])
        opt = by_flag.get(flag)
        if opt is None:
            from gq.cli.output import did_you_mean

            raise BadInput(f"no such option: {flag}{did_you_mean(flag, by_flag)} "
                           f"(see gq {name} --help)")
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
    cwd = working_dir(values.get("cwd"))
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
    for kind in ("after", "afterok", "afternotok", "afterstart"):
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
