"""`gq daemon reload` and SIGHUP: read config.toml again and apply it without touching running
jobs, answering what changed; a file that does not load is refused and the old settings kept."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any

from gq.config import Config, load_config
from gq.config.show import effective
from gq.daemon.core import Daemon
from gq.daemon.submission import Caller
from gq.protocol import GqError

log = logging.getLogger("gq.daemon")

# Read once when the daemon starts serving: a new value waits for `gq daemon restart`.
AT_START = {("daemon", "max_connections_per_user"), ("daemon", "max_request")}


def op_reload(daemon: Daemon, caller: Caller, args: dict) -> dict:
    if caller.uid not in (0, os.getuid()):
        raise GqError("only root can reload the system daemon" if daemon.layout.system
                      else "only the daemon's owner can reload it")
    return reload(daemon)


def reload(daemon: Daemon) -> dict[str, Any]:
    """Load the file, apply it, and say each change as `[section] key: old -> new`."""
    try:
        new = load_config(daemon.layout.config)
    except GqError as e:
        raise GqError(f"{e.message}; the daemon keeps its settings (fix the file, then "
                      "gq daemon reload)") from None
    changes, later = _changes(daemon.config, new)
    _apply(daemon, new)
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


def _apply(daemon: Daemon, new: Config) -> None:
    # Settings kept by the daemon's parts rather than read from daemon.config each time.
    keep_server = (daemon.config.access.max_connections, daemon.config.access.max_request)
    new.access = replace(new.access, max_connections=keep_server[0], max_request=keep_server[1])
    daemon.config = new
    daemon.telemetry.config = new.telemetry
    daemon.telemetry.keep = new.offenders.longest_idle_window
    daemon.police.reconfigure(new)
    daemon.stopping.config = new
    daemon.ending.config = new
    daemon.freezing.config = new
    daemon.preempting.config = new
    daemon.starting.config = new
    daemon.passes.config = new
    daemon.authority.access = new.access
    daemon.backups.config = new.backup
    daemon.peers.config = new.peers
    daemon.passes.request_pass()
