"""Run the daemon: one per GQ_HOME, guarded by a lock, listening on $GQ_HOME/gq.sock; or, with
--system, root's daemon for every user of the host (gq/system.py)."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import socket
import sys
from pathlib import Path

from gq.layout import Layout
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
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
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
    sock.listen(128)
    return sock


def _reload_on_hangup(daemon) -> None:
    """SIGHUP, as sshd and nginx take it: `gq daemon reload` without a client."""
    from gq.daemon.reload import reload

    try:
        reload(daemon)  # logs each change
    except GqError as e:
        log.error("reload refused: %s", e.message)


def run(home: Path | None, system: bool = False) -> int:
    """`gq daemon run [--system]`: serve in the foreground until SIGTERM/SIGINT or `gq daemon
    stop`."""
    from gq.config import load_config
    from gq.daemon.core import Daemon
    from gq.daemon.server import serve
    from gq.gpu import SIM_ENV, open_backend
    from gq.store.backup import check_database

    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s gq-daemon %(message)s"
    )
    if system:
        from gq.system import prepare, system_layout

        layout = system_layout()
        prepare(layout)
        home = layout.home
    else:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        layout = Layout(home)
    lock_fd = acquire_lock(layout)
    config = load_config(layout.config)
    refusal = check_database(layout.db)
    if refusal is not None:  # never an empty queue over a user's (docs/reliability.md)
        raise GqError(refusal)
    try:
        backend = open_backend(home)
    except ValueError as e:
        raise GqError(str(e), 2) from None
    sock = bind_socket(layout)
    daemon = Daemon(layout, config, backend, socket.gethostname())
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
