"""Reach this host's daemon, starting it on first use. Light: every command imports it."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from gq.paths import Layout, gq_home
from gq.protocol import Connection, GqError

START_TIMEOUT = 15.0


def layout() -> Layout:
    return Layout(gq_home())


def try_connect(lay: Layout, timeout: float | None = 30.0) -> Connection | None:
    try:
        return Connection(lay.socket, timeout=timeout)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except OSError as e:
        raise GqError(f"cannot reach the daemon at {lay.socket}: {e.strerror or e}") from None


def connect(auto_start: bool = True, timeout: float | None = 30.0) -> Connection:
    lay = layout()
    conn = try_connect(lay, timeout)
    if conn is not None:
        return conn
    if not auto_start:
        raise GqError(f"no daemon runs for {lay.home} (start one: gq daemon start)")
    pid = start_daemon(lay)
    print(f"gq: started the daemon for {lay.home} (pid {pid})", file=sys.stderr)
    conn = try_connect(lay, timeout)
    if conn is None:
        raise GqError(f"the daemon started but its socket {lay.socket} does not answer")
    return conn


def call(op: str, **args: Any) -> Any:
    with connect() as conn:
        return conn.call(op, **args)


def start_daemon(lay: Layout) -> int:
    """Start `gq daemon run` detached, and return its pid once its socket answers."""
    import subprocess  # only on first use: not worth its import on every command

    lay.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(lay.daemon_log, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gq", "daemon", "run"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd="/",
            env={**os.environ, "GQ_HOME": str(lay.home)},
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        conn = try_connect(lay, 5.0)
        if conn is not None:
            with conn:
                return conn.call("ping")["pid"]
        code = proc.poll()
        if code is not None:
            # Lost a race with another starter: its daemon answers soon.
            if "already runs" not in last_line(lay.daemon_log):
                raise GqError(f"the daemon failed to start: {last_line(lay.daemon_log)}")
        time.sleep(0.02)
    raise GqError(f"the daemon did not answer within {START_TIMEOUT:.0f}s; see {lay.daemon_log}")


def last_line(path) -> str:
    try:
        lines = [line for line in open(path, errors="replace").read().splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"
