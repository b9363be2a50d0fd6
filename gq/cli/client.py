"""Reach this host's daemon: the system daemon where there is one, else the user's own,
started on first use. Light: every command imports it."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from gq.paths import daemon_log, daemon_socket, not_answering, socket_path
from gq.protocol import (
    CONNECT_WAIT, LOCKED_ADVICE, Connection, DaemonGone, DaemonSlow, DatabaseLocked, GqError,
)
from gq.protocol.op_names import Op

START_TIMEOUT = 15.0
RETRY_FOR = 60.0  # seconds a submit is sent again while its daemon goes away and comes back
FROM_ENV = -1.0  # a timeout argument meaning: GQ_TIMEOUT, or 30 s


def default_timeout() -> float:
    """Seconds to wait for an answer: GQ_TIMEOUT, or 30."""
    text = os.environ.get("GQ_TIMEOUT", "")
    if not text:
        return 30.0
    whole, _, fraction = text.partition(".")
    digits = whole + fraction
    seconds = float(text) if digits.isascii() and digits.isdigit() else -1.0
    if not 0 < seconds < 1e6:
        raise GqError(f"GQ_TIMEOUT={text[:50]!r}: expected seconds, e.g. 60", 2)
    return seconds


def try_connect(path: str, timeout: float | None = 30.0) -> Connection | None:
    try:
        return Connection(path, timeout=timeout)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except BlockingIOError:
        raise GqError(f"the daemon at {path} took no new connection for {CONNECT_WAIT:g}s: "
                      "it is overloaded or stopped (see gq daemon status)") from None
    except OSError as e:
        raise GqError(f"cannot reach the daemon at {path}: {e.strerror or e}") from None


def connect(auto_start: bool = True, timeout: float | None = FROM_ENV) -> Connection:
    if timeout == FROM_ENV:
        timeout = default_timeout()
    path, home = daemon_socket()
    conn = try_connect(path, timeout)
    if conn is not None:
        return conn
    if home is None or not auto_start:
        raise GqError(not_answering(path, home))
    pid = start_daemon(home)
    print(f"gq: started the daemon for {home} (pid {pid})", file=sys.stderr)
    conn = try_connect(path, timeout)
    if conn is None:
        raise GqError(f"the daemon started but its socket {path} does not answer")
    return conn


def call(op: str, **args: Any) -> Any:
    with connect() as conn:
        return conn.call(op, **args)


def submit_job(args: dict[str, Any]) -> dict[str, Any]:
    """Submit with an idempotency key. Should the daemon go away before it answers (a crash,
    a restart), the same request goes again, key included, once a daemon answers: it returns
    the job the first attempt queued, if that one got so far, instead of queuing another."""
    args = {**args, "idempotency_key": os.urandom(16).hex()}
    deadline = time.monotonic() + RETRY_FOR
    conn = connect()
    said_locked = False
    while True:
        try:
            with conn:
                return conn.call(Op.SUBMIT, **args)
        except DatabaseLocked as e:
            # The submit's one transaction was rolled back (docs/reliability.md): the same
            # key again, queued once.
            holder = e.message.removesuffix(": " + LOCKED_ADVICE)
            if time.monotonic() > deadline:
                raise GqError(f"{holder}; sent again for {RETRY_FOR:.0f}s: the job is not "
                              "queued") from None
            if not said_locked:
                said_locked = True
                print(f"gq: {holder}; sending the submit again until it lets go (it is "
                      "queued once)", file=sys.stderr, flush=True)
            time.sleep(0.2)
        except DaemonSlow as e:
            # Sent again with the same key: queued once, whichever attempt gets there.
            if time.monotonic() > deadline:
                raise GqError(f"{e.message}; sent again for {RETRY_FOR:.0f}s with no answer; "
                              "whether the job was queued, `gq ls` tells") from None
            print(f"gq: the daemon did not answer within {conn.timeout:g}s; sending the "
                  "submit again (it is queued once)", file=sys.stderr, flush=True)
        except (DaemonGone, ConnectionError):
            if time.monotonic() > deadline:
                raise GqError(f"the daemon kept going away for {RETRY_FOR:.0f}s; whether the "
                              "job was queued, `gq ls` tells") from None
        conn = reconnect()


def reconnect(grace: float = 5.0, timeout: float | None = FROM_ENV) -> Connection:
    """After losing the daemon: wait `grace` seconds for it to come back (a restart) before
    starting one ourselves, so that we never race whoever is restarting it. A system daemon is
    restarted by systemd, never by us: wait for it as long as it takes."""
    if timeout == FROM_ENV:
        timeout = default_timeout()
    path, home = daemon_socket()
    deadline = time.monotonic() + grace
    while home is None or time.monotonic() < deadline:
        conn = try_connect(path, timeout)
        if conn is not None:
            return conn
        time.sleep(0.05)
    return connect(timeout=timeout)


def start_daemon(home: str) -> int:
    """Start `gq daemon run` detached, and return its pid once its socket answers."""
    import subprocess  # only on first use: not worth its import on every command

    os.makedirs(home, mode=0o700, exist_ok=True)
    log_path = daemon_log(home)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gq", "daemon", "run"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd="/",
            env={**os.environ, "GQ_HOME": home},
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        conn = try_connect(socket_path(home), 5.0)
        if conn is not None:
            try:
                with conn:
                    return conn.call(Op.PING)["pid"]
            except (DaemonGone, ConnectionError):
                pass  # the socket of a daemon still dying (killed): ours answers soon
        # A daemon that lost the start race to another exits at once; the winner answers soon.
        if proc.poll() is not None and "already runs" not in last_line(log_path):
            raise GqError(f"the daemon failed to start: {start_failure(home, log_path)}")
        time.sleep(0.02)
    raise GqError(f"the daemon did not answer within {START_TIMEOUT:.0f}s; see {log_path}")


def start_failure(home: str, log_path: str) -> str:
    """Why the daemon exited: the last line of its log, unless the disk holding the log is
    full, when that line is an older daemon's (the new one could not write its own)."""
    from gq.daemon.diskfull import disk_is_full, refusal

    if disk_is_full(home):
        return refusal(home)
    return last_line(log_path).removeprefix("gq: ")


def last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"


def wait_for_jobs(ids: list[str], grace: float = 5.0, timeout: float | None = None
                  ) -> list[dict]:
    """Block until the jobs end or can no longer start, or `timeout` passes, riding out daemon
    restarts (jobs outlive their daemon)."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    conn = connect(timeout=None)
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            with conn:
                return conn.call(Op.WAIT, ids=ids, **({} if left is None else {"timeout": left}))
        except DaemonGone:  # a reset or a broken pipe too (gq/protocol)
            pass
        conn = reconnect(grace, timeout=None)
