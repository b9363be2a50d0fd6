"""`gq ls`: the active jobs, the caller's recently ended ones until `gq clean`, and `--all`
windows (`--since`, `--last`).

An answer costs what it shows. With `columns` the client names the fields it prints and gets
rows of them (times as whole epoch seconds), which SQLite writes as JSON without a job being
built; with `page` it gets at most that many jobs, from the id after `after`, and the `next`
one to ask from. The default
listing reads the active jobs from memory and the recently ended ones by their end time, so it
costs the same however long the history; `--all` and `--json` page through ended jobs instead
of building all of them at once. A request without a page (older clients, peers, every host's
listing) gets the first page (MAX_PAGE jobs) and the cursor of the next: no request lists
everything at once (issue #38).
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any

from gq.daemon.context import Context
from gq.daemon.listing_lines import array_ids, lines_page, recent_summary
from gq.daemon.submission import Caller
from gq.daemon.views import STOPPING, brief_json, job_json, largest_card, shown_state
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState
from gq.protocol import BadInput, RawJSON
from gq.units import iso

MAX_PAGE = 5000  # jobs in one answer, whatever the client asks
# The fields `columns` may name: what `gq ls` shows of a job (views.BRIEF_FIELDS, with
# `interactive` as 0 or 1, and an array element's array id, index, size and limit, null for
# other jobs). Each is read as stored, so that a page is rows SQLite writes itself.
COLUMNS = ("id name user state reason priority gpus mem cpus submitted_at started_at ended_at "
           "exit_code gpu_ids gpus_max interactive failure array_id array_index array_size "
           "array_limit").split()
_TIMES = ("submitted_at", "started_at", "ended_at")


class Query:
    """What a `list` request asks for, checked: states (None: any), user (None: anyone's),
    `since` and `last` of --all, and whether to add the caller's recently ended jobs."""

    def __init__(self, daemon: Context, caller: Caller, args: dict):
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
        # `gq ls --array ID`: that array's elements, whatever their state (ids first to last)
        self.array = None if args.get("array") is None else _array(daemon, args["array"])
        if self.array is not None and self.states is ACTIVE_STATES:
            self.states = None
        self.active_only = self.states is ACTIVE_STATES
        self.recent_of = (user or caller.user) if self.active_only and args.get("recent") else None
        self.lines = bool(args.get("lines")) and self.active_only  # arrays as one line each


def op_list(daemon: Context, caller: Caller, args: dict) -> Any:
    query = Query(daemon, caller, args)
    columns, page, after = _paging(args)
    if columns is None:  # pages of whole jobs (`gq ls --json`), without their environments;
        # a request without a page (older clients, every host's listing) gets the first one
        brief = bool(args.get("brief"))
        jobs = _jobs_page(daemon, query, after, page, brief=brief)
        largest = largest_card(daemon.cards)  # the failures' advice checked against it
        out = [_annotated(daemon, _stopping(daemon, j, brief_json(j) if brief
                                            else job_json(j, largest)))
               for j in jobs[:page]]
        _add_outcomes(daemon, out)
        return {"jobs": out, "next": jobs[page - 1].id if len(jobs) > page else None}
    if query.lines:
        return _lines_answer(daemon, query, columns, after, page)
    rows, more, ids, array_ids = _rows_page(daemon, query, columns, after, page)
    arrays = daemon.store.array_outcomes(sorted(array_ids))
    return {"columns": columns, "rows": rows,
            "arrays": {str(k): v for k, v in arrays.items()},  # how elements not listed ended
            "starts": _starts(daemon, ids),  # the expected start (and basis) of reserved jobs
            "next": ids[-1] if more else None,
            # gq ls's TIME is timed by this clock, not the client's: a job started after the
            # client asked (or on a client whose clock differs) is not shown at -1d23h
            "now": daemon.clock()}


def _lines_answer(daemon: Context, query: Query, columns: list[str], after: int | None,
                  page: int) -> dict:
    """A page of the default `gq ls` by lines (gq/daemon/listing_lines.py); the first page
    has the caller's last few recently ended jobs and the count of the others (`ended`)."""
    rows, more, lines, array_ids = lines_page(daemon, query.user, columns, after, page,
                                              job_field)
    ids = [r[0] for r in rows]
    out: dict[str, Any] = {"columns": columns, "rows": rows, "lines": lines}
    since = None if query.recent_of is None or after is not None else (
        _recent_since(daemon, query.recent_of))
    if since is not None:
        recent, summary = recent_summary(daemon, query.recent_of, since, columns)
        out["ended"] = {"rows": recent, **summary}
        if "array_id" in columns:
            at = columns.index("array_id")
            array_ids |= {r[at] for r in recent if r[at] is not None}
    arrays = daemon.store.array_outcomes(sorted(array_ids))
    out["arrays"] = {str(k): v for k, v in arrays.items()}
    out["starts"] = _starts(daemon, ids)
    out["next"] = ids[-1] if more else None
    out["now"] = daemon.clock()  # gq ls's TIME is timed by the daemon's clock (_rows_page)
    return out


def _array(daemon: Context, value: Any) -> tuple[int, int]:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 1 << 62:
        raise BadInput(f"--array {str(value)[:50]}: expected an array's id")
    found = array_ids(daemon, value)
    if found is None:
        raise BadInput(f"--array {value}: no array has this id (an array's id is its first "
                       "element's)")
    return found


def _starts(daemon: Context, ids: list[int]) -> dict[str, list]:
    """The expected start and its basis of each reserved job of these, where it is known: read
    from the few reservations, not from each of a page's thousand jobs."""
    forecasts, notes = daemon.passes.forecasts, daemon.passes.start_notes
    if not forecasts:
        return {}
    listed = set(ids)
    return {str(i): [int(f.start), start_basis(daemon, i)] for i, f in forecasts.items()
            if i in listed and notes.get(i, (True, ""))[0]}


def _paging(args: dict) -> tuple[list[str] | None, int | None, int | None]:
    columns, page, after = args.get("columns"), args.get("page"), args.get("after")
    if columns is not None:
        if (not isinstance(columns, list) or not columns
                or any(c not in COLUMNS for c in columns)):
            raise BadInput(f"columns: expected a list of {', '.join(COLUMNS)}")
        columns = [c for c in COLUMNS if c in columns or c == "id"]  # id first: rows sort by it
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise BadInput(f"page {page!r}: expected a number of jobs, 1 or more")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int)
                              or not 0 <= after < 1 << 62):
        raise BadInput(f"after {str(after)[:50]}: expected a job id")
    return columns, min(page or MAX_PAGE, MAX_PAGE), after


