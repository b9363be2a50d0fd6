"""`gq ls`: ask the daemon for what the table prints, page by page over one connection.

The table asks for its columns only (no command, directory or environment; times as whole
epoch seconds); `--json` asks for whole jobs and prints each page as it comes, so that neither side
holds 10,000 jobs at once. A daemon older than pages answers everything at once; every host's
listing (`--all-hosts`) too: both are taken as they come.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator

from gq.cli.client import connect

PAGE = 1000  # jobs an answer
TABLE = ["id", "name", "user", "state", "reason", "priority", "interactive", "gpus", "gpus_max",
         "mem", "cpus", "submitted_at", "started_at", "ended_at", "exit_code", "gpu_ids",
         "failure", "array_id", "array_index", "array_size", "array_limit"]


def list_jobs(all: bool, user: str | None, states: list[str], hosts: str | None, json: bool,
              **window) -> Iterable[dict]:
    """The jobs `gq ls` shows: for --json an iterator of whole jobs (pages as they come),
    else a list of the table's fields."""
    args = dict(all=all, user=user, states=states, hosts=hosts, brief=not json,
                recent=not json, **window)
    if json:
        return _pages(args)
    return list(_pages({**args, "columns": TABLE}))


def _pages(args: dict) -> Iterator[dict]:
    """Each page's jobs as it comes; the next page is asked for before this one is handed
    on, so that the daemon reads it while this one is drawn."""
    with connect() as conn:
        answer = conn.call("list", **args, page=PAGE)
        while True:
            if isinstance(answer, list):  # a daemon older than pages: everything at once
                yield from answer
                return
            if "hosts" in answer:  # every host's, in one answer
                from gq.cli.hosts_view import warn_down

                warn_down(answer["hosts"])
                yield from answer["jobs"]
                return
            if answer["next"] is not None:
                conn.send("list", **args, page=PAGE, after=answer["next"])
            yield from (_jobs(answer) if "columns" in answer else answer["jobs"])
            if answer["next"] is None:
                return
            answer = conn.receive()


def _jobs(answer: dict) -> Iterator[dict]:
    """A page of rows as the dicts the table is drawn from (an array as views.brief_json
    gives it, and expected starts as ISO-8601 times)."""
    columns, arrays, starts = answer["columns"], answer["arrays"], answer.get("starts") or {}
    for row in answer["rows"]:
        job = dict(zip(columns, row))
        array = job.pop("array_id", None)
        job["array"] = None if array is None else {
            "id": array, "index": job.pop("array_index"), "size": job.pop("array_size"),
            "limit": job.pop("array_limit"), "ended": arrays.get(str(array), {})}
        start = starts.get(str(job["id"])) if starts else None
        if start is not None:
            from gq.units import iso

            job["expected_start"], job["expected_start_basis"] = iso(start[0]), start[1]
        yield job


def print_json_list(jobs: Iterable[dict]) -> None:
    """Print as json.dumps(list(jobs), indent=2) would, a job at a time."""
    write = sys.stdout.write
    first = True
    for job in jobs:
        write("[\n" if first else ",\n")
        first = False
        write("  " + json.dumps(job, indent=2).replace("\n", "\n  "))
    write("[]\n" if first else "\n]\n")
