"""The list operation's columns and pages: every job once, in order, with what one answer
would say; `gq ls --json` prints what one answer holds; the recently ended jobs are read by
their end time, not by reading the user's whole history."""

from __future__ import annotations

import json

import pytest

from gq.model import ENDED_STATES, Job, JobState
from gq.states import ACTIVE
from gq.protocol import BadInput
from gq.store import Store
from gq.units import iso

TABLE = ["id", "name", "state", "reason", "submitted_at", "ended_at", "gpu_ids", "interactive",
         "array_id", "array_index", "array_size", "array_limit"]


def pages(host, **args) -> list[dict]:
    """Every page of a listing, as the CLI reads them."""
    answers, after = [], None
    while True:
        answer = host.call("list", **args, **({} if after is None else {"after": after}))
        answers.append(answer)
        after = answer["next"]
        if after is None:
            return answers


def queue(host) -> list[int]:
    ended = [host.submit("-g", "0", "-n", f"e{i}", "--", "true") for i in range(4)]
    for job in ended:
        host.wait_ended(job)
    held = [host.submit("--hold", "-g", "0", "--", "true") for _ in range(2)]
    array = host.submit("--hold", "-g", "0", "--array", "0-2", "--", "true")
    return ended + held + [array, array + 1, array + 2]


def test_pages_of_columns_list_every_job_once_as_one_answer_would(host):
    ids = queue(host)
    whole = {j["id"]: j for j in host.call("list", all=True, brief=True)["jobs"]}
    answers = pages(host, all=True, columns=TABLE, page=3)
    assert [len(a["rows"]) for a in answers] == [3, 3, 3]
    rows = [dict(zip(a["columns"], r)) for a in answers for r in a["rows"]]
    assert [r["id"] for r in rows] == ids
    for r in rows:
        brief = whole[r["id"]]
        assert {k: r[k] for k in ("name", "state", "reason", "gpu_ids")} == {
            k: brief[k] for k in ("name", "state", "reason", "gpu_ids")}
        # whole seconds, as the ISO-8601 times of the JSON views (gq ls's TIME as before)
        assert isinstance(r["submitted_at"], int) and iso(r["submitted_at"]) == brief[
            "submitted_at"]
        assert iso(r["ended_at"]) == brief["ended_at"] and r["interactive"] == 0
        array = brief["array"]
        assert (r["array_id"], r["array_index"], r["array_size"], r["array_limit"]) == (
            (array["id"], array["index"], array["size"], array["limit"]) if array else
            (None,) * 4)


def test_json_pages_hold_what_one_answer_holds(host):
    queue(host)
    one = host.call("list", all=True)["jobs"]
    paged = [j for a in pages(host, all=True, page=2) for j in a["jobs"]]
    assert paged == one
    assert host.gq("ls", "--all", "--json").stdout == json.dumps(one, indent=2) + "\n"
    assert host.gq("ls", "--json", "-u", "nobody").stdout == "[]\n"


def test_last_and_recent_page_alike(host):
    ids = queue(host)
    last = pages(host, all=True, last=5, columns=["id"], page=2)
    assert [r[0] for a in last for r in a["rows"]] == ids[-5:]
    # the default listing: active jobs (from memory) and the recently ended, by id
    recent = pages(host, recent=True, columns=["state"], page=4)
    assert [r[0] for a in recent for r in a["rows"]] == ids


def test_bad_columns_and_pages_are_refused(host):
    for args in ({"columns": ["env"]}, {"columns": "id"}, {"page": 0}, {"page": True},
                 {"page": 2, "after": "x"}, {"page": 2, "after": 1 << 70}):
        with pytest.raises(BadInput):
            host.call("list", all=True, **args)
    assert host.call("list", all=True, last=1 << 70, columns=["id"])["rows"] == []


def test_recently_ended_jobs_are_read_by_their_end(tmp_path):
    """gq ls costs the same with 100 or 10,000 ended jobs: the store reads the ones that
    ended lately through the ended_at index, not every row of the user."""
    store = Store(tmp_path / "gq.db")
    for i in range(3):
        store.insert_job(Job(id=0, user="ann", command=["x"], cwd="/", state=JobState.COMPLETED,
                             submitted_at=i, ended_at=100 + i), i)
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    rows = store.listing(["id"], ENDED_STATES, "ann", ended_after=101)
    store.db.conn.set_trace_callback(None)
    assert rows == [(3,)]
    sql = next(s for s in statements if s.startswith("SELECT id FROM jobs"))  # bound values in
    plan = " ".join(str(r) for r in store.db.execute("EXPLAIN QUERY PLAN " + sql).fetchall())
    assert "jobs_ended_at" in plan, plan


