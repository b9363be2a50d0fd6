"""`gq demo` and `gq top`: a simulated 4-GPU host with a realistic mixed workload, watched in the
terminal UI or headless; everything it starts is stopped and removed when it ends."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from gq.protocol import Connection, GqError
from gq.protocol.op_names import Op
from gq.protocol.ops import every_listed

CARDS = "4xH100"
# Short windows so that what takes minutes on a real host shows within the demo's first minute.
CONFIG = """\
[host]
cpus = 32
ram = "256G"

[daemon]
tick = "0.5s"
kill_wait = "3s"

[preemption]
exempt = "0s"
grace = "3s"

[telemetry]
interval = "1s"

[offenders]
idle_window = "10s"
stray_after = "5s"
over_declared_after = "30s"
"""
def _gq_command() -> list[str]:
    """This installation's `gq`, by its full path: the demo's jobs run it, and what the demo
    prints (`gq burn ...`) is what a user can copy, from any directory."""
    script = Path(sys.executable).with_name("gq")
    return [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "gq"]


BURN = [*_gq_command(), "burn"]
PREEMPT_AT = 8.0  # seconds into the demo: the urgent high-tier job arrives


def _burn(mem: str, util: int, seconds: float | None = None) -> list[str]:
    return [*BURN, "--mem", mem, "--util", str(util)] + (
        [] if seconds is None else ["--seconds", str(seconds)])


# (when, options, command): the lab's afternoon in a minute.
SCENARIO: list[tuple[float, list[str], list[str]]] = [
    (0.0, ["-g", "2", "-n", "train-llm"], _burn("70G", 95)),
    (0.0, ["-p", "low", "-n", "pretrain-small"], _burn("60G", 70)),
    (0.0, ["--mem", "30G", "-n", "notebook"], _burn("22G", 0)),
    (0.0, ["--mem", "12G", "-n", "sweep", "--sweep", "lr=1e-4,3e-4,1e-3,3e-3,1e-2,3e-2",
           "--array", "%2"], _burn("10G", 65, 12)),
    (PREEMPT_AT, ["-p", "high", "-n", "urgent-eval"], _burn("40G", 90, 25)),
]


def _short_tmp() -> str:
    """$TMPDIR where a socket's path under it stays within the kernel's 108 bytes, else /tmp."""
    base = os.environ.get("TMPDIR") or "/tmp"
    return base if len(base) <= 60 and os.path.isdir(base) else "/tmp"


class Demo:
    """A daemon on simulated cards in a temporary GQ_HOME, the scenario's jobs, and a stray
    process on the shared card. `close` undoes all of it, whatever state it is in."""

    def __init__(self, say: Callable[[str], None] = print):
        self.say = say
        self.tmp = Path(tempfile.mkdtemp(prefix="gq-demo-", dir=_short_tmp()))
        self.home = self.tmp / "home"
        self.work = self.tmp / "work"
        self.stray: subprocess.Popen | None = None
        self.daemon_pid: int | None = None
        self.began = time.monotonic()
        self.submitted: list[int] = []
        self._stop = threading.Event()

    # ---- setting up ----
    def start(self) -> None:
        from gq.cli.client import start_daemon

        self.home.mkdir(mode=0o700)
        self.work.mkdir()
        (self.home / "config.toml").write_text(CONFIG)
        # This process is the demo's: its jobs, its `gq top` and its daemon all use the demo home.
        os.environ.update(GQ_HOME=str(self.home), GQ_SIM_GPUS=CARDS)
        self.daemon_pid = start_daemon(str(self.home))
        self.began = time.monotonic()
        self.say(f"gq demo: 4 simulated H100 cards, daemon pid {self.daemon_pid}, GQ_HOME "
                 f"{self.home}")

    def call(self, op: str, **args: Any) -> Any:
        with Connection(self.home / "gq.sock", timeout=30) as conn:
            return conn.call(op, **args)

    def submit(self, options: list[str], command: list[str]) -> int:
        from gq.cli.submit_args import parse_argv, request_args

        values, cmd = parse_argv([*options, "--cwd", str(self.work), "--", *command])
        job = self.call(Op.SUBMIT, **request_args(values, cmd))
        self.submitted.append(job["id"])
        self.say(f"{self.elapsed():5.1f}s  submitted job {job['id']} {job['name']}: "
                 f"gq submit {' '.join(map(shlex.quote, options))} -- "
                 f"{_shown(command)}")
        return job["id"]

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def play(self) -> None:
        """The scenario in time: run in a thread beside the UI, or before watching."""
        notebook = None
        for when, options, command in SCENARIO:
            if self._stop.wait(max(0.0, when - self.elapsed())):
                return
            job_id = self.submit(options, command)
            if "notebook" in options:
                notebook = job_id
            if notebook is not None and self.stray is None:
                self._start_stray(notebook)

    def _start_stray(self, notebook: int) -> None:
        """Someone's script run by hand on the card the notebook shares: gq did not start it."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self._stop.is_set():
            cards = self.call(Op.SHOW, id=str(notebook))["gpu_ids"]
            if cards:
                break
            time.sleep(0.1)
        else:
            return
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(cards[0])}
        env.pop("GQ_JOB_ID", None)
        self.stray = subprocess.Popen(
            _burn("6G", 30), env=env, cwd=self.work, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.say(f"{self.elapsed():5.1f}s  started a stray process (pid {self.stray.pid}) on "
                 f"GPU {cards[0]}, outside gq: {_shown(_burn('6G', 30))}")

    # ---- cleaning up ----
    def close(self) -> None:
        self._stop.set()
        try:
            active = [str(j["id"]) for j in every_listed(self.call)]
            if active:
                self.call(Op.CANCEL, ids=active)
                with Connection(self.home / "gq.sock", timeout=20) as conn:
                    conn.call(Op.WAIT, ids=active)
            self.call(Op.SHUTDOWN)
        except (OSError, GqError):
            pass  # the daemon is gone already: the sweep below ends what is left
        if self.stray is not None and self.stray.poll() is None:
            self.stray.terminate()
            try:
                self.stray.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.stray.kill()
        _wait_gone(self.daemon_pid)
        ended = _end_processes_of(self.home)
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.say(f"gq demo: cleaned up (daemon stopped, jobs cancelled{ended}, {self.tmp} "
                 "removed)")


def _shown(command: list[str]) -> str:
    n = len(BURN) - 1
    words = ["gq", *command[n:]] if command[:n] == BURN[:n] else command
    return " ".join(map(shlex.quote, words))


def _wait_gone(pid: int | None, timeout: float = 10.0) -> None:
    """The daemon is this process's child (start_daemon): reap it, else it lingers a zombie."""
    if pid is None:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not ours after all: gone once kill(0) says so
            from gq.cli.daemon_ctl import wait_gone

            wait_gone(pid, max(0.0, deadline - time.monotonic()))
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)


