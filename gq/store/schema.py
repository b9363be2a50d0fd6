"""Schema migrations: one function per change, never edited after it ships."""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("gq")


@migrations()
def m001_jobs_and_events(db: Database) -> None:
    # AUTOINCREMENT: an id is never handed out twice, even after the newest job is purged.
    db.execute(
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL DEFAULT '',
            user TEXT NOT NULL,
            uid INTEGER NOT NULL,
            host TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL,
            reason TEXT,
            priority TEXT NOT NULL,
            gpus INTEGER NOT NULL,
            mem INTEGER,
            cpus INTEGER NOT NULL,
            ram INTEGER,
            time_limit REAL,
            command TEXT NOT NULL,   -- JSON list
            cwd TEXT NOT NULL,
            env TEXT NOT NULL,       -- JSON object
            deps TEXT NOT NULL,      -- JSON {"after": [ids], ...}
            submitted_at REAL NOT NULL,
            started_at REAL,
            ended_at REAL,
            exit_code INTEGER,
            restarts INTEGER NOT NULL DEFAULT 0,
            gpu_ids TEXT NOT NULL DEFAULT '[]',
            -- 1 while the shim of the job's current run may still hold its resources
            holding INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    db.execute("CREATE INDEX jobs_state ON jobs(state)")
    db.execute("CREATE INDEX jobs_holding ON jobs(holding) WHERE holding = 1")
    db.execute("CREATE INDEX jobs_user ON jobs(user, id)")
    db.execute(
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id INTEGER NOT NULL,
            at REAL NOT NULL,
            old_state TEXT,
            new_state TEXT NOT NULL,
            reason TEXT,
            detail TEXT
        )
        """
    )
    db.execute("CREATE INDEX events_job ON events(job_id, id)")


@migrations()
def m002_runs(db: Database) -> None:
    # One row per ended run of a job: what fair share charges, and what stats will report.
    db.execute(
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id INTEGER NOT NULL,
            user TEXT NOT NULL,
            gpus INTEGER NOT NULL,
            weight REAL NOT NULL,   -- cards held: 1 per whole card, mem/card memory per slice
            started_at REAL NOT NULL,
            ended_at REAL NOT NULL,
            state TEXT NOT NULL     -- how the run ended: completed, failed, requeued...
        )
        """
    )
    db.execute("CREATE INDEX runs_ended ON runs(ended_at)")


@migrations()
def m003_preemption(db: Database) -> None:
    # Preemption, checkpoint signals and out-of-memory retries (docs/preemption.md).
    for column in (
        "preemptible INTEGER NOT NULL DEFAULT 0",
        "signal TEXT NOT NULL DEFAULT 'SIGTERM'",
        "signal_before REAL",
        "signal_group INTEGER NOT NULL DEFAULT 0",
        "grace REAL",  # NULL: [preemption] grace of config.toml
        "preemptions INTEGER NOT NULL DEFAULT 0",
        "retry_oom INTEGER NOT NULL DEFAULT 0",
        "oom_retries INTEGER NOT NULL DEFAULT 0",
        "peak_mem INTEGER",
    ):
        db.execute(f"ALTER TABLE jobs ADD COLUMN {column}")
    # Low-tier jobs are preemptible unless submitted otherwise; those queued before knew no
    # other default.
    db.execute("UPDATE jobs SET preemptible = 1 WHERE priority = 'low'")


@migrations()
def m004_arrays(db: Database) -> None:
    # Elements of an array or sweep are jobs of their own; these say which array and where.
    # array_id is the job id of the array's first element. NULL for a job not in an array.
    for column, kind in (("array_id", "INTEGER"), ("array_index", "INTEGER"),
                         ("array_size", "INTEGER"), ("array_limit", "INTEGER"),
                         ("array_params", "TEXT")):  # JSON {"lr": "1e-3"} of a sweep element
        db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
    db.execute("CREATE INDEX jobs_array ON jobs(array_id) WHERE array_id IS NOT NULL")


@migrations()
def m005_notify(db: Database) -> None:
    # JSON {"command": ..., "mail": ...} of --notify and --mail; NULL: nobody to tell.
    db.execute("ALTER TABLE jobs ADD COLUMN notify TEXT")


@migrations()
def m008_idempotency(db: Database) -> None:
    # The key a client sends with a submit (gq/cli/client.py), so that a submit retried after
    # a lost answer returns the job queued the first time instead of queuing a second one.
    # Keyed by the caller's uid: a key names nothing of another user's. Old keys are pruned.
    db.execute(
        """
        CREATE TABLE submit_keys (
            uid INTEGER NOT NULL,
            key TEXT NOT NULL,
            job_id INTEGER NOT NULL,  -- the job, or the first element of an array
            at REAL NOT NULL,
            PRIMARY KEY (uid, key)
        )
        """
    )
    db.execute("CREATE INDEX submit_keys_at ON submit_keys(at)")
