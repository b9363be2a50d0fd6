"""Shell completion: what the Typer app accepts, as data, and installing the generated scripts.

`scripts/gen_completions.py` writes `completions/gq.{bash,zsh,fish}` from `command_specs()`;
`gq completion install` writes the same text where each shell looks for it. The scripts hold
everything static (commands, options, option values); job ids come from the daemon through
`gq __complete` (gq/cli/complete_fast.py), which imports neither Typer nor anything heavy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gq.model import JobState, Tier

SHELLS = ("bash", "zsh", "fish")

# What each option's value is, by its long name. A kind is "words:W1 W2 ...", "jobs:PURPOSE"
# (ids from the daemon), "hosts", "files", "dirs", "users", or "none" (nothing to offer:
# sizes, durations, free text). Options not listed take "none".
_SIGNALS = "USR1 USR2 TERM INT HUP QUIT"


def _option_kinds() -> dict[str, str]:
    from gq.cli.sim_cmd import POLICY_CHOICES
    from gq.sim.traces import FORMATS

    return {
        "--priority": "words:" + " ".join(t.value for t in Tier),
        "--state": "words:" + " ".join(s.value for s in JobState),
        "--signal": "words:" + _SIGNALS,
        "--preempt-mode": "words:freeze signal auto",
        "--host": "hosts",
        "--identity": "files",
        "--after": "jobs:after",
        "--afterok": "jobs:after",
        "--afternotok": "jobs:after",
        "--afterstart": "jobs:after",
        "--cwd": "dirs",
        "--dir": "dirs",
        "--user": "users",
        "--mail": "users",
        "--policy": "words:" + " ".join(POLICY_CHOICES),
        "--format": "words:" + " ".join(("auto", *FORMATS)),
        "--shell": "words:" + " ".join(SHELLS),
    }


# What each command's arguments are, by the parameter's name. "command" is a command line of
# its own (gq submit): its first word a program or script, the rest its arguments.
ARGUMENT_KINDS = {"ids": "jobs", "id": "jobs", "command": "command", "trace": "files",
                  "host": "none", "name": "hosts", "names": "hosts",  # gq peers
                  "file": "files", "backup": "files",
                  "shells": "words:" + " ".join(SHELLS), "shell": "words:" + " ".join(SHELLS)}


@dataclass(frozen=True)
class OptionSpec:
    flags: tuple[str, ...]  # long first: ("--gpus", "-g")
    help: str
    kind: str | None  # None for a flag that takes no value


@dataclass(frozen=True)
class CommandSpec:
    path: tuple[str, ...]  # () is gq itself; ("daemon", "stop")
    help: str
    subcommands: tuple[str, ...]
    options: tuple[OptionSpec, ...]
    argument: str | None  # the kind of its positional arguments


def _summary(text: str | None) -> str:
    """The first sentence of a help text, on one line, without its [default: ...]."""
    import re

    text = (text or "").split("  [", 1)[0]
    text = re.split(r"(?<!e\.g)(?<!i\.e)\.\s|;\s", " ".join(text.split()), maxsplit=1)[0]
    return text.rstrip(".")


def _argument_kind(path: tuple[str, ...], name: str) -> str:
    kind = ARGUMENT_KINDS.get(name)
    if kind is None:
        raise KeyError(f"gq {' '.join(path)}: argument {name!r} has no completion kind; add it "
                       "to ARGUMENT_KINDS in gq/cli/completion.py")
    return f"jobs:{path[-1]}" if kind == "jobs" else kind


def _spec(path: tuple[str, ...], cmd, ctx, kinds: dict[str, str]) -> CommandSpec:
    options, argument = [], None
    for param in cmd.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            argument = _argument_kind(path, param.name)
            continue
        flags = tuple(sorted(param.opts, key=lambda f: (not f.startswith("--"), f)))
        takes_value = not (param.is_flag or getattr(param, "count", False))
        kind = kinds.get(flags[0], "none") if takes_value else None
        options.append(OptionSpec(flags, _summary(param.help), kind))
    options.append(OptionSpec(("--help", "-h"), "show the help and exit", None))
    subcommands = ()
    if hasattr(cmd, "list_commands"):
        subcommands = tuple(n for n in cmd.list_commands(ctx)
                            if not cmd.get_command(ctx, n).hidden)
    return CommandSpec(path, _summary(cmd.help), subcommands, tuple(options), argument)


def command_specs() -> list[CommandSpec]:
    """Every command and group of the app, depth first, in the order of `gq --help`."""
    import typer

    from gq.cli.app import app

    kinds = _option_kinds()
    found: list[CommandSpec] = []

    def walk(path: tuple[str, ...], cmd, parent) -> None:
        ctx = typer.Context(cmd, info_name=path[-1] if path else "gq", parent=parent)
        found.append(_spec(path, cmd, ctx, kinds))
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if not sub.hidden:
                    walk((*path, name), sub, ctx)

    walk((), typer.main.get_command(app), None)
    return found


def script(shell: str) -> str:
    from gq.cli import completion_render

    render = {"bash": completion_render.bash, "zsh": completion_render.zsh,
              "fish": completion_render.fish}[shell]
    return render(command_specs())


# ---- installing ------------------------------------------------------------------------


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def install_path(shell: str) -> Path:
    """Where each shell finds a user's completions without help: bash-completion's and fish's
    per-user directories; for zsh a directory that must be on $fpath (install says how)."""
    if shell == "bash":
        base = os.environ.get("BASH_COMPLETION_USER_DIR") or _data_home() / "bash-completion"
        return Path(base) / "completions" / "gq"
    if shell == "zsh":
        return _data_home() / "zsh" / "site-functions" / "_gq"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "fish" / "completions" / "gq.fish"


def _bash_hint(path: Path) -> str | None:
    for loader in ("/usr/share/bash-completion/bash_completion", "/etc/bash_completion"):
        if os.path.exists(loader):
            return None  # bash-completion loads it on the first Tab after `gq`
    return f"bash-completion is not installed: add to ~/.bashrc:  source {path}"


def _zsh_hint(path: Path) -> str:
    return (f"add to ~/.zshrc, before compinit:  fpath=({path.parent} $fpath)  "
            "(then: autoload -U compinit && compinit)")


def rc_lines(shell: str) -> list[str]:
    """What a new `shell` still needs in its startup file for the installed script to load
    (none where the shell finds it by itself)."""
    path = install_path(shell)
    if shell == "bash":
        return [] if _bash_hint(path) is None else [f"source {_shown(path)}"]
    if shell == "zsh":
        return [f"fpath=({_shown(path.parent)} $fpath)", "autoload -U compinit && compinit"]
    return []


def _shown(path: Path) -> str:
    """Spelled with $HOME when under it, so that the line can be copied as it is."""
    home = str(Path.home())
    text = str(path)
    return "$HOME" + text[len(home):] if text.startswith(home + "/") else text


def install(shells: list[str]) -> list[str]:
    """Write each shell's script; return one line per shell saying where, and what is left."""
    lines = []
    for shell in shells:
        path = install_path(shell)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(script(shell))
        os.replace(tmp, path)
        hint = _bash_hint(path) if shell == "bash" else _zsh_hint(path) if shell == "zsh" else None
        lines.append(f"{shell}: {path}" + (f"\n  {hint}" if hint else ""))
    return lines

