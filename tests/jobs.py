"""Job commands for tests: jobs that wait for a gate file, so tests wait on conditions."""

from __future__ import annotations

from pathlib import Path


def gated(gate: Path, exit_code: int = 0, mark: Path | None = None, echo: str = "") -> list[str]:
    """A job that records its start, prints `echo` (a shell expression), waits for `gate`."""
    script = ""
    if mark is not None:
        script += f'echo "$GQ_JOB_ID" >> "{mark}"; '
    if echo:
        script += f'echo {echo}; '
    script += f'while [ ! -e "{gate}" ]; do sleep 0.02; done; exit {exit_code}'
    return ["--", "sh", "-c", script]
