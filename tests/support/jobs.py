"""Job commands for tests: jobs that wait for a gate file, so tests wait on conditions; what a
job saw."""

from __future__ import annotations

from pathlib import Path


def gated(gate: Path, exit_code: int = 0, mark: Path | None = None, echo: str = "") -> list[str]:
    """A job that records its start, prints `echo` (a shell expression), waits for `gate`."""
    script = ""
    if mark is not None:
        script += f'echo "$GQ_JOB_ID" >> "{mark}"; '
    if echo:
        script += f'echo {echo}; '
    # Also ends when the test's directory is gone, so a failed test leaves nothing spinning.
    script += (f'while [ ! -e "{gate}" ]; do [ -d "{gate.parent}" ] || exit 99; sleep 0.02; '
               f'done; exit {exit_code}')
    return ["--", "sh", "-c", script]


def env_file(path) -> dict[str, str]:
    """`env -0` output as a dict."""
    pairs = [item.split("=", 1) for item in path.read_text().split("\0") if "=" in item]
    return dict(pairs)
