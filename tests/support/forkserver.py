"""`gq daemon run` forked from a process that has imported it already, for the test daemons.

A fresh `python -m gq daemon run` spends most of its start importing (Typer, sqlite-utils,
asyncio, the daemon's modules): about half a second of CPU, paid by each of the suite's 250
daemons. A fork server started once per test process imports them once and forks a daemon per
request; the child sets the host's environment, a session, its log as stdout and stderr and the
default signal dispositions of a new interpreter, then runs the console script's own entry
point with `daemon run`, as `python -m gq daemon run` would. The daemons' own children (the
spawner, the shims, the jobs) are started by the daemon as always.

Run as `python -m tests.support.forkserver`: one JSON request a line on stdin, one answer a
line on stdout. {"spawn": {"env": ..., "log": ..., "cwd": ...}} -> {"pid": N};
{"status": N} -> {"code": exit status or null while it runs}. Children are reaped as they end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

# What `gq daemon run` imports, loaded once here (a daemon imports the rest on demand, as ever).
PRELOAD = ("gq.cli.entry", "gq.cli.app", "gq.cli.daemon_cmd", "gq.daemon.main",
           "gq.daemon.core", "gq.daemon.server", "gq.config", "gq.gpu", "gq.store.precheck")


def serve() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    ended: dict[int, int] = {}

    def reap(*_):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ended[pid] = os.waitstatus_to_exitcode(status)

    signal.signal(signal.SIGCHLD, reap)
    answer = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if "spawn" in request:
            reply = {"pid": _spawn(**request["spawn"])}
        else:
            reap()
            reply = {"code": ended.get(request["status"])}
        answer.write(json.dumps(reply) + "\n")
        answer.flush()


def _spawn(env: dict[str, str], log: str, cwd: str) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        # A new interpreter's dispositions, not the server's (SIGCHLD reaps every child).
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(null)
        os.close(out)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [sys.argv[0], "daemon", "run"]
        from gq.cli.entry import main

        try:
            main(["daemon", "run"])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class ForkServer:
    """The client: one server per test process, started on first use."""

    _lock = threading.Lock()
    _proc: subprocess.Popen | None = None
    _homes: dict[int, str] = {}  # each daemon forked, by pid: its GQ_HOME

    @classmethod
    def _ask(cls, request: dict) -> dict:
        with cls._lock:
            if cls._proc is None or cls._proc.poll() is not None:
                from tests.support.paths import ROOT

                env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
                env["PYTHONPATH"] = str(ROOT)
                cls._proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.forkserver"], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                    start_new_session=True)
            cls._proc.stdin.write(json.dumps(request) + "\n")
            cls._proc.stdin.flush()
            return json.loads(cls._proc.stdout.readline())

    @classmethod
    def spawn(cls, env: dict[str, str], log: str, cwd: str) -> ForkedDaemon:
        pid = cls._ask({"spawn": {"env": env, "log": log, "cwd": cwd}})["pid"]
        cls._homes[pid] = env.get("GQ_HOME", "")
        return ForkedDaemon(pid)

    @classmethod
    def kill_under(cls, directory: str) -> None:
        """SIGKILL to the forked daemons still running whose GQ_HOME is under `directory` (a
        safety net: /proc shows them with the server's environment, not their own)."""
        if cls._proc is None or cls._proc.poll() is not None:
            return  # its children are init's now, their pids free to be reused
        for pid, home in list(cls._homes.items()):
            if home.startswith(directory):
                del cls._homes[pid]
                if cls.status(pid) is None:  # not reaped: the pid is still that daemon's
                    os.kill(pid, signal.SIGKILL)

    @classmethod
    def status(cls, pid: int) -> int | None:
        return cls._ask({"status": pid})["code"]


class ForkedDaemon:
    """What the tests use of a daemon's subprocess.Popen: pid, poll, wait, send_signal."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = ForkServer.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"daemon {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


if __name__ == "__main__":
    serve()
