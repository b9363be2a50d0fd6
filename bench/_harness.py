"""Shared helpers for gq benchmarks: a throwaway daemon, interleaved timing, a compact report."""

from __future__ import annotations

import atexit
import datetime
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

from gq.paths import daemon_log, socket_path
from gq.protocol import Connection

SIM_GPUS = "1x80G"
START_TIMEOUT = 20.0  # seconds for a fresh daemon to answer ping
POLL = 0.01  # seconds between pings while it starts


def gq_script() -> str:
    """The installed `gq` console script next to this interpreter."""
    path = shutil.which("gq", path=os.path.dirname(sys.executable))
    if path is None:
        sys.exit(f"bench: no gq console script next to {sys.executable} (pip install -e .)")
    return path


def machine() -> dict:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": f"{sys.version.split()[0]} ({sys.executable})",
        "cores": os.cpu_count() or 1,
    }


class TempDaemon:
    """`python -m gq daemon run` on a fresh GQ_HOME under /tmp; stopped and removed on exit."""

    def __init__(self, cpus: int, sim_gpus: str = SIM_GPUS, config: str = "",
                 prepare: Callable[[str], None] | None = None):
        self.cpus = cpus
        self.sim_gpus = sim_gpus
        self.config = config  # more config.toml, after [host]
        self.prepare = prepare  # called with GQ_HOME before the daemon starts
        self.home = ""
        self.proc: subprocess.Popen | None = None

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "GQ_HOME": self.home, "GQ_SIM_GPUS": self.sim_gpus}

    @property
    def socket(self) -> str:
        return socket_path(self.home)

    def connect(self, timeout: float | None = 60.0) -> Connection:
        return Connection(self.socket, timeout=timeout)

    def __enter__(self) -> TempDaemon:
        self.home = tempfile.mkdtemp(prefix="gq-", dir="/tmp")  # short: sun_path is 108 bytes
        with open(os.path.join(self.home, "config.toml"), "w") as f:
            f.write(f"[host]\ncpus = {self.cpus}\n{self.config}")
        if self.prepare is not None:
            self.prepare(self.home)
        with open(daemon_log(self.home), "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gq", "daemon", "run"],
                env=self.env, cwd=self.home, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                with self.connect(timeout=5.0) as conn:
                    conn.call("ping")
                return
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(POLL)
        raise RuntimeError(f"the daemon did not answer within {START_TIMEOUT:.0f}s")

    def log_tail(self, lines: int = 5) -> str:
        try:
            with open(daemon_log(self.home), errors="replace") as f:
                return " | ".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        remove_later(self.home)


_LEFT: list[str] = []  # directories of finished runs, removed when the benchmark ends


def remove_later(path: str) -> None:
    """Remove `path` when the benchmark ends, not now: on ext4 without a journal (these
    machines), a file created within a minute or more of thousands of deletions costs up to 20
    times as much (the allocator looks at every inode freed meanwhile), so one run's clean-up
    would slow whichever run is measured next."""
    if not _LEFT:
        atexit.register(_remove_left)
    _LEFT.append(path)


def _remove_left() -> None:
    for path in _LEFT:
        shutil.rmtree(path, ignore_errors=True)


def time_command(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run of argv, output discarded; a failure ends the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed


def interleaved(commands: dict[str, list[str]], env: dict[str, str], rounds: int,
                warmup: int) -> dict[str, float]:
    """Median seconds of each command, run alternately so that machine noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(warmup + rounds):
        for name, argv in commands.items():
            t = time_command(argv, env)
            if i >= warmup:
                times[name].append(t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def round_options(doc: str | None):
    """--quick (10 rounds after 2 warm-up, else 40 after 3) and --json: (options, rounds,
    warmup)."""
    import argparse

    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--quick", action="store_true", help="10 rounds instead of 40")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    opts = parser.parse_args()
    return (opts, 10, 2) if opts.quick else (opts, 40, 3)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_table(rows: list[tuple[str, str, str]]) -> None:
    """Rows of (measure, value, note), aligned; a row with an empty value is a heading."""
    width = max(len(r[0]) for r in rows if r[1])
    vwidth = max(len(r[1]) for r in rows if r[1])
    for name, value, note in rows:
        if not value:
            print(name)
        else:
            print(f"  {name:<{width}}  {value:>{vwidth}}  {note}".rstrip())
