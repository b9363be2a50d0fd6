"""`gq __complete jobs CMD WORD` and `gq __complete hosts WORD`: what the shell scripts ask for.

A shell waits on this at every Tab, so it imports only the protocol and never starts a daemon:
with none running, or on any error, it prints nothing. Each line is `VALUE<tab>DESCRIPTION`.
"""

from __future__ import annotations

import socket
import sys

TIMEOUT = 2.0  # seconds; a daemon that is this slow is better not waited for


def _jobs(purpose: str, word: str) -> list[list[str]]:
    from gq.paths import daemon_socket
    from gq.protocol import Connection

    with Connection(daemon_socket()[0], timeout=TIMEOUT) as conn:
        return conn.call("complete", **{"for": purpose, "prefix": word})


def _hosts(word: str) -> list[list[str]]:
    # Peers (`gq peers`) will add theirs here; until then: this host, and any.
    rows = [["any", "wherever it starts first"], [socket.gethostname(), "this host"]]
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
