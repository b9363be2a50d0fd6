"""`gq triage FILE`: classify any log offline (a Slurm job's output, an old run's log) with the
classifier the daemon uses on every failed job."""

from __future__ import annotations

import os
from typing import Any

from gq.protocol import BAD_INPUT, GqError
from gq.protocol.op_names import Op
from gq.triage.classify import TAIL_BYTES, EndFacts, classify, suggest
from gq.triage.rules import GPU_OOM

ASK_TIMEOUT = 2.0  # seconds the host's daemon has to say its largest card; else none is known


def read_tail(path: str) -> str:
    """The end of a log file: the cause of death is printed last."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            return f.read().decode(errors="replace")
    except IsADirectoryError:
        raise GqError(f"{path}: is a directory; give a log file", BAD_INPUT) from None
    except FileNotFoundError:
        raise GqError(f"{path}: no such file", BAD_INPUT) from None
    except OSError as e:
        raise GqError(f"{path}: cannot read it: {e.strerror}", BAD_INPUT) from None


def triage_file(path: str, exit_code: int | None = None) -> dict[str, Any]:
    """{"failure", "evidence", "suggestion"} of a log file, as `gq triage --json` prints; the
    advice checked against this host's largest card when its daemon runs and says it."""
    found = classify(read_tail(path), EndFacts(exit_code=exit_code))
    advice = suggest(found.failure, evidence=found.evidence,
                     largest_card=host_largest_card() if found.failure == GPU_OOM else None)
    return found.as_json(advice)


def host_largest_card() -> int | None:
    """The memory of this host's largest card, as its daemon says it (ping); None when no
    daemon answers. Never starts one: triage works offline."""
    from gq.cli.client import try_connect
    from gq.paths import daemon_socket

    try:
        conn = try_connect(daemon_socket()[0], ASK_TIMEOUT)
        if conn is None:
            return None
        with conn:
            size = conn.call(Op.PING).get("largest_card")
    except (GqError, OSError, ValueError):
        return None
    return size if isinstance(size, int) and size > 0 else None


def print_triage(result: dict[str, Any]) -> None:
    from gq.cli.output import escape_controls

    print(f"failure:    {result['failure']}")
    for i, line in enumerate(result["evidence"] or ["-"]):  # lines of a log: escaped
        print(f"{'evidence:' if i == 0 else '':<11} {escape_controls(line)}")
    print(f"what to do: {result['suggestion']}")
