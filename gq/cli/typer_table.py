"""Typer commands made from the command table (gq.cli.commands): each option's flags, type,
metavar and help come from there, so that `--help`, completion and docs/cli.md (all read from
the Typer app) say what the light parser parses."""

from __future__ import annotations

import inspect
from typing import Annotated, Any, Callable, Optional

import typer

from gq.cli.commands import Arg, Command, Opt

_TYPES = {"str": str, "int": int}
_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def _argument(arg: Arg) -> inspect.Parameter:
    kind = list[str] if arg.many else str
    if arg.required:
        info = typer.Argument(help=arg.help, metavar=arg.metavar)
        return inspect.Parameter(arg.dest, _KEYWORD, annotation=Annotated[kind, info])
    info = typer.Argument(help=arg.help, metavar=arg.metavar, show_default=False)
    return inspect.Parameter(arg.dest, _KEYWORD, annotation=Annotated[kind, info], default=None)


def _option(o: Opt) -> inspect.Parameter:
    if o.kind == "flag":
        kind: Any = bool
        info = typer.Option(*o.flags, help=o.help)
    elif o.kind == "switch":
        kind = Optional[bool]
        names = "/".join((*o.flags, *o.off))
        info = typer.Option(names, help=o.help, show_default=False)
    else:
        kind = _TYPES[o.type]
        kind = Optional[list[kind]] if o.kind == "multi" else Optional[kind]
        extra: dict[str, Any] = {} if o.metavar is None else {"metavar": o.metavar}
        if o.min is not None:
            extra["min"] = o.min
        info = typer.Option(*o.flags, help=o.help, show_default=False, **extra)
    return inspect.Parameter(o.dest, _KEYWORD, annotation=Annotated[kind, info],
                             default=o.default)


def typer_command(cmd: Command) -> Callable[..., Any]:
    """A function for app.command(): its signature made from the table, its body the
    command's function in gq.cli.jobs_cmd (the one the light path runs)."""

    def command(**values: Any) -> Any:
        from gq.cli import jobs_cmd

        return getattr(jobs_cmd, cmd.function)(**values)

    params = ([_argument(cmd.arg)] if cmd.arg else []) + [_option(o) for o in cmd.options]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__name__ = command.__qualname__ = cmd.function
    command.__doc__ = cmd.help
    return command