def _annotated(daemon: Context, job: dict) -> dict:
    job["expected_start"] = expected_start(daemon, job["id"])
    job["expected_start_basis"] = start_basis(daemon, job["id"])
    return job


def _add_outcomes(daemon: Context, out: list[dict]) -> None:
    """Each array's elements not listed, by how they ended: `2 oom`, not `2 ended`."""
    outcomes = daemon.store.array_outcomes(sorted({j["array"]["id"] for j in out
                                                   if j["array"]}))
    for j in out:
        if j["array"]:
            j["array"]["ended"] = outcomes.get(j["array"]["id"], {})


def active_jobs(daemon: Context, user: str | None, after: int | None = None,
                page: int | None = None) -> list[Job]:
    """The active jobs (not moved to a peer), from the store's memory, by id: those after
    `after`, at most `page` of them, read from its sorted index (gq/store/resident.py), so
    that a page costs the page whatever the queue holds."""
    resident = daemon.store.resident
    return [resident.jobs[i] for i in islice(resident.listed(user, after), page)]


def _ended_after(daemon: Context, query: Query) -> float | None:
    return None if query.since is None else daemon.clock() - query.since


def _start_after(daemon: Context, query: Query, after: int | None) -> int | None:
    """Where a page starts: after `after`, and for --last N at the N-th last job (and for
    --array at its first element)."""
    if query.array is not None:
        after = max(after or 0, query.array[0] - 1)
    if query.last is None:
        return after
    first = daemon.store.nth_last_id(query.last, query.states, query.user,
                                     _ended_after(daemon, query))
    first = 0 if first is None else first - 1
    return first if after is None else max(after, first)


def _upto(query: Query) -> int | None:
    return None if query.array is None else query.array[1]


def _jobs_page(daemon: Context, query: Query, after: int | None, page: int,
               brief: bool = False) -> list[Job]:
    """Up to page + 1 whole jobs (one more tells whether there is a next page); `brief`:
    light ones (what `gq ls` shows), the active ones from memory. With `recent`, the
    caller's recently ended jobs join the active ones in id order, at most page + 1 of them
    read."""
    if query.active_only:
        active = active_jobs(daemon, query.user, after, page + 1)
        if brief:
            jobs = active
        else:
            ids = [j.id for j in active]
            full = {j.id: j for j in daemon.store.jobs(ids=ids, env=False)} if ids else {}
            jobs = [full[i] for i in ids if i in full]
        since = None if query.recent_of is None else _recent_since(daemon, query.recent_of)
        if since is not None:
            recent = daemon.store.jobs(states=ENDED_STATES, user=query.recent_of, light=brief,
                                       env=False, ended_after=since, after=after,
                                       page=page + 1, moved=False)
            jobs = sorted(jobs + recent, key=lambda j: j.id)[:page + 1]
        return jobs
    return daemon.store.jobs(states=query.states, user=query.user, env=False, light=brief,
                             ended_after=_ended_after(daemon, query), page=page + 1,
                             after=_start_after(daemon, query, after), moved=False,
                             upto=_upto(query))


