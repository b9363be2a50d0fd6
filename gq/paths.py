"""Where gq keeps its state: one GQ_HOME per daemon. Strings only: every command imports it."""

from __future__ import annotations

import os

SOCKET_NAME = "gq.sock"
DAEMON_LOG = "daemon.log"
# sun_path holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107
# The system daemon's files (docs/admin.md), below $GQ_SYSTEM_ROOT when set: tests and staged
# installs put a whole system-mode host in a temporary directory that way.
SYSTEM_ROOT_ENV = "GQ_SYSTEM_ROOT"
SYSTEM_STATE = "var/lib/gq"
SYSTEM_SOCKET = "run/gq/gq.sock"
SYSTEM_CONFIG = "etc/gq/config.toml"


def gq_home(env=None) -> str:
    """$GQ_HOME, else $XDG_STATE_HOME/gq, else ~/.local/state/gq; always absolute."""
    env = os.environ if env is None else env
    if env.get("GQ_HOME"):
        return os.path.abspath(os.path.expanduser(env["GQ_HOME"]))
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(os.path.abspath(state), "gq")


def socket_path(home: str) -> str:
    return os.path.join(home, SOCKET_NAME)


def daemon_log(home: str) -> str:
    return os.path.join(home, DAEMON_LOG)


def system_path(relative: str, env=None) -> str:
    """/var/lib/gq, /run/gq/gq.sock or /etc/gq/config.toml, below $GQ_SYSTEM_ROOT if set."""
    env = os.environ if env is None else env
    root = os.path.abspath(env.get(SYSTEM_ROOT_ENV) or "/")
    return os.path.join(root, relative)


def daemon_socket(env=None) -> tuple[str, str | None]:
    """The socket of the daemon a `gq` command talks to, and the GQ_HOME it may start one in.

    On a host set up for a system daemon (its socket or /etc/gq/config.toml exists), the
    system daemon's, which no command starts (home None), unless GQ_HOME is set: setting it
    asks for a daemon of one's own. Elsewhere the user's own daemon, started on first use."""
    env = os.environ if env is None else env
    if not env.get("GQ_HOME") and system_host(env):
        return system_path(SYSTEM_SOCKET, env), None
    home = gq_home(env)
    return socket_path(home), home


def system_host(env=None) -> bool:
    """Whether this host is set up for a system daemon: its socket or its settings exist."""
    return (os.path.lexists(system_path(SYSTEM_SOCKET, env))
            or os.path.lexists(system_path(SYSTEM_CONFIG, env)))


def not_answering(path: str, home: str | None, env=None) -> str:
    """What every command says when no daemon answers at `path` (`home` None: the system
    daemon's socket). Never advice to start a daemon on a host that has a system one: a second
    daemon would hand out the same cards."""
    if home is None:
        return (f"the system daemon does not answer at {path}: it is stopped or starting "
                "(an admin can check: systemctl status gq)")
    if system_host(env):
        return (f"no daemon runs for {home}; this host's cards are the system daemon's "
                f"({system_path(SYSTEM_SOCKET, env)}): unset GQ_HOME to use it")
    return f"no daemon runs for {home} (start one: gq daemon start)"
