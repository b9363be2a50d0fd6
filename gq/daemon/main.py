"""Run the daemon: one per GQ_HOME, guarded by a lock, listening on $GQ_HOME/gq.sock; or, with
--system, root's daemon for every user of the host (gq/daemon/system.py)."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import socket
import sys
from contextlib import contextmanager
from pathlib import Path

from gq.daemon.diskfull import disk_is_full, is_disk_full
from gq.daemon.diskfull import refusal as disk_refusal
from gq.daemon.layout import Layout
from gq.daemon.system import prepare, refuse_beside_system_daemon, system_layout
from gq.paths import MAX_SOCKET_PATH
from gq.protocol import GqError

log = logging.getLogger("gq.daemon")


def acquire_lock(layout: Layout) -> int:
    fd = os.open(layout.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise GqError(f"a daemon already runs for {layout.home} (pid {pid})") from None
    pid = f"{os.getpid()}\n".encode()
    try:  # over the old pid, in the room it had: a daemon restarted on a full disk
        os.pwrite(fd, pid, 0)
        os.ftruncate(fd, len(pid))
    except OSError:
        os.close(fd)
        raise
    return fd


def bind_socket(layout: Layout) -> socket.socket:
    """The owner alone may connect (0600); to a system daemon, everyone (0666)."""
    path = str(layout.socket)
    if len(path.encode()) > MAX_SOCKET_PATH:
        raise GqError(
            f"socket path {path} is {len(path.encode())} bytes, over the {MAX_SOCKET_PATH}-byte "
            "limit of Unix sockets: set GQ_HOME to a shorter directory"
        )
    if layout.socket.exists() or layout.socket.is_symlink():
        layout.socket.unlink()  # stale: we hold the lock, so no live daemon owns it
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The mode from the start: no window where others could connect to a private socket.
    old = os.umask(0o111 if layout.system else 0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    sock.listen(1024)  # room for bursts: a full backlog makes clients wait (protocol._connect)
    return sock


@contextmanager
def _starting(home: Path):
    """A full disk while the daemon starts (a new database, the simulated cards' files, SQLite
    without room for its WAL's index) is said in one line, as a refused request says it."""
    import sqlite3

    try:
        yield
    except Exception as e:
        if is_disk_full(e) or (isinstance(e, sqlite3.Error) and disk_is_full(home)):
            raise GqError(disk_refusal(home)) from None
        raise


def _reload_on_hangup(daemon) -> None:
    """SIGHUP, as sshd and nginx take it: `gq daemon reload` without a client."""
    from gq.daemon.reload import reload

    try:
        reload(daemon)  # logs each change
    except GqError as e:
        log.error("reload refused: %s", e.message)


def run_for(system: bool = False) -> int:
    """`gq daemon run [--system]`: for GQ_HOME (its default), or the system daemon."""
    from gq.paths import gq_home

    return run(None if system else Path(gq_home()), system=system)


def run(home: Path | None, system: bool = False) -> int:
    """`gq daemon run [--system]`: serve in the foreground until SIGTERM/SIGINT or `gq daemon
    stop`."""
    from gq.config import check_cards, load_config
    from gq.config.metrics import public_refusal
    from gq.daemon.core import Daemon
    from gq.daemon.server import serve
    from gq.gpu import SIM_ENV, open_backend
    from gq.store.precheck import check_database

    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s gq-daemon %(message)s"
    )
    if system:
        layout = system_layout()
        prepare(layout)
        home = layout.home
    else:
        refuse_beside_system_daemon(home)
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        layout = Layout(home)
    with _starting(home):
        lock_fd = acquire_lock(layout)
        config = load_config(layout.config)
        # Of a system daemon, not the names users chose in their own directories.
        on_disk = layout.highest_job_id(users_below=0 if system else None)
        refusal = check_database(layout.db, on_disk)
        if refusal is not None:  # never an empty queue over a user's (docs/reliability.md)
            raise GqError(disk_refusal(home) if disk_is_full(home) else refusal)
        try:
            # A system daemon's simulated cards take every user's burns through its socket.
            backend = open_backend(home, register_at=str(layout.socket) if system else None)
        except ValueError as e:
            raise GqError(str(e), 2) from None
        # A pool naming a card this host lacks: refused, as `gq config check` refuses it.
        check_cards(config, [g.index for g in backend.read()])
        refusal = public_refusal(config.metrics, system)
        if refusal is not None:  # said before anything is bound
            raise GqError(refusal)
        sock = bind_socket(layout)
        daemon = Daemon(layout, config, backend, socket.gethostname())
        try:
            daemon.metrics.serve(config.metrics)  # [metrics] listen: /metrics, in a thread
        except GqError:
            sock.close()
            layout.socket.unlink(missing_ok=True)
            daemon.close()
            raise
    cards = ", ".join(f"{g.index}:{g.name}" for g in daemon.cards) or "none"
    log.info("pid %s, home %s, %s cards: %s", os.getpid(), home, backend.kind, cards)
    if system:
        log.info("system daemon for every user: socket %s, settings %s%s", layout.socket,
                 layout.config, "" if config.path else " (absent: defaults)")
    if backend.kind == "sim" and not os.environ.get(SIM_ENV, "").strip():
        log.info("simulated cards as this home last had them (%s/sim/spec); %s=off for real "
                 "ones", home, SIM_ENV)
    if getattr(backend, "reason", None):  # no card backend: say why (troubleshooting.md)
        log.warning("no GPUs: %s", backend.reason)
    for warning in daemon.warnings:
        log.warning("%s", warning)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.loop_stop.set)
        loop.add_signal_handler(signal.SIGHUP, _reload_on_hangup, daemon)
        await serve(daemon, sock)

    try:
        asyncio.run(main())
    finally:
        if layout.socket.exists():
            layout.socket.unlink()
        daemon.close()
        os.close(lock_fd)
        log.info("stopped; running jobs keep running and the next daemon re-adopts them")
    return 0
