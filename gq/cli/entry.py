"""The `gq` console script: `submit`, the hot commands (gq/cli/commands.py) and shell
completion on a light path, the rest (and --help) through Typer."""

from __future__ import annotations

import sys

from gq.protocol import GqError


def fail(message: str, code: int) -> int:
    # One line whatever the message quotes: a value with a newline or an escape sequence
    # in it is shown escaped, as repr() would.
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    print(f"gq: {line}", file=sys.stderr)
    return code


def submit(argv: list[str]) -> int:
    from gq.cli.jobs_cmd import submit
    from gq.cli.submit_args import parse_argv

    values, command = parse_argv(argv)
    submit(command, **values)
    return 0


def _is_fast_submit(argv: list[str]) -> bool:
    if not argv or argv[0] not in ("submit", "add"):
        return False
    for arg in argv[1:]:
        if arg == "--" or not arg.startswith("-"):
            return True
        if arg in ("--help", "-h"):
            return False
    return True


def main(argv: list[str] | None = None, light: bool = True) -> None:
    """Run gq with `argv`; light=False: every command through Typer (the tests compare)."""
    argv = sys.argv[1:] if argv is None else argv
    # Arguments that were not UTF-8 arrive as lone surrogates (PEP 383), and are printed back
    # as the bytes they were, as `ls` prints such names; JSON output escapes them (\udcff).
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="surrogateescape")
    try:
        if argv[:1] == ["__complete"]:  # the shell completion scripts, at every Tab: light
            from gq.cli.complete_fast import complete

            code = complete(argv[1:])
        elif argv[:1] == ["rpc"]:  # a peer's relay, over SSH (gq/remote/relay.py): light
            from gq.remote.relay import main as relay

            code = relay(argv[1:])
        elif light and _is_fast_submit(argv):
            code = submit(argv[1:])
        else:
            from gq.cli.light import run as run_light

            code = run_light(argv) if light else None
            if code is None:  # not a hot command, or not sure: Typer's turn
                from gq.cli.app import run

                code = run(argv)
    except GqError as e:
        code = fail(e.message, e.code)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code)
