"""`gq ls`: the active jobs, the caller's recently ended ones until `gq clean`, and `--all`
windows (`--since`, `--last`).

An answer costs what it shows. With `columns` the client names the fields it prints and gets
rows of them (times as epoch seconds), read without building a job; with `page` it gets at
most that many jobs, from the id after `after`, and the `next` one to ask from. The default
listing reads the active jobs from memory and the recently ended ones by their end time, so it
costs the same however long the history; `--all` and `--json` page through ended jobs instead
of building all of them at once. Without either (older clients, peers, the TUI), one answer
lists everything, as before.
"""

from __future__ import annotations

import json
from typing import Any

from gq.daemon.core import Daemon
from gq.daemon.submission import Caller
from gq.daemon.views import brief_json, job_json
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState
from gq.protocol import BadInput
from gq.units import iso

MAX_PAGE = 5000  # jobs in one answer, whatever the client asks
# The fields `columns` may name: what `gq ls` shows of a job (views.BRIEF_FIELDS), its array,
# and when it is expected to start.
COLUMNS = ("id name user state reason priority gpus mem cpus submitted_at started_at ended_at "
           "exit_code gpu_ids gpus_max interactive failure array expected_start "
           "expected_start_basis").split()
_COMPUTED = {"array": ("array_id", "array_index", "array_size", "array_limit"),
             "expected_start": ("id",), "expected_start_basis": ("id",)}


class Query:
    """What a `list` request asks for, checked: states (None: any), user (None: anyone's),
    `since` and `last` of --all, and whether to add the caller's recently ended jobs."""

    def __init__(self, daemon: Daemon, caller: Caller, args: dict):
        self.states: Any = None
        user = args.get("user") or None
        if user is not None and not isinstance(user, str):
            raise BadInput("--user: expected a user name")
        if args.get("states"):
            try:
                if not isinstance(args["states"], list):
                    raise ValueError
                self.states = [JobState(s) for s in args["states"]]
            except (ValueError, TypeError):
                names = ", ".join(s.value for s in JobState)
                raise BadInput(f"--state: expected one of {names}") from None
        elif not args.get("all"):
            self.states = ACTIVE_STATES
        if not daemon.authority.sees_all(caller):  # [access] queue = "own"
            user = caller.user
        self.user = user
        self.since, self.last = _window(args)
        self.active_only = self.states is ACTIVE_STATES
        self.recent_of = (user or caller.user) if self.active_only and args.get("recent") else None


def op_list(daemon: Daemon, caller: Caller, args: dict) -> Any:
    query = Query(daemon, caller, args)
    columns, page, after = _paging(args)
    if columns is None and page is None:
        return _everything(daemon, query, brief=bool(args.get("brief")))
    if columns is None:  # pages of whole jobs (`gq ls --json`), without their environments
        jobs = _jobs_page(daemon, query, after, page)
        out = [_annotated(daemon, job_json(j)) for j in jobs[:page]]
        _add_outcomes(daemon, out)
        return {"jobs": out, "next": jobs[page - 1].id if len(jobs) > page else None}
    rows, more = _rows_page(daemon, query, columns, after, page)
    arrays = ({} if "array" not in columns else
              daemon.store.array_outcomes(sorted({r[columns.index("array")]["id"] for r in rows
                                                  if r[columns.index("array")]})))
    return {"columns": columns, "rows": rows,
            "arrays": {str(k): v for k, v in arrays.items()},
            "next": rows[-1][0] if more else None}


def _paging(args: dict) -> tuple[list[str] | None, int | None, int | None]:
    columns, page, after = args.get("columns"), args.get("page"), args.get("after")
    if columns is not None:
        if (not isinstance(columns, list) or not columns
                or any(c not in COLUMNS for c in columns)):
            raise BadInput(f"columns: expected a list of {', '.join(COLUMNS)}")
        columns = ["id", *[c for c in columns if c != "id"]]  # rows sort by their first
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise BadInput(f"page {page!r}: expected a number of jobs, 1 or more")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int)):
        raise BadInput(f"after {after!r}: expected a job id")
    if columns is not None or page is not None:
        page = min(page or MAX_PAGE, MAX_PAGE)
    return columns, page, after