def _rows_page(daemon: Context, query: Query, columns: list[str], after: int | None,
               page: int) -> tuple[Any, bool, list[int], set[int]]:
    """Up to `page` rows of the columns, whether more follow, the rows' ids and the arrays
    they are elements of. Ended jobs come as JSON that SQLite wrote (RawJSON); the active
    ones, from memory, as lists."""
    if not query.active_only:
        raw = daemon.store.listing(columns, query.states, query.user,
                                   _ended_after(daemon, query),
                                   _start_after(daemon, query, after), page + 1, as_json=True,
                                   upto=_upto(query))
        more, raw = len(raw) > page, raw[:page]
        return (RawJSON(f"[{','.join([r[2] for r in raw])}]"), more, [r[0] for r in raw],
                {r[1] for r in raw if r[1] is not None})
    rows = [_stopping_row(daemon, j, columns, [job_field(j, c) for c in columns])
            for j in active_jobs(daemon, query.user, after, page + 1)]
    since = None if query.recent_of is None else _recent_since(daemon, query.recent_of)
    if since is not None:
        recent = daemon.store.listing(columns, ENDED_STATES, query.recent_of, since, after,
                                      page + 1)
        if "gpu_ids" in columns:
            at = columns.index("gpu_ids")
            recent = [[*r[:at], json.loads(r[at]), *r[at + 1:]] for r in recent]
        rows = sorted(rows + [list(r) for r in recent], key=lambda r: r[0])
    more, rows = len(rows) > page, rows[:page]
    array = columns.index("array_id") if "array_id" in columns else None
    arrays = set() if array is None else {r[array] for r in rows if r[array] is not None}
    return rows, more, [r[0] for r in rows], arrays


def _stopping(daemon: Context, job: Job, shown: dict) -> dict:
    """A stopping job's reason says when its SIGKILL is due, or what still holds its cards."""
    if job.is_stopping:
        shown["reason"] = daemon.stopping.describe(job, detail=False)
    return shown


def _stopping_row(daemon: Context, job: Job, columns: list[str], row: list) -> list:
    if job.is_stopping:
        for column, value in (("state", STOPPING),
                              ("reason", daemon.stopping.describe(job, detail=False))):
            if column in columns:
                row[columns.index(column)] = value
    return row


def job_field(job: Job, column: str) -> Any:
    """A listing field of a job in memory, as the store gives it."""
    if column.startswith("array_"):
        return None if job.array is None else getattr(job.array, column[6:])
    if column == "state":
        return shown_state(job)  # `stopping`: decided ended, its run not gone
    if column == "name" and job.attach is not None and not job.state.ended:
        # a `gq run` (docs/run.md): the caller's terminal or pipes are attached to it
        return f"{job.name} [{'tty' if job.attach.get('tty') else 'pipes'}]"
    value = getattr(job, column)
    if column == "priority":
        return str(value)
    if column in _TIMES:
        return None if value is None else int(value)
    return int(value) if column == "interactive" else value


def _window(args: dict) -> tuple[float | None, int | None]:
    """`gq ls --all --since DUR --last N`: seconds and a count, checked."""
    since, last = args.get("since"), args.get("last")
    if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float))
                              or since < 0):
        raise BadInput(f"--since {since!r}: expected a duration like 2h")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        raise BadInput(f"--last {last!r}: expected a number of jobs, 1 or more")
    return since, None if last is None else min(last, 1 << 62)  # SQLite's integers


def _recent_since(daemon: Context, user: str) -> float | None:
    """Since when a user's ended jobs are listed: within [daemon] show_ended and after their
    last `gq clean`; None: none are (show_ended = 0)."""
    if not daemon.config.show_ended:
        return None
    return max(daemon.clock() - daemon.config.show_ended, daemon.store.cleared.at(user) or 0)


def recently_ended(daemon: Context, user: str, light: bool) -> list[Job]:
    """The user's jobs that ended within [daemon] show_ended and after their last `gq clean`."""
    after = _recent_since(daemon, user)
    if after is None:
        return []
    return daemon.store.jobs(states=ENDED_STATES, user=user, light=light, ended_after=after,
                             env=False)


def op_clean(daemon: Context, caller: Caller, args: dict) -> dict:
    """`gq clean`: the caller's ended jobs leave `gq ls` (they stay in `gq ls --all`)."""
    cleared = len(recently_ended(daemon, caller.user, light=True))
    daemon.store.cleared.clear(caller.user, daemon.clock())
    return {"cleared": cleared}


def expected_start(daemon: Context, job_id: int) -> str | None:
    """When a reserved job should start; None without a reservation, or when the start rests
    on a default assumption rather than a --time or a learned run time (unknown)."""
    forecast = daemon.passes.forecasts.get(job_id)
    known = daemon.passes.start_notes.get(job_id, (True, ""))[0]
    return iso(forecast.start) if forecast and known else None


def start_basis(daemon: Context, job_id: int) -> str | None:
    """What the expected start rests on, in words ('unknown: ...' when it is not known)."""
    note = daemon.passes.start_notes.get(job_id)
    return note[1] if note and job_id in daemon.passes.forecasts else None
