"""The job store: SQLite through sqlite-utils. The only module that writes SQL."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from copy import copy
from pathlib import Path
from typing import Any

from gq.model import (
    ENDED_STATES, ArrayPart, DepKind, Job, JobState, Notify, Tier, check_transition, clone,
)
from gq.store.history import History
from gq.store.cleared import Cleared
from gq.store.connection import Connection
from gq.store.offences import Offences
from gq.store.reservations import Reservations
from gq.store.resident import Resident
from gq.store.samples import Samples
from gq.store.slurm_jobs import SlurmJobs
from gq.store import tallies
from gq.store.schema import migrations, record_writer
from gq.store.select import select

_JSON_FIELDS = ("command", "env", "deps", "gpu_ids", "failure_evidence", "frozen_cards",
                "attach")
_JOB_COLUMNS = (
    "id name user uid host state reason priority gpus mem cpus ram time_limit command cwd env "
    "deps submitted_at started_at ended_at exit_code restarts gpu_ids preemptible signal "
    "signal_before signal_group grace preemptions retry_oom oom_retries peak_mem "
    "forward moved_to umask pool gpus_max interactive failure failure_evidence "
    "preempt_mode host_mem frozen_cards frozen_at freeze_op freeze_note attach stop_asked_at"
).split()
# Interned, as the names of Job's parameters are: Job(**row) then matches each keyword by
# identity; with names split from a string it compared them as text, each against every
# parameter, which was half of what decoding a job's row cost (18 of 34 us).
_JOB_COLUMNS = [sys.intern(c) for c in _JOB_COLUMNS]
_BOOL_FIELDS = ("preemptible", "signal_group", "interactive")
# What a scheduling pass needs: not the command, directory and environment, which are large
# and only needed to start a job.
_HEAVY_COLUMNS = {"command", "cwd", "env", "notify", "forward_args"}
# An array's elements store these once, in the first element's row, and _SHARED in theirs:
# a 100 KB environment of a 10,000-element array is 100 KB, not 1 GB.
_SHARED_COLUMNS = ("command", "env")
_SHARED = "null"
# Job.array is stored flat, in these columns (migration m004).
_ARRAY_COLUMNS = ("array_id", "array_index", "array_size", "array_limit", "array_params")
_LIGHT_SELECT = ", ".join(c for c in (*_JOB_COLUMNS, *_ARRAY_COLUMNS)
                          if c not in _HEAVY_COLUMNS)
_LIGHT_KEYS = _LIGHT_SELECT.split(", ")
# A job decided cancelled or timed out whose run has not let go yet (Job.is_stopping) is listed
# as the daemon shows it: `stopping` (gq/daemon/views.py shown_state).
_SHOWN_STATE = ("(CASE WHEN ended_at IS NULL AND stop_asked_at IS NOT NULL AND state IN ("
                + ", ".join(f"'{s}'" for s in sorted(map(str, ENDED_STATES)))
                + ") THEN 'stopping' ELSE state END)")
HEAVY_KEPT = 512  # jobs whose command, directory and environment Store keeps (see get_job)
# A job's row but its environment (the largest column): what `gq ls --json` shows.
_NO_ENV_SELECT = ", ".join(c for c in (*_JOB_COLUMNS, *_ARRAY_COLUMNS, "notify", "forward_args")
                           if c != "env")
_ENDED_NAMES = frozenset(str(s) for s in ENDED_STATES)
# Columns whose value, as the daemon sets it, is the job's attribute as it is (no enum, no
# mapping to build): Store._recache puts them into the cached job without reading the row.
_AS_THEY_ARE = frozenset(
    "state reason started_at ended_at exit_code gpu_ids holding peak_mem failure "
    "failure_evidence restarts mem oom_retries preemptions host_mem freeze_op frozen_at "
    "freeze_note stop_asked_at".split())
_TIMES = ("submitted_at", "started_at", "ended_at")
_NO_PARAMS: dict[str, str] = {}  # an array element's in memory without sweep values (shared)
if not _AS_THEY_ARE - {"holding"} <= {f.name for f in dataclasses.fields(Job)}:
    raise ImportError("Store._recache sets fields that Job does not have")


BUSY_WAIT_MS = 500  # how long a write waits for another process's lock on the database


class Store:
    """The job store. Being the only writer, it also keeps the queue (pending and held jobs)
    and the jobs holding resources in memory, written through on every change, so that a
    scheduling pass reads no rows: reading them made each pass cost time in proportion to the
    queue. The cached Jobs are light (no command, cwd or env) and must not be mutated."""

    def __init__(self, path: Path | str):
        self.path = str(path)
        self.unsynced = 0  # commits made in synced_later(), counted: see GroupCommit
        # Commits are FULL outside relaxed(): an acknowledged cancel survives a power cut, not
        # only a daemon crash.
        self.db = Connection(str(path))
        self.db.execute("PRAGMA journal_mode=WAL")
        # The only writer: a lock it meets is another process's (an admin's sqlite3), and the
        # daemon's one thread waits on it; a request that still finds it is refused in one
        # line naming the holder (gq/store/lock_holder.py) and may be sent again.
        self.db.execute(f"PRAGMA busy_timeout={BUSY_WAIT_MS}")
        migrations.apply(self.db)
        record_writer(self.db)
        self.samples = Samples(self.db)
        self.offences = Offences(self.db)
        self.cleared = Cleared(self.db)
        self.history = History(self.db)
        self.reservations = Reservations(self.db)
        self.slurm_jobs = SlurmJobs(self.db)
        self._firsts: dict[int, dict[str, Any]] = {}  # array id -> its shared columns, decoded
        self._affinity = {row[1]: _affinity(row[2])
                          for row in self.db.execute("PRAGMA table_info(jobs)")}
        self._load_cache()

    def _load_cache(self) -> None:
        # The jobs waiting or holding resources, one copy of each (gq/store/resident.py).
        self.resident = Resident()
        # gq top's cursor (changes_since): every change to a job in memory takes the next
        # version; _changed holds each such job's last, oldest first. A reload (start, a
        # rolled-back transaction) makes every earlier cursor start over.
        self.version = getattr(self, "version", 0) + 1
        self._reloaded = self.version
        self._changed: dict[int, int] = {}
        # The kept queue's (gq/daemon/kept_queue.py): jobs changed since it last took them;
        # None: everything.
        self._kept_changes: set[int] | None = None  # see take_changes
        # The command, directory, environment and notification of jobs submitted here lately
        # and still waiting or holding resources (see get_job): a start read and decoded them
        # (the environment a few KB of JSON), and an end read them again.
        self._heavy: dict[int, tuple[list[str], str, dict[str, str], Notify | None]] = {}
        waiting = ",".join(f"'{s}'" for s in (JobState.PENDING, JobState.HELD))
        rows = self.db.query(
            f"SELECT {_LIGHT_SELECT}, holding FROM jobs WHERE state IN ({waiting}) OR holding = 1"
        )
        for row in rows:
            self._cache(row)

    def _cache(self, row: dict[str, Any]) -> None:
        self._cache_job(_row_to_job(row), bool(row["holding"]))

    def _cache_job(self, job: Job, holding: bool) -> None:
        if self._kept_changes is not None:
            self._kept_changes.add(job.id)
        self.resident.put(job, holding)
        self._touch(job.id)

    def _touch(self, job_id: int) -> None:
        self.version += 1
        self._changed.pop(job_id, None)
        if job_id in self.resident:
            self._changed[job_id] = self.version
        else:  # ended: read from its row from now on
            self._heavy.pop(job_id, None)

    def changes_since(self, version: int, limit: int | None = None) -> list[Job] | None:
        """The jobs in memory (waiting or holding resources) that changed after `version`
        (a `version` read earlier), light and not to be mutated; None when that version is
        from before the cache was last loaded, or more than `limit` changed: start over
        from queue() and holding_jobs()."""
        if version < self._reloaded or version > self.version:
            return None
        changed = []
        for job_id, at in reversed(self._changed.items()):
            if at <= version:
                break
            if limit is not None and len(changed) >= limit:
                return None
            changed.append(self.resident.jobs[job_id])
        self.resident.read += len(changed)
        return changed

    def _recache(self, job_id: int, **changes: Any) -> None:
        """After an UPDATE that set `changes` (as given to _update): the cached job with them,
        where the job is cached and they are columns whose value is the job's attribute as it
        is; else its row read back. A start and an end each save a read and a decode."""
        cached = self.resident.get(job_id)
        if cached is None or not changes.keys() <= _AS_THEY_ARE:
            self._refresh(job_id)
            return
        holding = changes.pop("holding", job_id in self.resident.holding)
        job = clone(cached)  # dataclasses.replace, at a fifth of its cost
        for name, value in changes.items():
            setattr(job, name, value)
        self._cache_job(job, bool(holding))

    def _refresh(self, job_id: int) -> None:
        rows = self._rows(f"SELECT {_LIGHT_SELECT}, holding FROM jobs WHERE id = ?", [job_id])
        if rows:
            self._cache(rows[0])

    def _rows(self, sql: str, args: list) -> list[dict[str, Any]]:
        return select(self.db, sql, args)

    def take_changes(self) -> set[int] | None:
        """The jobs whose cached row changed (queued, changed, started, ended...) since the
        last call; None: any may have (the cache was reloaded). For the daemon's kept queue
        (gq/daemon/kept_queue.py), which follows the cache without reading all of it. A
        reason set by set_reasons is not a change."""
        changed, self._kept_changes = self._kept_changes, set()
        return changed

    def waiting_count(self, uid: int) -> int:
        """How many pending and held jobs the user has (the submit limits count them)."""
        return self.resident.waiting_of.get(uid, 0)

    def cached_job(self, job_id: int) -> Job | None:
        """A job waiting or holding resources, light, from memory (not to be mutated); None
        otherwise."""
        return self.resident.get(job_id)

    def state(self, job_id: int) -> JobState | None:
        """A job's state (from memory when it is cached); None: no such job."""
        cached = self.cached_job(job_id)
        if cached is not None:
            return cached.state
        row = self.db.conn.execute("SELECT state FROM jobs WHERE id = ?", [job_id]).fetchone()
        return None if row is None else JobState(row[0])

    def waiting_job(self, job_id: int) -> Job | None:
        """A pending or held job, light, from memory (not to be mutated); None otherwise."""
        return self.resident.get(job_id) if job_id in self.resident.waiting else None

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def atomic(self):
        """One transaction around several changes (nested ones become savepoints)."""
        outermost = not self.db.conn.in_transaction
        try:
            with self.db.atomic():
                yield self
        except BaseException:
            # Rolled back (a full disk fails the commit itself): the cache, written through
            # by the changes inside, goes back to what the database holds.
            if outermost:
                self._load_cache()
                self.reservations.reload()
            raise

    def counters(self) -> tuple[int, int]:
        """The highest job id handed out, and the rows changed since the store was opened."""
        row = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
        return (row[0] if row else 0), self.db.conn.total_changes

    def tallies(self) -> dict[str, dict[str, float]]:
        """What only grows (gq/store/tallies.py): {counter: {label value: total}}."""
        return tallies.read(self.db.conn)

    def skip_ids(self, highest: int) -> None:
        """Hand out no id up to `highest`: ids whose files outlived their rows (skip_lost_ids)."""
        with self.db.atomic():
            self.db.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'jobs'",
                            [highest])
            self.db.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs', ? WHERE "
                            "NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs')",
                            [highest])

    @contextmanager
    def synced_later(self):
        """Commits made inside are written as in relaxed(), and counted in `unsynced`: the
        caller tells the user only once sync_wal() has run after them, which makes them as
        durable as a FULL commit. Many such commits share one fsync, run off the daemon's
        thread (group commit: gq/daemon/group_commit.py); a submit is one."""
        with self.relaxed():
            yield self
        self.unsynced += 1

    def needs_sync(self) -> None:
        """What is answered next rests on commits that may not be on disk yet (a submit sent
        again, answered with the job its first attempt queued)."""
        self.unsynced += 1

    def sync_wal(self) -> None:
        """Flush the write-ahead log to disk: every commit written before this call is then
        durable. Touches a file, not the connection, so it may run in another thread."""
        path = f"{self.path}-wal"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # nothing written through the log: the file itself
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)

    @contextmanager
    def relaxed(self):
        """Commits made inside need not reach the disk before they return (WAL with
        synchronous=NORMAL): they survive a daemon crash but maybe not a power cut. For facts
        the daemon can rebuild from the run directories (starts, exits, reasons); what a user
        was told, a cancel, is committed with FULL outside of it, and a submit is synced
        before it is answered (synced_later)."""
        self.db.relaxed += 1  # read as each transaction begins (gq/store/connection.py)
        try:
            yield self
        finally:
            self.db.relaxed -= 1

    # ---- jobs -------------------------------------------------------------------------

    def insert_job(self, job: Job, at: float, key: str | None = None) -> int:
        """Queue a job; `key`, the client's idempotency key, is recorded in the same
        transaction (see job_for_key)."""
        row = _job_to_row(job)
        row.pop("id")
        sql = f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        with self.db.atomic():
            job_id = self.db.conn.execute(sql, list(row.values())).lastrowid
            self._event(job_id, at, None, job.state, None, "submitted")
            self._remember_key(job.uid, key, job_id, at)
            tallies.add(self.db.conn, "jobs_submitted")
        light = _as_stored({k: row.get(k) for k in _LIGHT_KEYS}, self._affinity)
        if light is None:
            self._refresh(job_id)
        else:  # as _refresh would read it back, without the read
            self._cache({**light, "id": job_id, "holding": 0})
        if job.forward_args is None:  # a job forwarded to a peer is never started here
            if len(self._heavy) >= HEAVY_KEPT:
                del self._heavy[next(iter(self._heavy))]  # the oldest
            self._heavy[job_id] = (list(job.command), job.cwd, dict(job.env), job.notify)
        return int(job_id)

    def insert_array(self, jobs: list[Job], at: float, key: str | None = None) -> list[int]:
        """Insert the elements of an array in one transaction: all of them or none. They get
        consecutive ids; the first one's is the array's id, which each element records.
        The elements differ only in their index, parameters and maybe command: the first
        element's row is encoded once and the others are copies of it (10,000 elements of a
        100 KB environment cost one encoding of it, and one copy on disk: _shared)."""
        with self.db.atomic():
            row = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
            first = (row[0] if row else 0) + 1
            base = _job_to_row(jobs[0])
            base.update(id=first, array_id=first)
            columns = list(base)
            at_ = {c: i for i, c in enumerate(columns)}
            template = [base[c] for c in columns]
            template[at_["env"]] = _SHARED
            rows = [[base[c] for c in columns]]
            for offset, job in enumerate(jobs[1:], 1):
                values = template.copy()
                values[at_["id"]] = first + offset
                if job.command is not jobs[0].command:  # an array's elements share the list
                    command = json.dumps(job.command)
                    values[at_["command"]] = _SHARED if command == base["command"] else command
                else:
                    values[at_["command"]] = _SHARED
                values[at_["array_index"]] = job.array.index
                values[at_["array_params"]] = (json.dumps(job.array.params) if job.array.params
                                               else "{}")
                rows.append(values)
            self.db.conn.executemany(
                f"INSERT INTO jobs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                rows)
            self.db.conn.executemany(
                "INSERT INTO events (job_id, at, old_state, new_state, detail) "
                "VALUES (?, ?, NULL, ?, 'submitted')",
                [(first + offset, at, base["state"]) for offset in range(len(rows))],
            )
            self._remember_key(jobs[0].uid, key, first, at)
            tallies.add(self.db.conn, "jobs_submitted", len(rows))
        for offset, job in enumerate(jobs):  # light, as _load_cache would read them
            light = clone(job)
            light.id, light.command, light.cwd, light.env = first + offset, [], "", {}
            light.notify = light.forward_args = None
            part = job.array
            light.array = ArrayPart(first, part.index, part.size, part.limit,
                                    part.params or _NO_PARAMS)
            self._cache_job(light, holding=False)
        return [first + offset for offset in range(len(rows))]

    def job_for_key(self, uid: int, key: str) -> int | None:
        """The job (or array) that a submit with this idempotency key queued, if any."""
        row = self.db.execute("SELECT job_id FROM submit_keys WHERE uid = ? AND key = ?",
                              [uid, key]).fetchone()
        return row[0] if row else None

    def forget_keys(self, before: float) -> None:
        """Idempotency keys older than `before`: a client retries within minutes."""
        with self.relaxed(), self.db.atomic():
            self.db.execute("DELETE FROM submit_keys WHERE at < ?", [before])

    def _remember_key(self, uid: int, key: str | None, job_id: int, at: float) -> None:
        if key is not None:
            self.db.execute("INSERT INTO submit_keys (uid, key, job_id, at) VALUES (?, ?, ?, ?)",
                            [uid, key, job_id, at])

    def array_members(self, array_id: int, limit: int | None = None) -> list[int]:
        """The job ids of the array with this id, by index (the first `limit` of them); []
        when there is none."""
        sql = "SELECT id FROM jobs WHERE array_id = ? ORDER BY array_index"
        rows = self._rows(sql if limit is None else f"{sql} LIMIT {int(limit)}", [array_id])
        self.resident.read += len(rows)
        return [r["id"] for r in rows]

    def array_outcomes(self, array_ids: list[int]) -> dict[int, dict[str, int]]:
        """Per array, how many of its elements ended in each state."""
        out: dict[int, dict[str, int]] = {}
        if not array_ids:
            return out
        marks = ",".join("?" * len(array_ids))
        ended = [str(s) for s in ENDED_STATES]
        for row in self.db.query(
                f"SELECT array_id, state, COUNT(*) AS n FROM jobs WHERE array_id IN ({marks}) "
                f"AND state IN ({','.join('?' * len(ended))}) GROUP BY array_id, state",
                [*array_ids, *ended]):
            out.setdefault(row["array_id"], {})[row["state"]] = row["n"]
        return out

    def array_element(self, array_id: int, index: int) -> int | None:
        rows = list(self.db.query("SELECT id FROM jobs WHERE array_id = ? AND array_index = ?",
                                  [array_id, index]))
        return rows[0]["id"] if rows else None

    def get_job(self, job_id: int, env: bool = True) -> Job | None:
        """A job, whole; env=False leaves out its environment (the largest column, which only
        a start needs)."""
        heavy, light = self._heavy.get(job_id), self.cached_job(job_id)
        if heavy is not None and light is not None:  # as the row gives it, copies of these
            command, cwd, environment, notify = heavy
            job = clone(light)
            job.command, job.cwd, job.notify = list(command), cwd, copy(notify)
            job.env = dict(environment) if env else {}
            return job
        columns = "*" if env else _NO_ENV_SELECT
        rows = self._shared(self._rows(f"SELECT {columns} FROM jobs WHERE id = ?", [job_id]))
        return _row_to_job(rows[0]) if rows else None

    def command(self, job_id: int) -> list[str]:
        """A job's command alone (its fingerprint, for learned run times), without reading
        and decoding its environment."""
        row = self.db.conn.execute("SELECT command, array_id FROM jobs WHERE id = ?",
                                   [job_id]).fetchone()
        if row is None:
            return []
        if row[0] == _SHARED:  # an array element: its first element's
            return copy(self._first(row[1])["command"])
        return json.loads(row[0])

    def _shared(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows with what array elements share filled in from their first element's, decoded
        (and kept decoded for the next few arrays: gq cancel of a 10,000-element array reads
        each element, and must not decode a large environment 10,000 times). Each row gets
        copies: a job's environment is changed when it starts (set_array_env)."""
        out = []
        for row in rows:
            if row.get("array_id") is not None and any(row.get(k) == _SHARED
                                                       for k in _SHARED_COLUMNS):
                first = self._first(row["array_id"])
                row = {**row, **{k: copy(first[k]) for k in _SHARED_COLUMNS
                                 if row.get(k) == _SHARED}}
            out.append(row)
        return out

    def _first(self, array_id: int) -> dict[str, Any]:
        """The shared columns of an array's first element, decoded (kept for a few arrays)."""
        first = self._firsts.get(array_id)
        if first is None:
            found = self.db.execute(
                f"SELECT {', '.join(_SHARED_COLUMNS)} FROM jobs WHERE id = ?",
                [array_id]).fetchone() or ("[]", "{}")
            first = {k: json.loads(v) for k, v in zip(_SHARED_COLUMNS, found)}
            if len(self._firsts) >= 16:
                del self._firsts[next(iter(self._firsts))]
            self._firsts[array_id] = first
        return first

    def is_holding(self, job_id: int) -> bool:
        return job_id in self.resident.holding

    def queue(self) -> list[Job]:
        """Pending and held jobs, light, from memory."""
        jobs = self.resident.jobs
        self.resident.read += len(self.resident.waiting)
        return [jobs[i] for i in self.resident.waiting]

    def jobs(
        self,
        states: Iterable[JobState] | None = None,
        user: str | None = None,
        ids: Iterable[int] | None = None,
        limit: int | None = None,
        light: bool = False,
        ended_after: float | None = None,
        after: int | None = None,
        page: int | None = None,
        env: bool = True,
        moved: bool = True,
        upto: int | None = None,
    ) -> list[Job]:
        """Jobs by id. light=True leaves out command, cwd and env (for scheduling passes),
        env=False only the environment; `ended_after`: only those active or ended after that
        time; `limit`: the last so many; `after` and `page`: the first `page` jobs with an id
        above `after` (a listing read page by page); moved=False leaves out jobs moved to a
        peer (listed there)."""
        where, args, order = _where(states=states, user=user, ids=ids,
                                    ended_after=ended_after, after=after, moved=moved,
                                    upto=upto)
        select = _LIGHT_SELECT if light else ("*" if env else _NO_ENV_SELECT)
        sql = f"SELECT {select} FROM jobs{where} ORDER BY {order}"
        if limit is not None:
            sql = f"SELECT * FROM ({sql} DESC LIMIT {int(limit)}) ORDER BY id"
        elif page is not None:
            sql += f" LIMIT {int(page)}"
        rows = self._rows(sql, args)
        self.resident.read += len(rows)
        return [_row_to_job(r) for r in (rows if light else self._shared(rows))]

    def listing(self, columns: list[str], states: Iterable[JobState] | None = None,
                user: str | None = None, ended_after: float | None = None,
                after: int | None = None, page: int | None = None,
                as_json: bool = False, upto: int | None = None) -> list[tuple]:
        """What `gq ls` prints of jobs, as rows of these columns, without building a Job: a
        listing of 10,000 ended jobs reads 10,000 short rows. Values as stored (gpu_ids as
        JSON text), but times in whole epoch seconds, as the ISO-8601 times of the JSON views
        give them. as_json: each row as (id, array_id, the columns as a JSON array written
        by SQLite, gpu_ids in it as a list), for an answer to send without reading them into
        Python. Jobs moved to a peer are left out (listed there). With states that are all
        end states and `ended_after`, it reads only the jobs that ended after that time (by
        their end), however long the history."""
        where, args, order = _where(states=states, user=user, ended_after=ended_after,
                                    after=after, moved=False, upto=upto)
        values = [f"CAST({c} AS INTEGER)" if c in _TIMES else
                  f"json({c})" if as_json and c in _JSON_FIELDS else
                  _SHOWN_STATE if c == "state" else c for c in columns]
        select = (f"id, array_id, json_array({', '.join(values)})" if as_json
                  else ", ".join(values))
        sql = f"SELECT {select} FROM jobs{where} ORDER BY {order}"
        if page is not None:
            sql += f" LIMIT {int(page)}"
        rows = self.db.execute(sql, args).fetchall()
        self.resident.read += len(rows)
        return rows

    def recently_ended(self, columns: list[str], user: str, since: float, n: int
                       ) -> list[tuple]:
        """The listing's columns (as listing() gives them) of the user's last `n` jobs to
        have ended after `since`, latest end first: read through the ended_at index."""
        values = [f"CAST({c} AS INTEGER)" if c in _TIMES else c for c in columns]
        ended = [str(s) for s in ENDED_STATES]
        rows = self.db.execute(
            f"SELECT {', '.join(values)} FROM jobs WHERE ended_at > ? AND +user = ? "
            f"AND +state IN ({','.join('?' * len(ended))}) AND moved_to IS NULL "
            "ORDER BY ended_at DESC LIMIT ?", [since, user, *ended, n]).fetchall()
        self.resident.read += len(rows)
        return rows

    def ended_since_by_state(self, user: str, since: float, skip: int, limit: int
                             ) -> tuple[dict[str, int], bool]:
        """How many of the user's jobs ended after `since`, by state, but for the last
        `skip`; at most `limit` counted (a read of that many index entries), and whether
        that was all of them."""
        ended = [str(s) for s in ENDED_STATES]
        rows = self.db.execute(
            "SELECT state, COUNT(*) FROM (SELECT state FROM jobs WHERE ended_at > ? "
            f"AND +user = ? AND +state IN ({','.join('?' * len(ended))}) AND moved_to IS NULL "
            "ORDER BY ended_at DESC LIMIT ? OFFSET ?) GROUP BY state",
            [since, user, *ended, limit + 1, skip]).fetchall()
        counts = dict(rows)
        total = sum(counts.values())
        self.resident.read += total  # index entries SQLite read (at most limit + 1)
        return counts, total <= limit

    def nth_last_id(self, n: int, states: Iterable[JobState] | None = None,
                    user: str | None = None, ended_after: float | None = None) -> int | None:
        """The id of the n-th last job (by id) of those chosen; None when there are fewer:
        where `gq ls --all --last N` starts."""
        where, args, order = _where(states=states, user=user, ended_after=ended_after,
                                    moved=False)
        row = self.db.execute(f"SELECT id FROM jobs{where} ORDER BY {order} DESC LIMIT 1 "
                              "OFFSET ?",
                              [*args, n - 1]).fetchone()
        return row[0] if row else None

    def light_jobs(self, ids: list[int]) -> dict[int, Job]:
        """Light jobs by id: waiting and holding ones from memory (not to be mutated), the
        rest read."""
        out = {i: j for i in ids if (j := self.resident.get(i))}
        self.resident.read += len(out)
        out.update(self.jobs_by_id([i for i in ids if i not in out], light=True))
        return out

    def jobs_by_id(self, ids: list[int], light: bool = False, env: bool = True
                   ) -> dict[int, Job]:
        """Jobs by id, read (as jobs() reads them), however many ids."""
        return {j.id: j for part in _chunks(ids)
                for j in self.jobs(ids=part, light=light, env=env)}

    def holding_jobs(self) -> list[Job]:
        """Jobs whose shim may still hold resources, light, from memory."""
        jobs = self.resident.jobs
        self.resident.read += len(self.resident.holding)
        return [jobs[i] for i in self.resident.holding]

    def last_job_id(self, user: str) -> int | None:
        rows = list(self.db.query("SELECT max(id) AS id FROM jobs WHERE user = ?", [user]))
        return rows[0]["id"] if rows else None

    def existing_ids(self, ids: Iterable[int]) -> set[int]:
        """Which of these ids are jobs', however many."""
        return {r["id"] for part in _chunks(list(ids)) for r in self._rows(
            f"SELECT id FROM jobs WHERE id IN ({','.join('?' * len(part))})", part)}

    def transition(
        self,
        job_id: int,
        new: JobState,
        at: float,
        reason: str | None = None,
        detail: str | None = None,
        **fields: Any,
    ) -> None:
        """Move a job to a new state, checked against the allowed transitions, with an event."""
        old = self.state(job_id)  # the cache is written through: as the row says
        check_transition(old, new)
        first = self.cached_job(job_id) if new == JobState.RUNNING and fields.get(
            "started_at") is not None and old == JobState.PENDING else None
        with self.db.atomic():
            self._update(job_id, state=str(new), reason=reason, **fields)
            self._event(job_id, at, old, new, reason, detail)
            if first is not None and not first.restarts:  # its wait: submit to first start
                tallies.observe(self.db.conn, "wait_seconds", str(first.priority),
                                fields["started_at"] - first.submitted_at)
            if new.ended:
                tallies.add(self.db.conn, "jobs_ended", label=str(new))
            elif new in (JobState.PREEMPTING, JobState.FROZEN) and old == JobState.RUNNING:
                tallies.add(self.db.conn, "preemptions",
                            label="signal" if new == JobState.PREEMPTING else "freeze")
        self._recache(job_id, state=new, reason=reason, **fields)

    def end_waiting(self, jobs: list[Job], new: JobState, at: float, reason: str) -> None:
        """End pending or held jobs at once (gq cancel of an array): one statement for all,
        checked against the allowed transitions as transition() checks each, from the state
        the store holds (not the caller's copy)."""
        old = {job.id: self.state(job.id) for job in jobs}
        for job in jobs:
            check_transition(old[job.id], new)
        with self.db.atomic():
            self.db.conn.executemany(
                "UPDATE jobs SET state = ?, reason = ?, ended_at = ? WHERE id = ?",
                [(str(new), reason, at, job.id) for job in jobs])
            self.db.conn.executemany(
                "INSERT INTO events (job_id, at, old_state, new_state, reason, detail) "
                "VALUES (?, ?, ?, ?, ?, NULL)",
                [(job.id, at, str(old[job.id]), str(new), reason) for job in jobs])
            tallies.add(self.db.conn, "jobs_ended", len(jobs), label=str(new))
        for job in jobs:
            self._recache(job.id, state=new, reason=reason, ended_at=at)

    def with_notify(self, ids: list[int]) -> list[int]:
        """Those of the jobs that have a --notify or --mail."""
        out = []
        for part in _chunks(ids):
            out += [r[0] for r in self.db.execute(
                f"SELECT id FROM jobs WHERE notify IS NOT NULL AND id IN "
                f"({','.join('?' * len(part))})", part)]
        return out

    def update(self, job_id: int, **fields: Any) -> None:
        """Change fields that are not the state (reason, runtime), without an event."""
        with self.db.atomic():
            self._update(job_id, **fields)
        self._recache(job_id, **fields)

    def set_reasons(self, reasons: dict[int, str]) -> None:
        """Store the reasons of queued jobs that changed."""
        jobs = self.resident.jobs
        changed = [(r, i) for i, r in reasons.items() if jobs[i].reason != r]
        if not changed:
            return
        with self.db.atomic():
            self.db.conn.executemany("UPDATE jobs SET reason = ? WHERE id = ?", changed)
        for reason, job_id in changed:
            jobs[job_id].reason = reason  # the one copy: queue and holding views alike
            self._touch(job_id)

    def note(self, job_id: int, at: float, detail: str) -> None:
        """An event without a state change (an action, a warning)."""
        state = self.state(job_id)
        with self.db.atomic():
            self._event(job_id, at, state, state, None, detail)

    def add_run(self, job: Job, weight: float, ended_at: float, state: str,
                usage: dict[str, Any] | None = None, share: float | None = None,
                account: str | None = None, failure: str | None = None) -> None:
        """Record a run that ended (relaxed or not, as the caller's transaction is). usage:
        what it used, from telemetry: peaks ({card: bytes}), util_mean, cmd_key. share: what it
        cost in fair share (card equivalents), charged to `account`."""
        if job.started_at is None:
            return
        usage = usage or {}
        peaks = usage.get("peaks") or {}
        with self.db.atomic():
            self.db.execute(
                "INSERT INTO runs (job_id, user, gpus, weight, started_at, ended_at, state, "
                "peaks, peak_mem, util_mean, cmd_key, share, account, failure) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [job.id, job.user, job.gpus_held, weight, job.started_at, ended_at, state,
                 json.dumps({str(k): v for k, v in peaks.items()}) if peaks else None,
                 max(peaks.values()) if peaks else None, usage.get("util_mean"),
                 usage.get("cmd_key"), share, account, failure],
            )
            tallies.add(self.db.conn, "gpu_seconds",
                        job.gpus_held * max(0.0, ended_at - job.started_at), label=job.user)
            tallies.observe(self.db.conn, "run_seconds", str(job.priority),
                            ended_at - job.started_at)
            if failure:
                tallies.add(self.db.conn, "runs_failed", label=failure)
            if state == str(JobState.OOM):
                tallies.add(self.db.conn, "oom")

    def runs_since(self, since: float) -> Iterator[dict[str, Any]]:
        """Runs that ended since `since`, with what each cost in fair share (`share`; before
        m010, the cards it held); read as they are used, not all at once (weeks of them)."""
        return iter(self.db.query(
            "SELECT user, coalesce(share, weight) AS share, started_at, ended_at FROM runs "
            "WHERE ended_at >= ?", [since]
        ))

    def events(self, job_id: int) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM events WHERE job_id = ? ORDER BY id", [job_id]))

    # ---- peers (docs/peers.md) --------------------------------------------------------

    def peers(self) -> list[dict[str, Any]]:
        return [{**r, "snapshot": json.loads(r["snapshot"] or "null")}
                for r in self.db.query("SELECT * FROM peers ORDER BY name")]

    def save_peer(self, peer: dict[str, Any]) -> None:
        """Add a peer, or replace how it is reached (what was seen of it is kept)."""
        with self.db.atomic():
            self.db.table("peers").upsert(peer, pk="name")

    def remove_peer(self, name: str) -> bool:
        """Forget a peer, and what it was sent if it is a Slurm peer."""
        with self.db.atomic():
            self.db.execute("DELETE FROM slurm_jobs WHERE peer = ?", [name])
            return self.db.execute("DELETE FROM peers WHERE name = ?", [name]).rowcount > 0

    def peer_seen(self, name: str, **fields: Any) -> None:
        """What was last seen of a peer: last_seen, version, last_error, snapshot."""
        if "snapshot" in fields:
            fields["snapshot"] = json.dumps(fields["snapshot"])
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self.db.atomic():
            self.db.execute(f"UPDATE peers SET {cols} WHERE name = ?", [*fields.values(), name])

    # ---- internals --------------------------------------------------------------------

    def _update(self, job_id: int, **fields: Any) -> None:
        if not fields:
            return
        if not _HEAVY_COLUMNS.isdisjoint(fields):
            self._heavy.pop(job_id, None)
        for key in _JSON_FIELDS:
            if key in fields:
                fields[key] = json.dumps(fields[key])
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE jobs SET {cols} WHERE id = ?", [*fields.values(), job_id])

    def _event(self, job_id, at, old, new, reason, detail) -> None:
        self.db.execute(
            "INSERT INTO events (job_id, at, old_state, new_state, reason, detail) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [job_id, at, None if old is None else str(old), str(new), reason, detail],
        )


def _where(states: Iterable[JobState] | None = None, user: str | None = None,
           ids: Iterable[int] | None = None, ended_after: float | None = None,
           after: int | None = None, moved: bool = True, upto: int | None = None
           ) -> tuple[str, list[Any], str]:
    """The WHERE clause (with its leading space, or empty), its arguments, and what to ORDER
    BY for the order of ids, of a selection of jobs; moved=False leaves out jobs moved to a
    peer."""
    where: list[str] = []
    args: list[Any] = []
    names = None if states is None else [str(s) for s in states]
    # Only ended jobs, ended lately (gq ls's recent ones): read by the ended_at index alone,
    # so that the cost is that of the recent jobs, not of every job the user ever ran.
    by_end = ended_after is not None and names is not None and set(names) <= _ENDED_NAMES
    if ended_after is not None:
        where.append("ended_at > ?" if by_end else "(ended_at IS NULL OR ended_at > ?)")
        args.append(ended_after)
    plus = "+" if by_end else ""  # a unary + keeps SQLite from using that column's index
    if names is not None:
        where.append(f"{plus}state IN ({','.join('?' * len(names))})")
        args += names
    if user is not None:
        where.append(f"{plus}user = ?")
        args.append(user)
    if ids is not None:
        ids = list(ids)
        where.append(f"id IN ({','.join('?' * len(ids))})")
        args += ids
    if after is not None:
        where.append("id > ?")
        args.append(after)
    if upto is not None:  # an array's elements: ids up to its last
        where.append("id <= ?")
        args.append(upto)
    if not moved:
        where.append("moved_to IS NULL")
    # By id, but not by reading the table in id order where the ended_at index reads less.
    return (" WHERE " + " AND ".join(where) if where else ""), args, f"{plus}id"


def _job_to_row(job: Job) -> dict[str, Any]:
    row = {c: getattr(job, c) for c in _JOB_COLUMNS}
    row["state"] = str(job.state)
    row["priority"] = str(job.priority)
    row["deps"] = {str(k): v for k, v in job.deps.items()}
    for key in _JSON_FIELDS:
        row[key] = json.dumps(row[key])
    row.update(_array_row(job.array))
    if job.notify is not None:
        row["notify"] = json.dumps({"command": job.notify.command, "mail": job.notify.mail})
    if job.forward_args is not None:
        row["forward_args"] = json.dumps(job.forward_args)
    return row


def _array_row(part: ArrayPart | None) -> dict[str, Any]:
    if part is None:
        return {}
    return {"array_id": part.id, "array_index": part.index, "array_size": part.size,
            "array_limit": part.limit, "array_params": json.dumps(part.params)}


def _chunks(ids: list[int], size: int = 10_000) -> Iterator[list[int]]:
    """`ids` a part at a time: SQLite binds at most so many variables a statement."""
    for first in range(0, len(ids), size):
        yield ids[first:first + size]


def _affinity(declared: str) -> str:
    """A column's type affinity, by SQLite's rules for its declared type."""
    declared = declared.upper()
    if "INT" in declared:
        return "INTEGER"
    if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not declared or "BLOB" in declared:
        return "BLOB"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def _as_stored(row: dict[str, Any], affinity: dict[str, str]) -> dict[str, Any] | None:
    """The values of a row as SQLite gives them back once written into these columns: a
    REAL column's integer as a float, an INTEGER column's whole float or bool as an integer;
    None where that is not sure (a number into a TEXT column)."""
    out = {}
    for key, value in row.items():
        kind = affinity.get(key, "BLOB")
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, (int, float)):
            if kind == "TEXT":
                return None
            if kind == "REAL":
                value = float(value)
            elif kind in ("INTEGER", "NUMERIC") and isinstance(value, float) \
                    and value.is_integer() and abs(value) < 2 ** 63:
                value = int(value)
        out[key] = value
    return out


def _row_to_job(row: dict[str, Any]) -> Job:
    data = {c: row[c] for c in _JOB_COLUMNS if c in row}  # light rows lack the heavy columns
    for key in _JSON_FIELDS:
        if isinstance(data.get(key), str):  # not if decoded already (Store._shared)
            data[key] = json.loads(data[key])
    data.setdefault("command", [])
    data.setdefault("cwd", "")
    data["state"] = JobState(data["state"])
    data["priority"] = Tier(data["priority"])
    data["deps"] = {DepKind(k): v for k, v in data["deps"].items()}
    for key in _BOOL_FIELDS:
        data[key] = bool(data[key])
    if row.get("array_id") is not None:
        data["array"] = ArrayPart(row["array_id"], row["array_index"], row["array_size"],
                                  row["array_limit"], json.loads(row["array_params"] or "{}"))
    if row.get("notify"):
        data["notify"] = Notify(**json.loads(row["notify"]))
    if row.get("forward_args"):
        data["forward_args"] = json.loads(row["forward_args"])
    return Job(**data)
