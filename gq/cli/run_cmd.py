"""`gq run`: a job queued like any, then run in the foreground, attached to the caller's
terminal or pipes through its shim (gq/protocol/attach.py, docs/run.md); gq run ends as the job
does. Light: no Typer, no daemon module."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import time
from typing import Any

from gq.cli.client import call, submit_job, wait_for_jobs
from gq.escapes import escape_controls
from gq.protocol import BAD_INPUT, GqError
from gq.protocol.attach import POLL, channel, new_key, peer_uid
from gq.protocol.fdpass import receive, send
from gq.protocol.op_names import Op

STATUS_EVERY = 1.0  # seconds between two looks at why the job waits
WAITING = ("pending", "held", "running", "preempting", "frozen")
FORWARDED = (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTERM, signal.SIGHUP)
STOP_WORDS = {"cancel": "cancelled", "time_up": "its time limit was reached (SIGTERM, then "
              "SIGKILL after its grace)", "interrupt": "cancelled by a second Ctrl-C",
              "hangup": "cancelled: its terminal went away"}


def run_job(command: list[str], values: dict[str, Any]) -> int:
    from gq.cli.submit_args import request_args

    if values.get("host"):
        raise GqError(f"gq run --host {values['host']}: not yet; run on this host, or "
                      "`gq submit --host` and `gq logs -f`", BAD_INPUT)
    if not command:  # as salloc: a shell on the allocation
        command = [os.environ.get("SHELL") or "/bin/sh"]
    args = request_args(values, command)
    key, tty = new_key(), os.isatty(0)
    args["attach"] = {"key": key, "tty": tty, "no_hangup": bool(values.get("no_hangup")),
                      "log": bool(values.get("log"))}
    job = submit_job(args)
    for note in job.get("notes", ()):
        print(f"gq: {escape_controls(note)}", file=sys.stderr)
    return Run(job["id"], key, tty).go()


class Run:
    """One `gq run` after its submit: wait (a status line), attach, relay signals, end."""

    def __init__(self, job_id: int, key: str, tty: bool):
        self.job_id, self.key, self.tty = job_id, key, tty
        self.sock: socket.socket | None = None
        self.status_tty = os.isatty(2)
        self.shown = ""
        self.saved = None

    def go(self) -> int:
        try:
            ended = self.wait_to_start()
        except KeyboardInterrupt:
            return self.cancel_waiting(signal.SIGINT)
        except _Signalled as e:
            return self.cancel_waiting(e.signo)
        if ended is not None:
            return ended
        return self.attached()

    # -- waiting ---------------------------------------------------------------------------
    def wait_to_start(self) -> int | None:
        """Until the job's shim takes us (None), or the job ended without us (its code)."""
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise)
        look = 0.0
        while True:
            sock = self._connect()
            if sock is not None:
                self.sock = sock
                self._status("")
                return None
            now = time.monotonic()
            if now >= look:
                look = now + STATUS_EVERY
                ended = self._look()
                if ended is not None:
                    return ended
            time.sleep(POLL)

    def _connect(self) -> socket.socket | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            sock.connect(channel(self.key))
        except OSError:
            sock.close()
            return None
        if peer_uid(sock) not in (0, os.getuid()):  # not the daemon's shim: never our terminal
            sock.close()
            return None
        return sock

    def _look(self) -> int | None:
        try:
            why = call(Op.WHY, id=str(self.job_id))
        except GqError as e:  # the daemon restarting: the job is queued all the same
            self._status(f"job {self.job_id}: waiting (the daemon does not answer: {e.message})")
            return None
        if why.get("state") not in WAITING:
            self._status("")
            print(f"gq: job {self.job_id} {why.get('state')} before it attached: "
                  f"{escape_controls(_first_line(why.get('why', '')))}", file=sys.stderr)
            return 1
        if why.get("state") in ("pending", "held", "frozen"):
            self._status(f"job {self.job_id} waiting (Ctrl-C cancels): {_short(why)}")
        return None

    def _status(self, line: str) -> None:
        """One updating line on a terminal; elsewhere one line, once. Escaped: `gq why`'s
        words quote what users typed (gq/escapes.py)."""
        line = escape_controls(line)
        if self.status_tty:
            if line != self.shown:
                width = os.get_terminal_size(2).columns - 1 if line else 0
                sys.stderr.write(f"\r\x1b[K{line[:width]}" if line else "\r\x1b[K")
                sys.stderr.flush()
        elif line and not self.shown:
            print(f"gq: {line}", file=sys.stderr, flush=True)
        if line or self.status_tty:
            self.shown = line

    def cancel_waiting(self, signo: int) -> int:
        self._status("")
        try:
            call(Op.CANCEL, ids=[str(self.job_id)])
            print(f"gq: job {self.job_id} cancelled before it started", file=sys.stderr)
        except GqError as e:
            print(f"gq: job {self.job_id}: could not cancel it: {e.message}", file=sys.stderr)
        return 128 + signo

    # -- attached --------------------------------------------------------------------------
    def attached(self) -> int:
        hello: dict[str, Any] = {"tty": self.tty}
        if self.tty:
            import termios

            try:
                self.saved = termios.tcgetattr(0)
                size = os.get_terminal_size(0)
                hello.update(rows=size.lines, cols=size.columns)
            except (termios.error, OSError):
                pass
        for sig in FORWARDED:
            signal.signal(sig, self._forward)
        signal.signal(signal.SIGWINCH, self._winch)
        signal.signal(signal.SIGCONT, self._continued)
        try:
            send(self.sock, {"hello": hello}, [0, 1, 2])
            end = self._follow()
        finally:
            self._restore()
        return self._ended(end)

    def _follow(self) -> dict | None:
        while True:
            try:
                message, fds = receive(self.sock)
            except OSError:
                message, fds = None, []
            for fd in fds:
                os.close(fd)
            if message is None:
                return None
            if "exit" in message:
                return message
            if "stopped" in message:  # Ctrl-Z: the caller's shell gets its terminal back
                self._restore()
                os.kill(os.getpid(), signal.SIGSTOP)

    def _forward(self, signo, _frame) -> None:
        self._say({"signal": int(signo)})

    def _winch(self, _signo, _frame) -> None:
        try:
            size = os.get_terminal_size(0)
        except OSError:
            return
        self._say({"winch": [size.lines, size.columns]})

    def _continued(self, _signo, _frame) -> None:
        """Resumed after Ctrl-Z: by `fg`, the job goes on; by `bg`, this stays stopped (the
        job with it), as the shim would otherwise read the terminal from under the shell."""
        if self.tty and not _in_foreground():
            os.kill(os.getpid(), signal.SIGSTOP)
            return
        self._say({"continue": 1})

    def _say(self, message: dict) -> None:
        try:
            send(self.sock, message, [])
        except OSError:
            pass

    def _restore(self) -> None:
        if self.saved is not None:
            import termios

            try:
                termios.tcsetattr(0, termios.TCSADRAIN, self.saved)
            except termios.error:
                pass

    def _ended(self, end: dict | None) -> int:
        for sig in (*FORWARDED, signal.SIGWINCH, signal.SIGCONT):
            signal.signal(sig, signal.SIG_DFL)
        if end is None:  # the shim went away without a word: the daemon knows the end
            from gq.wording.arrays import wait_status

            return wait_status(wait_for_jobs([str(self.job_id)]))
        if end.get("stop") in STOP_WORDS:
            print(f"\r\ngq: job {self.job_id} {STOP_WORDS[end['stop']]}", file=sys.stderr)
        if end.get("stop") == "interrupt":  # killed, but as a Ctrl-C: a shell loop stops
            return _die_by(signal.SIGINT)
        if end.get("signal"):
            return _die_by(int(end["signal"]))
        code = end.get("exit")
        return 1 if code is None else int(code)


class _Signalled(Exception):
    def __init__(self, signo: int):
        self.signo = signo


def _raise(signo, _frame):
    raise _Signalled(signo)


def _in_foreground() -> bool:
    """Whether this process's group holds its terminal (True where that cannot be known)."""
    try:
        return os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return True


def _die_by(signo: int) -> int:
    """End by the signal that ended the job, so that a shell loop around gq run stops as it
    would for the command itself; 128+N where that signal does not end us."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        signal.signal(signo, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signo])
        os.kill(os.getpid(), signo)
    except (OSError, ValueError):
        pass
    return 128 + signo


def _short(why: dict) -> str:
    """`gq why` in short: its first sentence less the job's own words, and when it may start."""
    line = _first_line(why.get("why", ""))
    line = re.sub(r"^Job \S+ is ", "", line).rstrip(".")
    if why.get("ahead") is not None:  # its place in the order the scheduler considers them
        line = f"{why['ahead']} waiting ahead of it; {line}"
    if why.get("expected_start"):
        line += f"; expected to start {why['expected_start'][11:16]} UTC"
    return line


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "waiting"
