"""The shim's end of a `gq run` (gq/protocol/attach.py): it waits for the caller's descriptors,
gives the job the caller's pipes, or a pseudo-terminal of its own relayed to the caller's
terminal, and tells the caller how the job ends. It lives in the shim, so it outlives the daemon.

The relay is a thread of the shim: the shim's main thread goes on reaping and taking the
daemon's requests (gq/daemon/shim.py) as for any run; the thread wakes it (SIGCHLD, which it
waits for) when the caller asks for an end: a hang-up, or a second interrupt.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import struct
import termios
import threading
import time
import tty
from typing import Callable

from gq.daemon.relay_io import SIGTSTP_BIT, drain, read_some, signal_mask, write_all
from gq.protocol.attach import ATTACH_WAIT, DOUBLE_INTERRUPT, channel, peer_uid
from gq.protocol.fdpass import receive, send


class Attached:
    """A run attached to its `gq run`: the caller's connection and descriptors (stdin, stdout,
    stderr), and with a terminal the pseudo-terminal's master the relay copies to and from."""

    def __init__(self, conn: socket.socket, hello: dict, fds: list[int], no_hangup: bool,
                 log: bool = False):
        self.conn, self.fds, self.no_hangup, self.log = conn, fds, no_hangup, log
        self.tty = bool(hello.get("tty")) and len(fds) == 3 and os.isatty(fds[0])
        self.size = (int(hello.get("rows") or 24), int(hello.get("cols") or 80))
        self.master: int | None = None
        self.slave: int | None = None
        self.saved: list | None = None  # the caller's terminal settings, put back at the end
        self.pid: int | None = None  # the job's main process: the group signals go to
        self.stop: str | None = None  # an end the caller asked for: "hangup", "interrupt"
        self.gone = False  # the caller hung up; the job goes on (--no-hangup)
        self.paused = threading.Event()  # the job stopped (Ctrl-Z): the caller's input waits
        self.last_interrupt = 0.0
        self._main = threading.get_ident()
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._ending = False
        self._thread: threading.Thread | None = None
        # --log: the job's logs (out, err), which its process opens as its user and passes
        # back on a socket pair; without a terminal, the pipes its stdout and stderr are, whose
        # read ends the relay copies to the caller's and to the logs.
        self.logs: list[int] = []
        self._log_pass: tuple[socket.socket, socket.socket] | None = None
        self.pipes: dict[int, list[int]] = {}  # read end -> [the caller's descriptor, its log's]
        self._job_ends: list[int] = []

    # -- before the job starts -------------------------------------------------------------
    def prepare(self, uid: int | None, gid: int | None) -> None:
        """The job's own pseudo-terminal, sized as the caller's, owned by the job's user and
        closed to everyone else; the caller's terminal in raw mode, the job's doing the rest.
        With --log and no terminal: the pipes the job writes to."""
        if self.log:
            self._log_pass = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        if not self.tty:
            if self.log:
                (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
                self.pipes = {out_r: [self.fds[1], 0], err_r: [self.fds[2], 1]}
                self._job_ends = [out_w, err_w]
            return
        self.master, self.slave = os.openpty()
        if uid is not None:
            os.fchown(self.slave, uid, -1 if gid is None else gid)
        os.fchmod(self.slave, 0o600)
        try:
            self.saved = termios.tcgetattr(self.fds[0])
            termios.tcsetattr(self.slave, termios.TCSANOW, self.saved)  # as the caller types
            tty.setraw(self.fds[0], termios.TCSANOW)
        except termios.error:
            pass
        self.resize(*self.size)

    def job_stdio(self) -> None:
        """In the job's forked process, before exec: the caller's pipes as its stdin, stdout
        and stderr, or the terminal as its controlling terminal (a session of its own)."""
        if self.slave is None:
            for i, fd in enumerate([self.fds[0], *(self._job_ends or self.fds[1:])]):
                os.dup2(fd, i)
            os.setpgid(0, 0)
            return
        os.setsid()
        fcntl.ioctl(self.slave, termios.TIOCSCTTY, 0)
        for i in range(3):
            os.dup2(self.slave, i)

    def give_logs(self, out: int, err: int) -> None:
        """In the job's forked process, its logs opened as its user: to the shim (--log)."""
        if self._log_pass is not None:
            send(self._log_pass[1], {"logs": 1}, [out, err])

    def _take_logs(self) -> None:
        for fd in self._job_ends:
            os.close(fd)
        self._job_ends = []
        if self._log_pass is None:
            return
        ours, theirs = self._log_pass
        self._log_pass = None
        theirs.close()
        ours.setblocking(False)  # sent before the exec that the shim waited for
        try:
            fds = receive(ours)[1]
        except OSError:
            fds = []
        ours.close()
        if len(fds) == 2:
            self.logs = fds
        else:
            for fd in fds:
                os.close(fd)

    def started(self, pid: int) -> None:
        self.pid = pid
        self._take_logs()
        if self.slave is not None:
            os.close(self.slave)  # the relay sees the end of output once the job's tree closes it
            self.slave = None
        self._say({"started": 1})
        self._thread = threading.Thread(target=self._relay, name="gq-relay", daemon=True)
        self._thread.start()

    # -- while it runs ---------------------------------------------------------------------
    def asked_stop(self) -> tuple[str, float] | None:
        """An end the caller asked for, and how long what is left may take before SIGKILL."""
        if self.stop == "interrupt":
            return self.stop, 0.0
        if self.stop == "hangup":
            return self.stop, -1.0  # the shim's kill_wait
        return None

    def job_stopped(self) -> None:
        """The job's main process stopped (Ctrl-Z): the caller gets its terminal back."""
        self.paused.set()
        os.write(self._wake_w, b"x")  # the relay, in a select on the caller's terminal, lets go
        self._restore()
        self._say({"stopped": 1})

    def resize(self, rows: int, cols: int) -> None:
        if self.master is not None:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("4H", rows, cols, 0, 0))

    def _foreground(self) -> int | None:
        if self.master is not None:
            try:
                return os.tcgetpgrp(self.master)
            except OSError:
                pass
        return self.pid

    def forward(self, signo: int) -> None:
        """A signal sent to `gq run`, to the job's foreground process group; a second
        interrupt within DOUBLE_INTERRUPT seconds ends the run at once."""
        if signo == signal.SIGINT:
            now = time.monotonic()
            if now - self.last_interrupt < DOUBLE_INTERRUPT:
                self._end("interrupt")
                return
            self.last_interrupt = now
        group = self._foreground()
        if group:
            try:
                os.killpg(group, signo)
            except OSError:
                pass

    def _typed(self, data: bytes) -> None:
        """What the caller typed, to the job's terminal: an interrupt character that the
        terminal turns into SIGINT counts as an interrupt (a program in raw mode, an editor,
        gets it as a key, and no second one cancels)."""
        suspend = False
        try:
            attrs = termios.tcgetattr(self.master)
            intr, susp = attrs[6][termios.VINTR], attrs[6][termios.VSUSP]
            if attrs[3] & termios.ISIG and intr in data:
                now = time.monotonic()
                if now - self.last_interrupt < DOUBLE_INTERRUPT:
                    self._end("interrupt")
                    return
                self.last_interrupt = now
            suspend = bool(attrs[3] & termios.ISIG) and susp in data
        except (termios.error, IndexError):
            pass
        write_all(self.master, data)
        if suspend:
            self._suspend()

    def _suspend(self) -> None:
        """Ctrl-Z: the terminal sends SIGTSTP to the job's foreground group, but the kernel
        drops it for the job's own group, orphaned (its parent, the shim, is in another
        session), where no shell's job control would act on it. Stop that group as a shell
        would (the shim's loop then gives the caller its terminal back), unless its leader
        takes SIGTSTP itself (an editor stops itself) or ignores it. Groups that a shell in the
        job made (its own jobs) are not orphaned: the terminal stops them."""
        if self.pid is None or self._foreground() != self.pid:
            return
        if SIGTSTP_BIT & (signal_mask(self.pid, "SigCgt") | signal_mask(self.pid, "SigIgn")):
            return
        try:
            os.killpg(self.pid, signal.SIGSTOP)
        except OSError:
            pass

    def _end(self, stop: str) -> None:
        if self.stop is None:
            self.stop = stop
            signal.pthread_kill(self._main, signal.SIGCHLD)  # the shim's loop takes it

    def _hangup(self) -> None:
        if self.gone:
            return
        self.gone = True
        self._restore()
        if not self.no_hangup:
            self._end("hangup")

    def _relay(self) -> None:
        out = self.fds[1] if self.tty else None
        while True:
            watched = [self._wake_r]
            if not self.gone:
                watched.append(self.conn.fileno())
            if self.master is not None:
                watched.append(self.master)
                if not self.gone and not self.paused.is_set():
                    watched.append(self.fds[0])
            elif self._ending and not self.pipes:
                return
            watched += self.pipes
            try:
                ready = select.select(watched, [], [], None)[0]
            except InterruptedError:
                continue
            if self._wake_r in ready:
                drain(self._wake_r)
            if self.conn.fileno() in ready and not self.gone:
                self._message()
            if self.master is not None and self.master in ready:
                data = read_some(self.master)
                if not data:  # the job's tree closed its terminal
                    os.close(self.master)
                    self.master = None
                else:
                    if self.logs:
                        write_all(self.logs[0], data)
                    if out is not None and not self.gone and not write_all(out, data):
                        self._hangup()
            for fd in [fd for fd in self.pipes if fd in ready]:
                self._piped(fd)
            if (self.master is not None and self.fds[0] in ready and not self.gone
                    and not self.paused.is_set()):
                data = read_some(self.fds[0])
                if data:
                    self._typed(data)
                else:  # the caller's terminal went away (ssh dropped)
                    self._hangup()

    def _piped(self, fd: int) -> None:
        """The job's stdout or stderr (--log, no terminal): to its log and to the caller's."""
        data = read_some(fd)
        if not data:
            os.close(fd)
            del self.pipes[fd]
            return
        caller, log = self.pipes[fd]
        if self.logs:
            write_all(self.logs[log], data)
        if caller >= 0 and not write_all(caller, data):
            self.pipes[fd][0] = -1  # a reader gone (`| head`): the log goes on

    def _message(self) -> None:
        try:
            message, fds = receive(self.conn)
        except (OSError, ValueError):
            message, fds = None, []
        for fd in fds:
            os.close(fd)
        if message is None:
            self._hangup()
            return
        if "signal" in message:
            self.forward(int(message["signal"]))
        if "winch" in message:
            rows, cols = message["winch"]
            self.resize(int(rows), int(cols))
        if "continue" in message:
            if self.saved is not None:
                try:
                    tty.setraw(self.fds[0], termios.TCSANOW)
                except termios.error:
                    pass
            self.paused.clear()
            for group in {self._foreground(), self.pid}:
                if group:
                    try:
                        os.killpg(group, signal.SIGCONT)
                    except OSError:
                        pass

    # -- at the end ------------------------------------------------------------------------
    def finish(self, record: dict) -> None:
        """After the exit record is written: the job's last output relayed, the caller's
        terminal as it was, and the caller told how the job ended."""
        self._ending = True
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(2.0)
        self._restore()
        self._say({"exit": record.get("exit_code"), "signal": record.get("signal"),
                   "stop": record.get("stop")})
        self.close()

    def close(self) -> None:
        for fd in (*self.fds, *self.logs, *self.pipes, *self._job_ends, self.master, self.slave,
                   self._wake_r, self._wake_w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.fds, self.master, self.slave = [], None, None
        self.logs, self.pipes, self._job_ends = [], {}, []
        for sock in self._log_pass or ():
            sock.close()
        self.conn.close()

    def _restore(self) -> None:
        if self.saved is not None and self.fds:
            try:
                termios.tcsetattr(self.fds[0], termios.TCSADRAIN, self.saved)
            except termios.error:
                pass

    def _say(self, message: dict) -> None:
        if self.gone:
            return
        try:
            send(self.conn, message, [])
        except OSError:
            pass


def await_caller(spec: dict, cancelled: Callable[[], bool]) -> Attached | str:
    """Listen on the run's channel for its `gq run`: the caller attached, or why not
    ("cancel": the daemon cancelled it meanwhile; "hangup": no caller came in ATTACH_WAIT)."""
    attach = spec["attach"]
    expected = spec.get("uid")
    expected = os.getuid() if expected is None else expected
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    try:
        listener.bind(channel(attach["key"]))
        listener.listen(4)
        deadline = time.monotonic() + ATTACH_WAIT
        while (left := deadline - time.monotonic()) > 0:
            if cancelled():
                return "cancel"
            if not select.select([listener], [], [], min(left, 0.05))[0]:
                continue
            conn, _ = listener.accept()
            conn.set_inheritable(False)
            if peer_uid(conn) != expected:  # someone else's: never their terminal, nor ours
                conn.close()
                continue
            conn.settimeout(2.0)
            try:
                hello, fds = receive(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            conn.settimeout(None)
            if not hello or "hello" not in hello or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            return Attached(conn, hello["hello"], fds, bool(attach.get("no_hangup")),
                            bool(attach.get("log")))
        return "hangup"
    finally:
        listener.close()
