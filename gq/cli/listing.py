"""`gq ls`: ask the daemon for what the table prints, page by page over one connection.

The table asks for its columns only (no command, directory or environment; times as whole
epoch seconds) and turns each page into the table's cells while the daemon reads the next one;
`--json` asks for whole jobs and prints each page as it comes, so that neither side holds
10,000 jobs at once. A daemon older than pages answers everything at once; every host's
listing (`--all-hosts`) too: both are taken as they come.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from operator import itemgetter

from gq.cli.client import connect
from gq.protocol.op_names import Op
from gq.units import iso

PAGE = 1000  # jobs an answer
FIRST_PAGE = 200  # the first answer is short: nothing is drawn until it comes
TABLE = ["id", "name", "user", "state", "reason", "priority", "interactive", "gpus", "gpus_max",
         "mem", "cpus", "submitted_at", "started_at", "ended_at", "exit_code", "gpu_ids",
         "failure", "array_id", "array_index", "array_size", "array_limit"]
_ARRAY = ("array_id", "array_index", "array_size", "array_limit")


def list_jobs(all: bool, user: str | None, states: list[str], hosts: str | None,
              **window) -> Iterator[dict]:
    """Whole jobs (`gq ls --json`), each page as it comes."""
    for answer in _answers(_args(all, user, states, hosts, True, window)):
        yield from _whole(answer)


def list_table(all: bool, user: str | None, states: list[str], hosts: str | None,
               with_start: bool, lines: bool = False, array: int | None = None,
               notes: list[str] | None = None, **window
               ) -> tuple[list[str], list[dict | None], list[list[str]], list[int]]:
    """The table's headers, its rows' cells (gq/wording/jobs.py), for each row the job when it
    is an array's element (None for the others: gq/wording/arrays.py fold), and each column's
    widest cell before any folding. Each page is turned into cells as it comes, while the
    daemon reads the next one; cells are made from the row's values, without a dict a job.
    `lines`: the daemon sends an array as one row (its elements counted), and of your
    recently ended jobs the last few, the others counted in a line added to `notes`;
    `array`: that array's elements only."""
    from gq.cli.output import widest
    from gq.wording.jobs import headers, job_rows

    args = {**_args(all, user, states, hosts, False, window), "columns": TABLE}
    if lines:
        args["lines"] = True
    if array is not None:
        args["array"] = array
    # The time a page is as of is the daemon's, as it read the page (its answer's `now`): a
    # job may start after this client asked, and this client's clock is not the daemon's.
    # An answer without it (an older daemon, every host's jobs) is timed by this clock.
    now = time.time()
    jobs: list[dict | None] = []
    rows: list[list[str]] = []
    titles = headers(with_start)
    widths = [len(h) for h in titles]
    ended: list[tuple[int, list[str], dict | None]] = []  # the recently ended, merged by id
    for answer in _answers(args):
        first = len(rows)
        if not isinstance(answer, dict) or "columns" not in answer:  # whole jobs
            page = _whole(answer)
            jobs += page
            rows += job_rows(page, with_start=with_start, now=now)[1]
            widths = widest(widths, rows[first:])
            continue
        now = answer.get("now", now)
        _page_cells(answer, answer["rows"], with_start, now, rows, jobs)
        if answer.get("ended"):
            at = len(rows)
            _page_cells(answer, answer["ended"]["rows"], with_start, now, rows, jobs)
            ended = [(r[0], rows[at + i], jobs[at + i])
                     for i, r in enumerate(answer["ended"]["rows"])]
            del rows[at:], jobs[at:]
            if notes is not None and answer["ended"]["by_state"]:
                notes.append(_ended_note(answer["ended"], now))
        widths = widest(widths, rows[first:] + [r for _, r, _ in ended])
    if ended:
        order = [int(r[0].split("_")[0]) for r in rows]  # a line's id: its job's or array's
        merged = sorted([*((i, r, j) for i, r, j in zip(order, rows, jobs)), *ended],
                        key=lambda t: t[0])
        rows, jobs = [r for _, r, _ in merged], [j for _, _, j in merged]
    return titles, jobs, rows, widths


