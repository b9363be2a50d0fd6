"""System mode: one root daemon for every user of the host (docs/admin.md).

State in /var/lib/gq, the socket /run/gq/gq.sock (open to every local user: the daemon tells
callers apart by their peer credentials), settings in /etc/gq/config.toml; all three below
$GQ_SYSTEM_ROOT when it is set. What root relies on must be root's: a state directory, socket
directory or configuration file that another user could write is refused at start.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gq.daemon.layout import Layout
from gq.paths import SYSTEM_CONFIG, SYSTEM_SOCKET, SYSTEM_STATE, system_host, system_path
from gq.protocol import GqError


def system_layout() -> Layout:
    return Layout(system_path(SYSTEM_STATE), socket=system_path(SYSTEM_SOCKET),
                  config=system_path(SYSTEM_CONFIG), system=True)


def refuse_beside_system_daemon(home: Path) -> None:
    """A daemon of one's own on a host set up for a system daemon may simulate cards, never use
    the real ones: it would hand out the cards the system daemon hands out, a second time."""
    from gq.gpu import simulated

    if system_host() and not simulated(home):
        raise GqError(f"this host's cards are handed out by its system daemon "
                      f"({system_path(SYSTEM_SOCKET)}); a daemon of your own for {home} would "
                      "hand them out a second time: use the system one (unset GQ_HOME), or "
                      "give yours simulated cards (GQ_SIM_GPUS=4x80G)")


def prepare(layout: Layout) -> None:
    """Check that we are root and that what we rely on is root's alone; make the directories."""
    if os.geteuid() != 0:
        # No advice to run a daemon of one's own where a system one is set up: see below.
        own = "" if system_host() else " (for a daemon of your own: gq daemon run)"
        raise GqError("gq daemon run --system must run as root: it starts each job as the "
                      f"user who submitted it{own}")
    os.umask(0o022)  # missing parents (a staged root's var/lib) must let every user through
    for directory in (layout.home, layout.socket.parent):
        directory.mkdir(mode=0o755, parents=True, exist_ok=True)
        _require_roots(directory, "directory")
        directory.chmod(0o755)  # every user reaches the socket, and their files under users/
    os.umask(0o077)  # the database holds every job's environment: root's alone
    if layout.config.exists() or layout.config.is_symlink():
        _require_roots(layout.config.parent, "directory")
        _require_roots(layout.config, "file")


def _require_roots(path: Path, what: str) -> None:
    st = os.lstat(path)
    kind_ok = stat.S_ISDIR(st.st_mode) if what == "directory" else stat.S_ISREG(st.st_mode)
    if not kind_ok:
        raise GqError(f"{path} is not a {what} (a link?); the system daemon will not use it")
    if st.st_uid != 0 or st.st_mode & 0o022:
        raise GqError(
            f"{path} belongs to uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):04o}: "
            f"whoever can write it could act as root through gq; make it root's and not "
            f"writable by others (chown root: {path} && chmod go-w {path})"
        )
