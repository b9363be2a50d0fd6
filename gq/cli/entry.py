"""The `gq` console script: `submit`, the hot commands (gq/cli/commands.py) and shell
completion on a light path, the rest (and --help) through Typer."""

from __future__ import annotations

import sys

# Python's builtin beneath `signal`, without the enums that cost a millisecond on every command.
import _signal


def _exit_interrupted(signum: int, frame: object) -> None:
    """Ctrl-C while gq loads or once its command has ended: nothing is left to undo, so end
    at once as a shell reports an interrupt (130), not by a KeyboardInterrupt escaping every
    handler (a traceback, and death by SIGINT: -2 to the caller)."""
    import os

    try:
        sys.stdout.flush()
    except Exception:  # interrupted in the middle of a flush, or a reader that has gone
        pass
    os._exit(128 + signum)


def _on_interrupt(handler) -> None:
    """SIGINT's handler from now on, unless SIGINT is ignored (started in the background:
    `gq ... &` leaves Ctrl-C to the foreground job, as any program should)."""
    if _signal.getsignal(_signal.SIGINT) != _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, handler)


def fail(message: str, code: int) -> int:
    # One line whatever the message quotes: a value with a newline or an escape sequence
    # in it is shown escaped, as `ls -b` shows it (gq/escapes.py).
    from gq.escapes import escape_controls

    print(f"gq: {escape_controls(message)}", file=sys.stderr)
    return code


def submit(argv: list[str]) -> int:
    from gq.cli.jobs_cmd import submit
    from gq.cli.submit_args import parse_argv

    values, command = parse_argv(argv)
    submit(command, **values)
    return 0


def run_foreground(argv: list[str]) -> int:
    from gq.cli.run_cmd import run_job
    from gq.cli.submit_args import parse_argv

    values, command = parse_argv(argv, run=True)
    return run_job(command, values)


def _is_fast_submit(argv: list[str], names: tuple[str, ...] = ("submit", "add")) -> bool:
    if not argv or argv[0] not in names:
        return False
    for arg in argv[1:]:
        if arg == "--" or not arg.startswith("-"):
            return True
        if arg in ("--help", "-h"):
            return False
    return True


def main(argv: list[str] | None = None, light: bool = True) -> None:
    """Run gq with `argv`; light=False: every command through Typer (the tests compare).
    Without argv, as the console script: a command served on the light path ends the process
    at once (_exit_now)."""
    process = argv is None
    if process:  # first of all: a Ctrl-C from here on ends gq with 130, whenever it lands
        _on_interrupt(_exit_interrupted)
    from gq.protocol import GqError

    argv = sys.argv[1:] if argv is None else argv
    served_light = True
    # Arguments that were not UTF-8 arrive as lone surrogates (PEP 383). What gq prints for
    # people shows them as `ls -b` does (\377, gq/escapes.py); JSON escapes them (\udcff);
    # anything else that prints one (a --dry-run's command) writes the byte it was.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="surrogateescape")
    if process:  # while the command runs, it may undo what it began (KeyboardInterrupt)
        _on_interrupt(_signal.default_int_handler)
    try:
        if argv[:1] == ["__complete"]:  # the shell completion scripts, at every Tab: light
            from gq.cli.complete_fast import complete

            code = complete(argv[1:])
        elif argv[:1] == ["rpc"]:  # a peer's relay, over SSH (gq/remote/relay.py): light
            from gq.remote.relay import main as relay

            served_light = False  # it ends as any process does, its threads joined
            code = relay(argv[1:])
        elif light and argv[:2] == ["daemon", "run"] and argv[2:] in ([], ["--system"]):
            # As the CLI and systemd start a daemon: without building Typer's commands, a
            # tenth of a second of CPU at every start. Any other form (--help) is Typer's.
            from gq.daemon.main import run_for

            served_light = False  # a daemon ends as any process does
            code = run_for(system=argv[2:] == ["--system"])
        elif light and _is_fast_submit(argv):
            code = submit(argv[1:])
        elif light and _is_fast_submit(argv, ("run",)):
            code = run_foreground(argv[1:])
        else:
            from gq.cli.light import run as run_light

            code = run_light(argv) if light else None
            if code is None:  # not a hot command, or not sure: Typer's turn
                served_light = False
                from gq.cli.app import run

                code = run(argv)
    except GqError as e:
        code = fail(e.message, e.code)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    if process:  # what it began is undone or ended: an interrupt now only ends it sooner
        _on_interrupt(_exit_interrupted)
    if process and served_light:
        _exit_now(code)
    if process:
        _flush_stdout()
    sys.exit(code)


def _flush_stdout() -> None:
    """Write out stdout now, where a reader that has gone is no error: left to the interpreter's
    exit, that flush would print 'Exception ignored' and exit 120 (`gq config show | head`)."""
    try:
        sys.stdout.flush()
    except OSError:  # a reader that has gone (EPIPE), or a terminal (EIO after a hang-up)
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown, which frees every object one by one:
    6 ms of `gq ls --all`'s 80 over 10,000 jobs, and a few for any command. The light path
    registers no exit handlers and holds nothing but its socket, which the kernel closes;
    what is buffered for stdout and stderr is written first."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # `gq ls | head`: the reader has what it wanted
            pass
        except (OSError, ValueError):
            code = code or 1
    os._exit(0 if code is None else code if isinstance(code, int) else 1)
