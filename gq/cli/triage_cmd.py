"""`gq triage FILE`: classify any log offline (a Slurm job's output, an old run's log) with the
classifier the daemon uses on every failed job."""

from __future__ import annotations

import os
from typing import Any

from gq.protocol import BAD_INPUT, GqError
from gq.triage.classify import TAIL_BYTES, EndFacts, classify, suggest


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
    """{"failure", "evidence", "suggestion"} of a log file, as `gq triage --json` prints."""
    found = classify(read_tail(path), EndFacts(exit_code=exit_code))
    return found.as_json(suggest(found.failure))


def print_triage(result: dict[str, Any]) -> None:
    from gq.cli.output import escape_controls

    print(f"failure:    {result['failure']}")
    for i, line in enumerate(result["evidence"] or ["-"]):  # lines of a log: escaped
        print(f"{'evidence:' if i == 0 else '':<11} {escape_controls(line)}")
    print(f"what to do: {result['suggestion']}")
