#!/usr/bin/env python3
"""Generate docs/cli.md from the `--help` of every gq command; `--check` fails when it is stale."""

from __future__ import annotations

import argparse
import difflib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
COLUMNS = "100"  # a fixed width, so the file does not depend on the terminal it was made in

sys.path.insert(0, str(ROOT))


def commands() -> list[tuple[tuple[str, ...], object]]:
    """Every visible command and group of the app, depth first in registration order.

    Each entry is (path, click command); the root is (), `gq daemon stop` is ("daemon", "stop").
    """
    import typer

    from gq.cli.app import app

    found = []

    # Duck typing, not isinstance(click.Group): newer Typer vendors its own copy of click.
    def walk(path: tuple[str, ...], cmd, parent) -> None:
        found.append((path, cmd))
        if hasattr(cmd, "list_commands"):
            ctx = typer.Context(cmd, info_name=path[-1] if path else "gq", parent=parent)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk((*path, name), sub, ctx)

    walk((), typer.main.get_command(app), None)
    return found


def command_names() -> list[str]:
    """'gq', 'gq submit', ..., 'gq daemon stop': what the docs must mention."""
    return [" ".join(("gq", *path)) for path, _ in commands()]


def help_text(path: tuple[str, ...]) -> str:
    from typer.testing import CliRunner

    from gq.cli.app import app

    result = CliRunner().invoke(
        app, [*path, "--help"], prog_name="gq", env={"COLUMNS": COLUMNS, "TERM": "dumb"}
    )
    if result.exit_code != 0:
        raise RuntimeError(f"gq {' '.join(path)} --help exited {result.exit_code}: "
                           f"{result.output}")
    return "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())


def _hot_names() -> str:
    from gq.cli.commands import ALIASES, COMMANDS

    alias = {target: name for name, target in ALIASES.items()}
    return ", ".join(f"`{n}`" + (f"/`{alias[n]}`" if n in alias else "") for n in COMMANDS)


def _anchor(name: str) -> str:
    return name.lower().replace(" ", "-")


def render() -> str:
    entries = commands()
    first_name: dict[object, str] = {}  # callback -> the command that owns it
    aliases: dict[str, str] = {}
    for path, cmd in entries:
        callback = inspect.unwrap(cmd.callback) if cmd.callback else None
        name = " ".join(("gq", *path))
        if callback is not None and callback in first_name and path:
            aliases[name] = first_name[callback]
        elif callback is not None:
            first_name[callback] = name
    out = [
        "# gq command reference",
        "",
        "Generated from each command's `--help` by `scripts/gen_cli_docs.py`; do not edit by "
        "hand.",
        "After changing a command, run `python scripts/gen_cli_docs.py` "
        "(`tests/unit/test_docs.py` fails while this file is stale).",
        "",
        f"For contributors: the commands people type most ({_hot_names()}) are data, one "
        "table in `gq/cli/commands.py`: each command's help, argument and options (flags, "
        "type, metavar, help). `gq/cli/light.py` parses their argv with it, without importing "
        "Typer (so that a command costs little more than starting Python), and "
        "runs the command's function in `gq/cli/jobs_cmd.py`; the Typer commands, and through "
        "them `--help`, shell completion and this page, are made from the same table "
        "(`gq/cli/typer_table.py`). Whatever the light parser is not sure of (`--help`, an "
        "unknown option, a bad number, a value that starts with `-`) goes to Typer, so help, "
        "error lines and exit codes are Typer's either way; `tests/test_light_path.py` "
        "compares the two paths option by option and answer by answer. `gq submit`'s options "
        "are in the table too, but its argv has a parser of its own "
        "(`gq/cli/submit_args.py`), as the options after its command belong to the command. "
        "To change one of these commands, change the table (and the function), then "
        "regenerate this page and the completion scripts.",
        "",
    ]
    out += [f"- [{' '.join(('gq', *p))}](#{_anchor(' '.join(('gq', *p)))})" for p, _ in entries]
    for path, _ in entries:
        name = " ".join(("gq", *path))
        out += ["", f"## {name}", ""]
        if name in aliases:
            target = aliases[name]
            out.append(f"Alias of [`{target}`](#{_anchor(target)}): the same options and "
                       "arguments.")
            continue
        out += ["```text", help_text(path), "```"]
    return "\n".join(out) + "\n"


def check(path: Path = DOC) -> str | None:
    """None when `path` is up to date, else a unified diff of what would change."""
    want = render()
    have = path.read_text() if path.exists() else ""
    if have == want:
        return None
    diff = difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                f"{path} (on disk)", f"{path} (generated)")
    return "".join(diff)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/cli.md is stale, instead of rewriting it")
    args = parser.parse_args(argv)
    if args.check:
        diff = check()
        if diff is None:
            return 0
        sys.stdout.write(diff)
        print(f"{DOC.relative_to(ROOT)} is stale: run python scripts/gen_cli_docs.py",
              file=sys.stderr)
        return 1
    DOC.write_text(render())
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
