"""What only grows, for Prometheus's counters (docs/telemetry.md): kept in a table of its own,
added to in the transaction of the change it counts, never recounted from jobs (`gq clean`
and pruning forget jobs; a counter must not go back)."""

from __future__ import annotations

import sqlite3

# counter -> the one label it is split by ("" for none). Label values are closed sets (states,
# failure classes, modes, kinds) or a user's name: never commands, directories or job names.
TALLIES = {
    "jobs_submitted": "", "jobs_ended": "state", "runs_failed": "class", "oom": "",
    "preemptions": "mode", "offences": "kind", "gpu_seconds": "user",
}


def add(conn: sqlite3.Connection, name: str, by: float = 1, label: str = "") -> None:
    """Count `by` more of `name` (split by its label's value `label`), in the caller's
    transaction."""
    if name not in TALLIES:
        raise KeyError(name)
    if by:
        conn.execute(
            "INSERT INTO tallies (name, label, value) VALUES (?, ?, ?) "
            "ON CONFLICT (name, label) DO UPDATE SET value = value + excluded.value",
            [name, label, by])


def read(conn: sqlite3.Connection) -> dict[str, dict[str, float]]:
    """Every counter: {name: {label value: total}} (every name present, maybe empty)."""
    found: dict[str, dict[str, float]] = {name: {} for name in TALLIES}
    for name, label, value in conn.execute("SELECT name, label, value FROM tallies"):
        if name in found:
            found[name][label] = value
    return found


def carry_forward(conn: sqlite3.Connection, kept: dict[str, dict[str, float]]) -> None:
    """After a database is replaced (`gq daemon restore`), no counter reads less than it did:
    each takes the larger of the restored value and `kept` (what the replaced one said)."""
    for name, labels in kept.items():
        for label, value in labels.items():
            conn.execute(
                "INSERT INTO tallies (name, label, value) VALUES (?, ?, ?) "
                "ON CONFLICT (name, label) DO UPDATE SET value = max(value, excluded.value)",
                [name, label, value])