def _end_processes_of(home: Path) -> str:
    """Kill whatever still runs with the demo's GQ_HOME (a safety net: nothing should)."""
    import psutil

    ended = 0
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get("GQ_HOME") == str(home):
                proc.kill()
                ended += 1
        except psutil.Error:
            pass
    return f", {ended} leftover process(es) killed" if ended else ""


STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, kill, a closed terminal


def run_demo(tui: bool, seconds: float) -> int:
    interrupted_by = [signal.SIGINT]

    def on_signal(signum: int, frame: object) -> None:
        interrupted_by[0] = signum
        raise KeyboardInterrupt

    for sig in STOPPING[1:]:
        signal.signal(sig, on_signal)
    if hasattr(sys.stdout, "reconfigure"):  # each line as it happens, into a pipe too (| tee)
        sys.stdout.reconfigure(line_buffering=True)
    demo = Demo(say=print if not tui else _quiet)
    code = 0
    try:
        demo.start()
        if tui:
            from gq.tui.app import make_app

            threading.Thread(target=demo.play, daemon=True).start()
            make_app(home=str(demo.home)).run()
        else:
            from gq.cli.demo_watch import watch

            player = threading.Thread(target=demo.play, daemon=True)
            player.start()
            watch(demo, seconds)
    except KeyboardInterrupt:
        code = 128 + interrupted_by[0]  # as a shell reports it: 130 Ctrl-C, 129 HUP, 143 TERM
    finally:
        # A second Ctrl-C (or the HUP that follows a closed pane's TERM) must not stop the
        # cleanup half-way, leaving the daemon and its jobs behind: it is bounded (close).
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOPPING}
        try:
            demo.say = _said_anyway
            demo.close()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return code


def _said_anyway(line: str) -> None:
    """The cleanup's line, also where the terminal has gone (SIGHUP): nothing to print to."""
    try:
        print(line)
    except OSError:
        pass


def _quiet(line: str) -> None:
    pass
