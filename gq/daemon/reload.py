"""`gq daemon reload` and SIGHUP: read config.toml again and apply it without touching running
jobs, answering what changed; a file that does not load is refused and the old settings kept."""

from __future__ import annotations

import logging
import os
from typing import Any

from gq.config import Config, load_config
from gq.config.show import effective
from gq.daemon.context import Context
from gq.daemon.submission import Caller
from gq.protocol import GqError

log = logging.getLogger("gq.daemon")

# Read once when the daemon starts serving: a new value waits for `gq daemon restart`.
AT_START = {("daemon", "max_connections_per_user"), ("daemon", "max_request"),
            ("host", "cgroups")}  # where the jobs' cgroups are: arranged at start


def op_reload(daemon: Context, caller: Caller, args: dict) -> dict:
    if caller.uid not in (0, os.getuid()):
        raise GqError("only root can reload the system daemon" if daemon.layout.system
                      else "only the daemon's owner can reload it")
    return reload(daemon)


def reload(daemon: Context) -> dict[str, Any]:
    """Load the file, apply it, and say each change as `[section] key: old -> new`."""
    try:
        new = load_config(daemon.layout.config)
    except GqError as e:
        raise GqError(f"{e.message}; the daemon keeps its settings (fix the file, then "
                      "gq daemon reload)") from None
    changes, later = _changes(daemon.config, new)
    daemon.apply_config(new)
    for line in changes + later:
        log.info("reload: %s", line)
    return {"file": str(daemon.layout.config), "changes": changes, "at_restart": later}


def _changes(old: Config, new: Config) -> tuple[list[str], list[str]]:
    before = {(r["section"], r["key"]): r["value"] for r in effective(old)}
    now, later = [], []
    for row in effective(new):
        key = (row["section"], row["key"])
        if before.get(key) != row["value"]:
            line = f"[{key[0]}] {key[1]}: {_shown(before.get(key))} -> {_shown(row['value'])}"
            (later if key in AT_START else now).append(line)
    for section in ("pools", "accounts"):
        if getattr(old, section) != getattr(new, section):
            now.append(f"[{section}]: changed")
    return now, [f"{line} (at the next gq daemon restart)" for line in later]


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)
