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

# Histograms, by tier: the wait of a job (submit to first start) and the length of each run.
# Each observation adds to one bucket's row (not cumulative), to the sum and to the count; the
# buckets fit lab jobs, a second to a week. They are fixed: a bucket changed later would split
# every series of the histogram.
BUCKETS = (1.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 3 * 3600.0, 6 * 3600.0,
           12 * 3600.0, 86400.0, 2 * 86400.0, 7 * 86400.0)
HISTOGRAMS = ("wait_seconds", "run_seconds")
for _name in HISTOGRAMS:
    TALLIES.update({f"{_name}_bucket": "tier le", f"{_name}_sum": "tier",
                    f"{_name}_count": "tier"})


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


def observe(conn: sqlite3.Connection, name: str, tier: str, seconds: float) -> None:
    """One observation of the histogram `name` for `tier`, in the caller's transaction."""
    seconds = max(0.0, seconds)
    le = next((b for b in BUCKETS if seconds <= b), None)
    if le is not None:  # above the last bucket: counted in +Inf, the count, only
        add(conn, f"{name}_bucket", label=f"{tier} {le:g}")
    add(conn, f"{name}_sum", seconds, label=tier)
    add(conn, f"{name}_count", label=tier)


def histogram(found: dict[str, dict[str, float]], name: str
              ) -> dict[str, tuple[list[tuple[float, float]], float, float]]:
    """From read()'s answer: {tier: ([(le, observations up to le)...], sum, count)}, the
    buckets cumulative as Prometheus's are."""
    out = {}
    for tier, count in found[f"{name}_count"].items():
        per = found[f"{name}_bucket"]
        running, buckets = 0.0, []
        for le in BUCKETS:
            running += per.get(f"{tier} {le:g}", 0.0)
            buckets.append((le, running))
        out[tier] = (buckets, found[f"{name}_sum"].get(tier, 0.0), count)
    return out


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
