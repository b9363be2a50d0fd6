"""Real daemons in temporary GQ_HOMEs, reached through the real CLI and protocol."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gq.daemon.supervisor import Supervisor
from gq.protocol import Connection
from gq.protocol.ops import every_listed
from tests.support.cli import gq_in_process, gq_process
from tests.support.forkserver import ForkedDaemon, ForkServer
from tests.support.paths import ROOT


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.02, what: str = "condition"):
    """Poll until predicate() returns something truthy; return it, or fail after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class GqHost:
    """One GQ_HOME with its daemon, driven like a user would: through `gq` and its socket."""

    def __init__(self, home: Path, sim_gpus: str | None, cpus: int = 16, kill_wait: str = "2s",
                 tick: str = "0.2s"):
        self.home = home
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
        self.env["GQ_HOME"] = str(home)
        self.env["PYTHONPATH"] = str(ROOT)
        if sim_gpus:
            self.env["GQ_SIM_GPUS"] = sim_gpus
        home.mkdir(mode=0o700, exist_ok=True)
        (home / "config.toml").write_text(
            f'[host]\ncpus = {cpus}\n\n[daemon]\nkill_wait = "{kill_wait}"\ntick = "{tick}"\n'
        )
        self.daemon: subprocess.Popen | ForkedDaemon | None = None
        self.work = home / "work"
        self.work.mkdir(exist_ok=True)

    # ---- the daemon ----
    def start(self, process: bool = False) -> None:
        """`gq daemon run`, forked from this test process's fork server (its imports done
        once: tests/support/forkserver.py), or a new `python -m gq` with `process` (or with
        GQ_TEST_FORKSERVER=0 in the environment of the run)."""
        if self.daemon is not None and self.daemon.poll() is None:
            # A second daemon would be refused and exit, unseen if the first answered first.
            raise AssertionError("this host's daemon runs already (GqHost.start twice)")
        log = self.home / "daemon.test.log"
        if process or os.environ.get("GQ_TEST_FORKSERVER") == "0":
            with open(log, "ab") as out:
                self.daemon = subprocess.Popen(
                    [sys.executable, "-m", "gq", "daemon", "run"], env=self.env, stdout=out,
                    stderr=out, start_new_session=True,
                )
        else:
            self.daemon = ForkServer.spawn(self.env, str(log), os.getcwd())
        wait_for(self._answers, what="the daemon's socket")

    def _answers(self) -> bool:
        if self.daemon is not None and self.daemon.poll() is not None:
            raise AssertionError(f"daemon exited: {(self.home / 'daemon.test.log').read_text()}")
        try:
            with Connection(self.home / "gq.sock", timeout=5) as c:
                return bool(c.call("ping"))
        except OSError:
            return False

    def daemon_log_tail(self, lines: int = 30) -> str:
        """The end of the daemon's own log (and of what it printed), for a failure message."""
        out = []
        for name in ("daemon.log", "daemon.test.log"):
            try:
                out += (self.home / name).read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                pass
        return "\n".join(out)

    def stop_daemon(self) -> None:
        """What `gq daemon stop` does, without a process: the shutdown operation, then the
        daemon's exit. For tests of what a stopped daemon leaves, not of the command."""
        self.call("shutdown")
        self.daemon.wait(timeout=20)

    def kill_daemon(self, sig: int = signal.SIGKILL) -> None:
        self.daemon.send_signal(sig)
        self.daemon.wait(timeout=20)

    # ---- talking to it ----
    def gq(self, *args: str, check: bool = True, timeout: float = 60,
           process: bool = False) -> subprocess.CompletedProcess:
        """`gq ARGS...` as this host's user: in this process (tests/support/cli.py), or a real
        `python -m gq` with `process=True`, where the process is what is tested (its exit
        status, its streams); `timeout` bounds only a process.

        In this process by default: it took about 13% off the quick loop's CPU (250 against
        288 CPU-seconds). test_crash_safety's kill -9 test failed that way before: its jobs
        were recorded running before their shims were forked, and the faster submits let the
        kill land in between; it now waits until they have begun."""
        # `gq daemon ...` starts and stops daemons: as a child of this test process they would
        # outlive it or share its signals; a real process, as a user runs it.
        if process or args[:1] == ("daemon",):
            proc = gq_process(list(args), self.env, self.work, timeout=timeout)
        else:
            proc = gq_in_process(list(args), self.env, self.work)
        if check and proc.returncode != 0:
            raise AssertionError(f"gq {' '.join(args)} -> {proc.returncode}: {proc.stderr}")
        return proc

    def call(self, op: str, **args):
        with Connection(self.home / "gq.sock", timeout=30) as c:
            return c.call(op, **args)

    def submit(self, *args: str) -> int:
        return int(self.gq("submit", *args).stdout.strip())

    def job(self, job_id: int) -> dict:
        return self.call("show", id=str(job_id))

    def wait_state(self, job_id: int, *states: str, timeout: float = 20.0) -> dict:
        seen: list[dict] = []

        def check():
            job = self.job(job_id)
            seen[:] = [job]
            return job if job["state"] in states else None

        try:
            return wait_for(check, timeout, what=f"job {job_id} to be {'/'.join(states)}")
        except AssertionError as e:  # what it was instead, and what the daemon said
            last = seen[0] if seen else {}
            detail = {k: last.get(k) for k in ("state", "reason", "freeze_op", "freeze_note")}
            raise AssertionError(f"{e}; it is {detail}; the daemon's log ends:\n"
                                 f"{self.daemon_log_tail()}") from None

    def wait_reason(self, job_id: int, reason: str, timeout: float = 20.0) -> dict:
        """A pending job's reason is set by the next scheduling pass: at once, unless the
        daemon is busy (passes are then spaced out)."""

        def check():
            job = self.job(job_id)
            return job if job["reason"] == reason else None

        return wait_for(check, timeout, what=f"job {job_id} to wait with reason {reason}")

    def wait_ended(self, job_id: int, timeout: float = 20.0) -> dict:
        # `wait` returns once the job ended and its processes are gone.
        with Connection(self.home / "gq.sock", timeout=timeout) as c:
            return c.call("wait", ids=[str(job_id)])[0]

    def log(self, job_id: int, err: bool = False) -> str:
        path = self.home / "logs" / f"{job_id}.{'err' if err else 'out'}"
        return path.read_text() if path.exists() else ""

    def exit_record(self, job_id: int) -> dict | None:
        """What the job's shim recorded at its end, read as the daemon reads it; None: nothing
        yet (or its files are gone: the end is recorded)."""
        return exit_record(self.home / "run", job_id)

    def shim_pid(self, job_id: int) -> int | None:
        """The pid the job's shim wrote into its lock file; None until it has."""
        return Supervisor(self.home / "run").shim_info(job_id).get("pid")

    def count_jobs(self) -> int:
        return len(every_listed(self.call, all=True))

    # ---- cleanup ----
    def close(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            try:
                active = [j["id"] for j in every_listed(self.call)]
                if active:
                    self.call("cancel", ids=[str(i) for i in active])
                    for i in active:
                        self.wait_ended(i, timeout=30)
            except (OSError, AssertionError):
                pass
            try:
                self.kill_daemon(signal.SIGTERM)
            finally:  # a forked daemon's environment does not name its GQ_HOME to
                if self.daemon.poll() is None:  # kill_processes_mentioning: gone, whatever
                    self.daemon.kill()


def exit_record(run_root: Path, job_id: int) -> dict | None:
    return Supervisor(run_root).exit_record(job_id)


def kill_processes_mentioning(text: str) -> None:
    """Whatever a failed test left running under its directory (a safety net, not a check):
    also a daemon the CLI started there, which names its GQ_HOME only in its environment, and
    a daemon forked by the fork server, whose /proc environment is the server's."""
    import psutil

    ForkServer.kill_under(text)
    for proc in psutil.process_iter(["cmdline"]):
        try:
            home = proc.environ().get("GQ_HOME", "")
        except psutil.Error:
            home = ""
        if proc.pid != os.getpid() and (text in " ".join(proc.info["cmdline"] or [])
                                        or home.startswith(text)):
            try:
                proc.kill()
            except psutil.Error:
                pass


def host_with(make_host, config: str, sim: str = "4x80G") -> GqHost:
    """A host whose config.toml has `config` added before its daemon starts."""
    host = make_host(sim, start=False)
    with open(host.home / "config.toml", "a") as f:
        f.write(config)
    host.start()
    return host