def test_raw_json_goes_into_an_answer_as_it_is():
    from gq.protocol import RawJSON, encode

    answer = {"rows": RawJSON('[[1,"a",[0,1]],[2,null,[]]]'), "next": None,
              "name": "\x00 not a mark", "more": [RawJSON("{}"), 3]}
    assert json.loads(encode(answer)) == {"rows": [[1, "a", [0, 1]], [2, None, []]],
                                          "next": None, "name": "\x00 not a mark",
                                          "more": [{}, 3]}
    with pytest.raises(TypeError):
        encode({"x": object()})


def test_the_table_from_pages_is_the_table_from_whole_jobs(host, monkeypatch):
    """`gq ls` draws its cells from each page's rows (gq/cli/listing.py list_table); the TUI
    and --all-hosts draw them from whole jobs (job_rows). Both give the same table: an array
    split across pages, running, elastic, reserved, held and ended jobs."""
    from gq.cli import listing
    from gq.wording.arrays import fold
    from gq.wording.jobs import job_rows

    queue(host)
    host.wait_ended(host.submit("-g", "0", "-n", "boom", "--", "false"))  # ended before both
    running = host.submit("-g", "1-2", "-n", "elastic", "--time", "1h", "--", "sleep", "600")
    host.wait_state(running, "running")
    whole_card = host.submit("-g", "4", "--time", "1h", "--", "true")  # waits, reserved
    host.wait_reason(whole_card, "Resources")
    monkeypatch.setenv("GQ_HOME", str(host.home))
    monkeypatch.setattr(listing, "PAGE", 2)  # the array's elements on two pages
    for expand in (False, True):
        for start in (False, True):
            one = host.call("list", all=True, brief=True)["jobs"]
            headers, rows = job_rows(one, with_start=start)
            drawn = fold(one, rows, expand=expand, listed_all=True)
            paged_headers, jobs, rows, widths = listing.list_table(
                all=True, user=None, states=[], hosts=None, with_start=start)
            # counted page by page: the widest cell of each column, headers included
            assert widths == [max(map(len, c)) for c in zip(paged_headers, *rows)]
            paged = fold(jobs, rows, expand=expand, listed_all=True)
            time_at = headers.index("TIME")
            assert paged_headers == headers and len(paged) == len(drawn) > 8
            assert not start or any(":" in row[-2] for row in paged)  # an expected start
            for mine, theirs in zip(paged, drawn):  # TIME of active jobs: as of each `now`
                # a job, or an array's line ("1 running, 2 completed"), timed as of a `now`
                active = any(state in mine[3] for state in ACTIVE)
                assert [c for i, c in enumerate(mine) if i != time_at or not active] == [
                    c for i, c in enumerate(theirs) if i != time_at or not active]
    host.gq("cancel", str(running))


def test_ls_times_its_rows_by_the_daemons_clock(host, monkeypatch):
    """A job started after the client took its time, or a client whose clock differs from the
    daemon's: TIME is as of the daemon's reading of the page (its answer's `now`), not
    -1d23h (the client behind), nor minutes too long (ahead)."""
    import time
    from types import SimpleNamespace

    from gq.cli import listing
    from tests.support.jobs import gated

    gate = host.work / "gate"
    running = host.submit(*gated(gate))
    host.wait_state(running, "running")
    held = host.submit("--hold", "-g", "0", "--", "true")
    real = time.time
    try:
        for skew in (-120.0, 120.0):
            monkeypatch.setattr(listing, "time", SimpleNamespace(time=lambda: real() + skew))
            rows = [line.split() for line in host.gq("ls").stdout.splitlines()[1:]]
            times = {int(r[0]): r[8] for r in rows}
            assert set(times) == {running, held}
            for job, shown in times.items():  # both began within the test: seconds ago
                assert shown[:-1].isdigit() and shown[-1] == "s" and int(shown[:-1]) < 60, (
                    skew, job, shown)
    finally:
        gate.touch()