def _everything(daemon: Daemon, query: Query, brief: bool) -> list[dict]:
    """One answer with every job asked for (requests without columns or page)."""
    if brief and query.active_only:  # all in the store's memory: no rows to read
        jobs = _active(daemon, query.user)
    else:
        jobs = daemon.store.jobs(states=query.states, user=query.user, light=brief,
                                 limit=query.last, ended_after=_ended_after(daemon, query),
                                 env=False)
    if query.recent_of is not None:
        jobs = sorted(jobs + recently_ended(daemon, query.recent_of, brief), key=lambda j: j.id)
    view = brief_json if brief else job_json
    out = [_annotated(daemon, view(j)) for j in jobs
           if j.moved_to is None]  # sent to a peer: listed there (gq ls --all-hosts)
    _add_outcomes(daemon, out)
    return out


def _annotated(daemon: Daemon, job: dict) -> dict:
    job["expected_start"] = expected_start(daemon, job["id"])
    job["expected_start_basis"] = start_basis(daemon, job["id"])
    return job


def _add_outcomes(daemon: Daemon, out: list[dict]) -> None:
    """Each array's elements not listed, by how they ended: `2 oom`, not `2 ended`."""
    outcomes = daemon.store.array_outcomes(sorted({j["array"]["id"] for j in out
                                                   if j["array"]}))
    for j in out:
        if j["array"]:
            j["array"]["ended"] = outcomes.get(j["array"]["id"], {})


def _active(daemon: Daemon, user: str | None) -> list[Job]:
    """The active jobs, from the store's memory, by id."""
    active = daemon.store.queue() + daemon.store.holding_jobs()
    return sorted({j.id: j for j in active if j.state in ACTIVE_STATES and j.moved_to is None
                   and (user is None or j.user == user)}.values(), key=lambda j: j.id)


def _ended_after(daemon: Daemon, query: Query) -> float | None:
    return None if query.since is None else daemon.clock() - query.since


def _start_after(daemon: Daemon, query: Query, after: int | None) -> int | None:
    """Where a page starts: after `after`, and for --last N at the N-th last job."""
    if query.last is None:
        return after
    first = daemon.store.nth_last_id(query.last, query.states, query.user,
                                     _ended_after(daemon, query))
    first = 0 if first is None else first - 1
    return first if after is None else max(after, first)


def _jobs_page(daemon: Daemon, query: Query, after: int | None, page: int) -> list[Job]:
    """Up to page + 1 whole jobs (one more tells whether there is a next page)."""
    if query.active_only:
        jobs = [j for j in _active(daemon, query.user) if after is None or j.id > after]
        ids = [j.id for j in jobs[:page + 1]]
        full = {j.id: j for j in daemon.store.jobs(ids=ids, env=False)} if ids else {}
        return [full[i] for i in ids if i in full]
    return daemon.store.jobs(states=query.states, user=query.user, env=False,
                             ended_after=_ended_after(daemon, query), page=page + 1,
                             after=_start_after(daemon, query, after))


def _rows_page(daemon: Daemon, query: Query, columns: list[str], after: int | None,
               page: int) -> tuple[list[list], bool]:
    """Up to `page` rows of the columns, and whether more follow."""
    if not query.active_only:
        stored = _stored_columns(columns)
        raw = daemon.store.listing(stored, query.states, query.user,
                                   _ended_after(daemon, query),
                                   _start_after(daemon, query, after), page + 1)
        rows = [_stored_row(daemon, columns, stored, r) for r in raw]
        return rows[:page], len(rows) > page
    rows = [_job_row(daemon, columns, j) for j in _active(daemon, query.user)
            if after is None or j.id > after]
    if query.recent_of is not None:
        stored = _stored_columns(columns)
        since = _recent_since(daemon, query.recent_of)
        if since is not None:
            rows += [_stored_row(daemon, columns, stored, r) for r in daemon.store.listing(
                stored, ENDED_STATES, query.recent_of, since, after)]
            rows.sort(key=lambda r: r[0])
    return rows[:page], len(rows) > page


