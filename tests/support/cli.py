"""`gq ARGS...` run in the test process, as the console script runs it, its output captured.

A fresh `python -m gq` costs a tenth of a second of CPU or more (the interpreter, Typer, gq's
CLI); the suite makes about a thousand such calls whose point is what gq answers, not the
process boundary. This runs `gq.cli.entry.main` instead, with the caller's environment, working
directory and standard streams swapped in for the call and put back after it. What stays true
only of a real process (the installed entry point, exit statuses set by the interpreter,
bytes that are not UTF-8 in argv) is tested through `gq_process` and a few tests of its own.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import traceback

# One call at a time in this process: the environment, the directory and the streams are the
# process's own. (Under xdist each worker is a process of its own.)
_ONE_AT_A_TIME = threading.RLock()
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP)


def gq_in_process(argv: list[str], env: dict[str, str], cwd: str | os.PathLike,
                  stdin: str = "") -> subprocess.CompletedProcess:
    """What `subprocess.run([python, -m, gq, *argv], env=env, cwd=cwd, capture_output=True,
    text=True)` would give, without the process."""
    from gq.cli.entry import main

    with _ONE_AT_A_TIME:
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        saved_streams = sys.stdin, sys.stdout, sys.stderr
        saved_argv, saved_umask = sys.argv, os.umask(0o022)
        os.umask(saved_umask)
        saved_handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
        out, err = io.BytesIO(), io.BytesIO()
        # As a pipe is opened for a Python process: UTF-8, strict on stdout (the entry point
        # reconfigures it), backslashreplace on stderr.
        streams = (io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"),
                   io.TextIOWrapper(out, encoding="utf-8", write_through=True),
                   io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace",
                                    write_through=True))
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.argv = ["gq", *argv]
        try:
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            try:
                main(list(argv))
                code = 0
            except SystemExit as e:
                code = _exit_status(e.code)
            except Exception:  # what the interpreter would print, and its status
                traceback.print_exc()
                code = 1
        finally:
            for stream in streams[1:]:
                stream.flush()
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            os.umask(saved_umask)
            for sig, handler in saved_handlers.items():
                if handler is not None and signal.getsignal(sig) is not handler:
                    signal.signal(sig, handler)  # (only the main thread can set them)
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            sys.argv = saved_argv
        result = subprocess.CompletedProcess(["gq", *argv], code, out.getvalue().decode("utf-8"),
                                             err.getvalue().decode("utf-8"))
        for stream in streams:
            stream.detach()  # else closing the wrapper closes what it wrapped
        return result


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # sys.exit("message"), as the interpreter does
    return 1


def gq_process(argv: list[str], env: dict[str, str], cwd: str | os.PathLike,
               timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m gq ARGS...`: a real process, for what only a process shows."""
    return subprocess.run([sys.executable, "-m", "gq", *argv], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def gq(*argv: str, cwd: str | os.PathLike = ".", env: dict[str, str] | None = None,
       check: bool = False) -> subprocess.CompletedProcess:
    """`gq ARGV...` in this process, in this process's environment unless given one: for the
    commands that need no daemon (gq sim, gq triage, gq config check)."""
    proc = gq_in_process(list(argv), dict(os.environ) if env is None else env, cwd)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout,
                                            proc.stderr)
    return proc
