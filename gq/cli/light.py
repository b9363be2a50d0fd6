"""The light path of the hot commands: parse argv with the command table, as click would, and
run the command's function, without importing Typer.

The parser only says yes to what it is sure click reads the same way; for anything else
(`--help`, an unknown option, a missing argument, a value that is not a number, a value that
looks like an option) it returns None and the argv goes to Typer, whose help, error line and
exit code are the answer. So the two paths differ in speed only.
"""

from __future__ import annotations

from typing import Any

from gq.cli.commands import Command, Opt, command


def parse(cmd: Command, argv: list[str]) -> dict[str, Any] | None:
    """The command function's keyword arguments, or None: let Typer parse it (and any
    command whose options end at its first argument: `gq submit` has a parser of its own)."""
    if not cmd.interspersed:
        return None
    values: dict[str, Any] = {o.dest: o.default for o in cmd.options}
    args: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            args += argv[i:]
            break
        if arg[:1] != "-" or len(arg) == 1:
            args.append(arg)
            continue
        if arg[:2] == "--":
            flag, eq, inline = arg.partition("=")
            opt = cmd.by_flag.get(flag)
            if opt is None:
                return None
            if opt.kind in ("flag", "switch"):
                if eq:
                    return None  # click: "does not take a value"
                values[opt.dest] = flag not in opt.off
                continue
            i = _take(values, opt, inline if eq else None, argv, i)
            if i < 0:
                return None
            continue
        # -abc: flags, until one that takes a value, which takes the rest (or the next word)
        for n, letter in enumerate(arg[1:], 1):
            opt = cmd.by_flag.get("-" + letter)
            if opt is None:
                return None
            if opt.kind in ("flag", "switch"):
                values[opt.dest] = True
                continue
            i = _take(values, opt, arg[n + 1:] or None, argv, i)
            if i < 0:
                return None
            break
    if cmd.arg is None:
        return values if not args else None
    if cmd.arg.many:
        values[cmd.arg.dest] = args
        return values if args else None
    if len(args) != 1:
        return None
    values[cmd.arg.dest] = args[0]
    return values


def _take(values: dict[str, Any], opt: Opt, given: str | None, argv: list[str],
          i: int) -> int:
    """Store an option's value: `given` (--opt=VALUE, -oVALUE), else the next word. The
    index of the word after, or -1 where click would refuse it, or might read it otherwise
    (a value that starts with '-')."""
    if given is None:
        if i == len(argv):
            return -1
        given, i = argv[i], i + 1
    if given[:1] == "-":
        return -1
    value: Any = given
    if opt.type == "int":
        try:
            value = int(given)
        except ValueError:
            return -1
        if opt.min is not None and value < opt.min:
            return -1
    if opt.kind == "multi":
        values[opt.dest] = [*(values[opt.dest] or ()), value]
    else:
        values[opt.dest] = value
    return i


def run(argv: list[str]) -> int | None:
    """Run a hot command on the light path; None: not one, or not sure (Typer's turn)."""
    cmd = command(argv[0]) if argv else None
    values = parse(cmd, argv[1:]) if cmd is not None else None
    if values is None:
        return None
    from gq.cli import jobs_cmd

    result = getattr(jobs_cmd, cmd.function)(**values)
    return result if isinstance(result, int) else 0