def _stored_columns(columns: list[str]) -> list[str]:
    stored: list[str] = []
    for c in columns:
        for s in _COMPUTED.get(c, (c,)):
            if s not in stored:
                stored.append(s)
    return stored


def _stored_row(daemon: Daemon, columns: list[str], stored: list[str], raw: tuple) -> list:
    """A listing row from the store's columns: JSON decoded, an array as a small object."""
    got = dict(zip(stored, raw))
    row = []
    for c in columns:
        if c == "array":
            row.append(None if got["array_id"] is None else {
                "id": got["array_id"], "index": got["array_index"], "size": got["array_size"],
                "limit": got["array_limit"]})
        elif c == "gpu_ids":
            row.append([] if got[c] == "[]" else json.loads(got[c]))
        elif c == "interactive":
            row.append(bool(got[c]))
        elif c == "expected_start":
            row.append(_forecast_start(daemon, got["id"]))
        elif c == "expected_start_basis":
            row.append(start_basis(daemon, got["id"]))
        else:
            row.append(got[c])
    return row


def _job_row(daemon: Daemon, columns: list[str], job: Job) -> list:
    """A listing row from a job in memory."""
    row = []
    for c in columns:
        if c == "array":
            a = job.array
            row.append(None if a is None else {"id": a.id, "index": a.index, "size": a.size,
                                               "limit": a.limit})
        elif c in ("state", "priority"):
            row.append(str(getattr(job, c)))
        elif c == "expected_start":
            row.append(_forecast_start(daemon, job.id))
        elif c == "expected_start_basis":
            row.append(start_basis(daemon, job.id))
        else:
            row.append(getattr(job, c))
    return row


def _window(args: dict) -> tuple[float | None, int | None]:
    """`gq ls --all --since DUR --last N`: seconds and a count, checked."""
    since, last = args.get("since"), args.get("last")
    if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float))
                              or since < 0):
        raise BadInput(f"--since {since!r}: expected a duration like 2h")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        raise BadInput(f"--last {last!r}: expected a number of jobs, 1 or more")
    return since, last


def _recent_since(daemon: Daemon, user: str) -> float | None:
    """Since when a user's ended jobs are listed: within [daemon] show_ended and after their
    last `gq clean`; None: none are (show_ended = 0)."""
    if not daemon.config.show_ended:
        return None
    return max(daemon.clock() - daemon.config.show_ended, daemon.store.cleared.at(user) or 0)


def recently_ended(daemon: Daemon, user: str, light: bool) -> list[Job]:
    """The user's jobs that ended within [daemon] show_ended and after their last `gq clean`."""
    after = _recent_since(daemon, user)
    if after is None:
        return []
    return daemon.store.jobs(states=ENDED_STATES, user=user, light=light, ended_after=after,
                             env=False)


def op_clean(daemon: Daemon, caller: Caller, args: dict) -> dict:
    """`gq clean`: the caller's ended jobs leave `gq ls` (they stay in `gq ls --all`)."""
    cleared = len(recently_ended(daemon, caller.user, light=True))
    daemon.store.cleared.clear(caller.user, daemon.clock())
    return {"cleared": cleared}


def _forecast_start(daemon: Daemon, job_id: int) -> float | None:
    """expected_start in epoch seconds, as `columns` answers give times."""
    forecast = daemon.forecasts.get(job_id)
    known = daemon.start_notes.get(job_id, (True, ""))[0]
    return forecast.start if forecast and known else None


def expected_start(daemon: Daemon, job_id: int) -> str | None:
    """When a reserved job should start; None without a reservation, or when the start rests
    on a default assumption rather than a --time or a learned run time (unknown)."""
    return iso(_forecast_start(daemon, job_id))


def start_basis(daemon: Daemon, job_id: int) -> str | None:
    """What the expected start rests on, in words ('unknown: ...' when it is not known)."""
    note = daemon.start_notes.get(job_id)
    return note[1] if note and job_id in daemon.forecasts else None
