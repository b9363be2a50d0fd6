"""Schema migrations: one function per change, never edited after it ships."""

from __future__ import annotations

import sqlite3

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
def m006_telemetry(db: Database) -> None:
    # Card telemetry (docs/telemetry.md). Times are whole milliseconds since the epoch, memory
    # whole MiB, power whole watts: the raw tables take a row per card (and per job and card)
    # every few seconds, so each byte counts. NULL is "could not be read", never 0.
    db.execute(
        """
        CREATE TABLE card_samples (
            t INTEGER NOT NULL,
            card INTEGER NOT NULL,
            util INTEGER,          -- percent
            mem INTEGER,           -- MiB used
            ext INTEGER,           -- MiB held by processes outside gq's running jobs
            temp INTEGER,          -- degrees C
            power INTEGER,         -- watts
            PRIMARY KEY (t, card)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE job_samples (
            t INTEGER NOT NULL,
            job_id INTEGER NOT NULL,
            card INTEGER NOT NULL,
            mem INTEGER,           -- MiB its processes hold on the card
            util INTEGER,          -- percent of the card it keeps busy
            PRIMARY KEY (t, job_id, card)
        ) WITHOUT ROWID
        """
    )
    # One-minute rollups: sums and counts, so that hours and days add up exactly.
    db.execute(
        """
        CREATE TABLE card_minutes (
            minute INTEGER NOT NULL,   -- t // 60000
            card INTEGER NOT NULL,
            n INTEGER NOT NULL,        -- samples
            util_n INTEGER NOT NULL,   -- samples with a known utilisation
            util_sum INTEGER NOT NULL,
            util_max INTEGER,
            mem_max INTEGER,
            mem_avg INTEGER,
            ext_max INTEGER,
            temp_max INTEGER,
            power_avg INTEGER,
            PRIMARY KEY (minute, card)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE job_minutes (
            job_id INTEGER NOT NULL,
            minute INTEGER NOT NULL,
            card INTEGER NOT NULL,
            n INTEGER NOT NULL,
            util_n INTEGER NOT NULL,
            util_sum INTEGER NOT NULL,
            mem_max INTEGER,
            PRIMARY KEY (job_id, minute, card)
        ) WITHOUT ROWID
        """
    )
    # Jobs and processes found wasting cards, one row per episode, and what was done about it.
    db.execute(
        """
        CREATE TABLE offences (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,        -- idle, over_declared, over_budget, zombie, stray
            job_id INTEGER,
            pid INTEGER,
            card INTEGER,
            user TEXT,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL,
            ended_at REAL,             -- NULL while it goes on
            evidence TEXT NOT NULL,
            figures TEXT NOT NULL,     -- JSON: the numbers behind the evidence
            action TEXT NOT NULL,      -- what the configuration says to do
            notified_at REAL,
            acted TEXT,                -- requeued, cancelled: done once, when due
            acted_at REAL
        )
        """
    )
    db.execute("CREATE INDEX offences_open ON offences(ended_at)")
    db.execute("CREATE INDEX offences_seen ON offences(last_seen)")
    # What each run used, for --mem auto and stats: the peak per card (JSON {card: bytes}),
    # its largest value, the mean utilisation, and a key for "the same command in the same
    # directory".
    for column in ("peaks TEXT", "peak_mem INTEGER", "util_mean REAL", "cmd_key TEXT"):
        db.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    db.execute("CREATE INDEX runs_cmd ON runs(cmd_key, ended_at)")


@migrations()
def m007_peers(db: Database) -> None:
    # Peers (docs/peers.md): how to reach each, and what was last seen of it.
    db.execute(
        """
        CREATE TABLE peers (
            name TEXT PRIMARY KEY,
            address TEXT NOT NULL,   -- host name or IP that SSH connects to
            port INTEGER,            -- NULL: ~/.ssh/config's, else 22
            user TEXT,               -- NULL: ~/.ssh/config's, else the daemon's user
            identity TEXT,           -- private key file; NULL: agent and default keys
            gq_home TEXT,            -- GQ_HOME there; NULL: its default
            gq_command TEXT NOT NULL DEFAULT 'gq',
            added_at REAL NOT NULL,
            version TEXT,
            last_seen REAL,
            last_error TEXT,
            snapshot TEXT            -- JSON {"jobs": [...], "gpus": [...]} as last seen
        )
        """
    )
    # A job queued here for another host (--host NAME|any) while none could take it: the
    # target ('any' or a peer's name) until it is sent, then where it went ('gpu2:17').
    # forward_args: the submit request to send (JSON), with its idempotency key.
    db.execute("ALTER TABLE jobs ADD COLUMN forward TEXT")
    db.execute("ALTER TABLE jobs ADD COLUMN forward_args TEXT")
    db.execute("ALTER TABLE jobs ADD COLUMN moved_to TEXT")


@migrations()
def m008_identity(db: Database) -> None:
    # The submitter's umask, which each run of the job gets; NULL for jobs from before it.
    db.execute("ALTER TABLE jobs ADD COLUMN umask INTEGER")


@migrations()
def m009_idempotency(db: Database) -> None:
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