def _page_cells(answer: dict, values_rows: list, with_start: bool, now: float,
                rows: list[list[str]], jobs: list[dict | None]) -> None:
    """Each row's cells into `rows`, and into `jobs` its dict where it is an array's element
    (None for the others)."""
    from gq.wording.jobs import CELL_FIELDS, cells, start_cell

    columns = answer["columns"]
    values = itemgetter(*[columns.index(f) for f in CELL_FIELDS])
    array = columns.index("array_id")
    starts = answer.get("starts") or {}
    any_array = False
    for row in values_rows:
        line = cells(*values(row), now=now)
        if with_start:
            start = starts.get(str(row[0]))
            line.insert(-1, start_cell(iso(start[0]) if start else None))
        rows.append(line)
        any_array = any_array or row[array] is not None
    if not any_array:
        jobs += [None] * len(values_rows)
        return
    # an array's elements are folded from their dicts
    jobs += [j if j["array"] else None for j in _jobs(answer, values_rows)]


def _ended_note(ended: dict, now: float) -> str:
    """`... and 31,590 more of your jobs ended in the last 1d (31,000 completed, 590
    failed): gq ls --all --since 1d`."""
    from gq.units import format_duration

    by_state = ended["by_state"]
    total = sum(by_state.values())
    more = f"{total:,}" + ("" if ended["counted_all"] else "+")
    what = ", ".join(f"{n:,} {s}" for s, n in sorted(by_state.items(), key=lambda t: -t[1]))
    span = format_duration(max(now - ended["since"], 60))
    if not ended["counted_all"]:
        what = "counted up to " + f"{total - 1:,}: " + what
    return (f"... and {more} more of your jobs ended in the last {span} ({what}): "
            f"gq ls --all --since {span}")


def _args(all: bool, user: str | None, states: list[str], hosts: str | None, json: bool,
          window: dict) -> dict:
    return dict(all=all, user=user, states=states, hosts=hosts, brief=not json,
                recent=not json, **window)


def _whole(answer: list | dict) -> list[dict]:
    """The jobs of an answer of whole jobs: a page, everything at once, or every host's."""
    if isinstance(answer, list):  # a daemon older than pages: everything at once
        return answer
    if "hosts" in answer:  # every host's, in one answer
        from gq.cli.hosts_view import warn_down

        warn_down(answer["hosts"])
    return answer["jobs"]


def _answers(args: dict) -> Iterator[list | dict]:
    """Each answer as it comes; the next page is asked for before this one is handed on, so
    that the daemon reads it while this one is drawn."""
    with connect() as conn:
        answer = conn.call(Op.LIST, **args, page=min(FIRST_PAGE, PAGE))
        while True:
            if isinstance(answer, list) or "hosts" in answer:  # all in one answer
                yield answer
                return
            if answer["next"] is not None:
                conn.send(Op.LIST, **args, page=PAGE, after=answer["next"])
            yield answer
            if answer["next"] is None:
                return
            answer = conn.receive()


def _jobs(answer: dict, rows: list | None = None) -> list[dict]:
    """A page of rows as the dicts of gq/wording/arrays.py (an array as views.brief_json
    gives it; an array's line with its elements counted, `line`)."""
    columns, arrays, lines = answer["columns"], answer["arrays"], answer.get("lines") or {}
    return [_with_array(dict(zip(columns, row)), arrays, lines)
            for row in (answer["rows"] if rows is None else rows)]


def _with_array(job: dict, arrays: dict, lines: dict | None = None) -> dict:
    array = job.pop("array_id", None)
    job["array"] = None if array is None else {
        "id": array, "index": job.pop("array_index"), "size": job.pop("array_size"),
        "limit": job.pop("array_limit"), "ended": arrays.get(str(array), {})}
    if array is not None and lines and str(array) in lines:
        job["array"]["line"] = lines[str(array)]
    for column in _ARRAY[1:]:
        job.pop(column, None)
    return job


def print_json_list(jobs: Iterable[dict]) -> None:
    """Print as json.dumps(list(jobs), indent=2) would, a job at a time."""
    write = sys.stdout.write
    first = True
    for job in jobs:
        write("[\n" if first else ",\n")
        first = False
        write("  " + json.dumps(job, indent=2).replace("\n", "\n  "))
    write("[]\n" if first else "\n]\n")
