"""`gq __complete jobs CMD WORD` and `gq __complete hosts WORD`: what the shell scripts ask for.

A shell waits on this at every Tab, so it imports only the protocol and never starts a daemon:
with none running, or on any error, it prints nothing. Each line is `VALUE<tab>DESCRIPTION`.
"""

from __future__ import annotations

import socket
import sys

from gq.protocol.op_names import Op

TIMEOUT = 2.0  # seconds; a daemon that is this slow is better not waited for


def _jobs(purpose: str, word: str) -> list[list[str]]:
    from gq.paths import daemon_socket
    from gq.protocol import Connection

    with Connection(daemon_socket()[0], timeout=TIMEOUT) as conn:
        return conn.call(Op.COMPLETE, **{"for": purpose, "prefix": word})


def _hosts(word: str) -> list[list[str]]:
    """any, this host, and the peers (from the daemon, when it answers)."""
    rows = [["any", "wherever it starts first"], [socket.gethostname(), "this host"]]
    try:
        from gq.paths import daemon_socket
        from gq.protocol import Connection

        with Connection(daemon_socket()[0], timeout=TIMEOUT) as conn:
            rows += [[p["name"], f"peer, {p['state']}, {p['gpus']} GPU(s)"]
                     for p in conn.call(Op.PEERS)]
    except Exception:  # no daemon, an old one: the two that are always there
        pass
    return [r for r in rows if r[0].startswith(word)]


def complete(argv: list[str]) -> int:
    try:
        if argv[:1] == ["jobs"]:
            rows = _jobs(argv[1] if len(argv) > 1 else "", argv[2] if len(argv) > 2 else "")
        elif argv[:1] == ["hosts"]:
            rows = _hosts(argv[1] if len(argv) > 1 else "")
        else:
            return 2
    except Exception:  # no daemon, an old one, a timeout: offer nothing, say nothing
        return 0
    sys.stdout.write("".join(f"{value}\t{desc}\n" for value, desc in rows))
    return 0