@migrations()
def m010_governance(db: Database) -> None:
    # Pools, elastic ranges, interactive jobs, accounts and admin reservations
    # (docs/governance.md).
    for column in ("pool TEXT",  # NULL: the default pool
                   "gpus_max INTEGER",  # an elastic range's top; gpus is its bottom
                   "interactive INTEGER NOT NULL DEFAULT 0"):
        db.execute(f"ALTER TABLE jobs ADD COLUMN {column}")
    # What a run cost in fair share (its dominant share of the host, in card equivalents) and
    # the account it was charged to; NULL for runs recorded before: their weight stands in.
    db.execute("ALTER TABLE runs ADD COLUMN share REAL")
    db.execute("ALTER TABLE runs ADD COLUMN account TEXT")
    db.execute(
        """
        CREATE TABLE reservations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            cards TEXT NOT NULL,        -- JSON list of card indices
            start REAL NOT NULL,
            end REAL NOT NULL,
            holder_kind TEXT NOT NULL,  -- user, group or account
            holder TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            created_by TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX reservations_end ON reservations(end)")


@migrations()
def m011_slurm(db: Database) -> None:
    # A peer is a gq daemon ('gq') or a Slurm cluster ('slurm', docs/slurm.md), whose address
    # is a login node, or '' for this host's Slurm. options: JSON {partition, account, qos}.
    db.execute("ALTER TABLE peers ADD COLUMN kind TEXT NOT NULL DEFAULT 'gq'")
    db.execute("ALTER TABLE peers ADD COLUMN options TEXT")


@migrations()
def m012_slurm_jobs(db: Database) -> None:
    # The jobs this daemon sent to a Slurm peer (docs/slurm.md): what squeue does not say of
    # them (the command, gq's tier and signal), and the job as last seen there (its name,
    # directory, output files, state and exit code), so that a restarted daemon still shows
    # them and follows them to their end.
    db.execute(
        """
        CREATE TABLE slurm_jobs (
            peer TEXT NOT NULL,
            id INTEGER NOT NULL,     -- Slurm's job id
            command TEXT NOT NULL,   -- JSON list
            priority TEXT NOT NULL,  -- gq's tier
            signal TEXT NOT NULL,
            signal_before REAL,
            job TEXT,                -- JSON, as `gq show --json` gives it; NULL until seen
            PRIMARY KEY (peer, id)
        )
        """
    )


@migrations()
def m013_failures(db: Database) -> None:
    # Why a job's last run failed, and each failed run's class for stats (docs/triage.md).
    db.execute("ALTER TABLE jobs ADD COLUMN failure TEXT")
    db.execute("ALTER TABLE jobs ADD COLUMN failure_evidence TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE runs ADD COLUMN failure TEXT")


@migrations()
def m014_reservation_record(db: Database) -> None:
    # `gq reserve rm` marks a reservation removed instead of deleting it, so that `gq reserve
    # ls --all` is a record of every reservation made (docs/governance.md).
    db.execute("ALTER TABLE reservations ADD COLUMN removed_at REAL")
    db.execute("ALTER TABLE reservations ADD COLUMN removed_by TEXT")


@migrations()
def m015_written_by(db: Database) -> None:
    # Facts about the file itself: 'written_by', the version of the newest gq that opened it,
    # so that an older gq can name the version it would need (gq/store/precheck.py).
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def record_writer(db: Database) -> None:
    """Record which gq opened the file last, for an older one to name (precheck.py)."""
    from gq import __version__

    row = db.execute("SELECT value FROM meta WHERE key = 'written_by'").fetchone()
    if row is None or row[0] != __version__:
        try:
            with db.atomic():
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('written_by', ?)",
                           [__version__])
        except sqlite3.OperationalError:  # a full disk: the next start records it
            pass


def known_migrations() -> list[str]:
    """Every migration this gq knows, in order: the last one names its schema version."""
    return [m.name for m in migrations.pending(Database(memory=True))]


@migrations()
def m016_cleared(db: Database) -> None:
    # `gq ls` lists jobs that ended recently (docs/cli.md), read by the time they ended, until
    # their user clears them (`gq clean`): the time of each user's last clean.
    db.execute("CREATE INDEX jobs_ended_at ON jobs(ended_at)")
    db.execute("CREATE TABLE cleared (user TEXT PRIMARY KEY, at REAL NOT NULL)")


@migrations()
def m017_freeze(db: Database) -> None:
    # Freezing a preempted job's GPU state to host memory (docs/preemption.md#freezing): its
    # --preempt-mode, the host memory it holds while frozen, the cards it was frozen from (JSON),
    # the freeze or thaw a helper is doing for it, and how the last one went.
    for column in ("preempt_mode TEXT", "host_mem INTEGER",
                   "frozen_cards TEXT NOT NULL DEFAULT '[]'", "frozen_at REAL",
                   "freeze_op TEXT", "freeze_note TEXT"):
        db.execute(f"ALTER TABLE jobs ADD COLUMN {column}")


@migrations()
def m018_counters(db: Database) -> None:
    # Prometheus's counters (gq/store/tallies.py, docs/telemetry.md): what only grows, by name
    # and the value of its one label, kept apart from the jobs that `gq clean` forgets.
    db.execute("CREATE TABLE tallies (name TEXT NOT NULL, label TEXT NOT NULL DEFAULT '', "
               "value REAL NOT NULL DEFAULT 0, PRIMARY KEY (name, label))")


@migrations()
def m019_run(db: Database) -> None:
    # `gq run` (docs/run.md): how an attached job's shim meets its caller, as JSON; NULL for a
    # batch job.
    db.execute("ALTER TABLE jobs ADD COLUMN attach TEXT")


@migrations()
def m020_stop_asked_at(db: Database) -> None:
    # When the daemon asked a running job's shim to stop (a cancel, its time limit, a
    # preemption): until its run has let go of its cards, a job decided cancelled or timed out
    # has no ended_at and shows as `stopping`, with when its SIGKILL is due (docs/reliability.md).
    db.execute("ALTER TABLE jobs ADD COLUMN stop_asked_at REAL")
