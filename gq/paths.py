"""Where gq keeps its state: one GQ_HOME per daemon. Strings only: every command imports it."""

from __future__ import annotations

import os

SOCKET_NAME = "gq.sock"
DAEMON_LOG = "daemon.log"
# sun_path holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


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
