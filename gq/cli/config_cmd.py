"""`gq config show` and `gq config check`: the daemon's settings and where each came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gq.protocol import GqError

SOURCE_COLUMN = 40


def _toml(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)  # strings, numbers and lists are written alike in TOML


def print_settings(report: dict[str, Any]) -> None:
    state = "read" if report["read"] else "absent: every setting is its default"
    print(f"# the settings of the daemon at {report['socket']}")
    print(f"# its file: {report['file']} ({state})")
    section = None
    for row in report["settings"]:
        if row["section"] != section:
            section = row["section"]
            print(f"\n[{section}]")
        line = f"{row['key']} = {_toml(row['value'])}"
        print(f"{line:<{SOURCE_COLUMN - 1}} # {row['source']}")


def default_file() -> str:
    """The file the daemon a command would reach reads: the system one, or $GQ_HOME's."""
    from gq.paths import SYSTEM_CONFIG, daemon_socket, system_path

    _socket, home = daemon_socket()
    return system_path(SYSTEM_CONFIG) if home is None else str(Path(home) / "config.toml")


def check_file(path: str | None) -> str:
    """Load a file as a daemon would at start; what to say when it is good."""
    from gq.config import check_cards, load_config

    file = Path(path or default_file())
    if not file.exists():
        if path:
            raise GqError(f"{file}: no such file", 2)
        return f"{file}: absent; the daemon uses the defaults (gq config show)"
    try:
        config = load_config(file)
        check_cards(config, host_cards())
    except GqError as e:  # the line and the reason; the file is this command's input
        raise GqError(e.message, 2) from None
    return f"{file}: good"


def host_cards() -> list[int]:
    """This host's cards, as a daemon started here would find them (GQ_SIM_GPUS, else NVML),
    without starting one."""
    import os

    from gq.gpu import SIM_ENV

    spec = os.environ.get(SIM_ENV, "").strip()
    if spec:
        from gq.gpu.sim import parse_sim_spec

        try:
            return list(range(len(parse_sim_spec(spec))))
        except ValueError as e:
            raise GqError(f"{SIM_ENV}={e}", 2) from None
    from gq.gpu.nvml import NvmlBackend, NvmlUnavailable

    try:
        with NvmlBackend() as backend:
            return [g.index for g in backend.read()]
    except NvmlUnavailable:  # the daemon would find no cards either
        return []
