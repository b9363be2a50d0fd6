"""Every request's work is bounded by what it returns, not by the queue (issue #38): with
50,000 of another user's jobs waiting, each operation reads no more jobs or rows than its page
(or its own bound) and the one that says a next page follows. `Resident.read` counts the ids
the store's sorted indexes hand out and the jobs and rows its reads hand out; an explaining
pass (which reads the whole queue) is counted by `Passes.counts`.

The Daemon object is built in-process (it serves nothing and starts no process) over a real
Store on a real SQLite file, once for the module; the jobs are queued through the store's own
array insert."""

from __future__ import annotations

from pathlib import Path

import pytest

from gq.config import Config
from gq.daemon.complete import MAX_READ
from gq.daemon.core import Daemon
from gq.daemon.explain import REASONS_READ
from gq.daemon.layout import Layout
from gq.daemon.listing import MAX_PAGE
from gq.daemon.listing_lines import COUNTED, RECENT, SAMPLE
from gq.daemon.ops import HANDLERS
from gq.daemon.submission import Caller
from gq.daemon.top import ROWS
from gq.gpu import open_backend
from gq.model import ArrayPart, Job, JobState
from gq.protocol.ops import Op

WAITING = 50_000
ENDED = 40
PAGE = 100
ANN, ROOT, CY = Caller(1000, "ann"), Caller(0, "root"), Caller(1002, "cy")


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A daemon with bob's 50,000-element array waiting and three jobs of ann's."""
    home = Path(tmp_path_factory.mktemp("busy"))
    daemon = Daemon(Layout(home), Config(host_cpus=4, host_ram=None),
                    open_backend(home, {"GQ_SIM_GPUS": "1x80G"}), "here",
                    clock=lambda: 1000.0)
    command = ["true"]
    bob = [Job(id=0, user="bob", uid=1001, command=command, cwd="/tmp", gpus=1,
               array=ArrayPart(0, i, WAITING, None, {})) for i in range(WAITING)]
    array = daemon.store.insert_array(bob, at=0.0)[0]
    ann = [daemon.store.insert_job(Job(id=0, user="ann", uid=1000, command=command,
                                       cwd="/tmp", gpus=1), at=0.0) for _ in range(3)]
    for i in range(ENDED):  # cy's jobs that ended today
        daemon.store.insert_job(Job(id=0, user="cy", uid=1002, command=command, cwd="/tmp",
                                    state=JobState.COMPLETED if i % 4 else JobState.FAILED,
                                    submitted_at=900.0, ended_at=900.0 + i), at=900.0)
    yield daemon, array, ann
    daemon.close()


def ask(daemon: Daemon, op: Op, who: Caller, **args):
    """The handler's answer, and how many jobs and rows it read."""
    resident = daemon.store.resident
    resident.read = 0
    explaining = daemon.passes.counts["explaining"]
    answer = HANDLERS[op](daemon, who, args)
    assert daemon.passes.counts["explaining"] == explaining, "a pass read the whole queue"
    return answer, resident.read


def test_a_page_of_gq_ls_reads_the_page_whatever_waits(busy):
    daemon, _, ann = busy
    columns = ["id", "state", "user"]

    def page(who: Caller, after=None, user=None):
        return ask(daemon, Op.LIST, who, columns=columns, page=PAGE, recent=True, after=after,
                   user=user)

    mine, read = page(ANN, user="ann")  # `gq ls -u ann`: not bob's 50,000
    assert [r[0] for r in mine["rows"]] == ann and mine["next"] is None
    assert read <= len(ann)
    everyone, read = page(ROOT)
    assert len(everyone["rows"]) == PAGE and everyone["next"] == everyone["rows"][-1][0]
    assert read <= PAGE + 1
    later, read = page(ROOT, after=everyone["next"] + 20_000)  # a cursor far in
    assert later["rows"][0][0] == everyone["next"] + 20_001
    assert read <= PAGE + 1


def test_gq_ls_by_lines_counts_an_array_and_the_ended_without_reading_them(busy):
    daemon, array, ann = busy
    columns = ["id", "state", "user", "array_id"]
    answer, read = ask(daemon, Op.LIST, CY, columns=columns, page=PAGE, lines=True,
                       recent=True)
    assert [r[0] for r in answer["rows"]] == [array, *ann]  # bob's 50,000: one line
    line = answer["lines"][str(array)]
    assert line["states"] == {"pending": WAITING} and line["span"] == [0, WAITING - 1, True]
    ended = answer["ended"]  # cy's last RECENT listed, the others counted
    assert len(ended["rows"]) == RECENT and ended["counted_all"]
    assert ended["by_state"] == {"completed": 22, "failed": 8}  # of the first 30 to end
    assert read <= PAGE + SAMPLE + RECENT + ENDED + 10 < COUNTED


def test_a_list_without_a_page_gets_the_first_page_and_a_cursor(busy):
    daemon, array, _ = busy
    answer, read = ask(daemon, Op.LIST, ROOT, brief=True)  # scripts, every host's listing
    assert len(answer["jobs"]) == MAX_PAGE and answer["jobs"][0]["id"] == array
    assert answer["next"] == answer["jobs"][-1]["id"] and read <= MAX_PAGE + 1
    for all in (False, True):  # MCP `ls` (whole jobs), and `gq ls --all --json`
        mcp, read = ask(daemon, Op.LIST, ROOT, all=all, page=200)
        assert len(mcp["jobs"]) == 200 and read <= 2 * 201  # ids, then their rows


def test_why_and_show_read_the_job_not_the_queue(busy):
    daemon, array, ann = busy
    why, read = ask(daemon, Op.WHY, ANN, id=str(ann[0]))
    assert why["id"] == ann[0] and why["state"] == "pending" and read <= 10
    shown, read = ask(daemon, Op.SHOW, ANN, id=str(ann[1]))
    assert shown["id"] == ann[1] and read <= 10
    whole, read = ask(daemon, Op.WHY, ROOT, id=str(array))  # an array: counted, not read
    assert whole["elements"] == {"pending": WAITING}
    assert whole["why"].startswith(f"Array {array}: {WAITING} elements: {WAITING} pending.")
    assert read <= 2 * REASONS_READ + 10  # the first elements' ids, and their jobs


def test_gpus_top_and_completion_read_what_they_show(busy):
    daemon, array, ann = busy
    gpus, read = ask(daemon, Op.GPUS, ANN)
    assert len(gpus) == 1 and read <= 1
    top, read = ask(daemon, Op.TOP, ROOT)  # the first snapshot: the first ROWS jobs
    assert top["full"] and len(top["rows"]) == ROWS and top["more"] == WAITING + 3 - ROWS
    assert read <= ROWS + 1
    again, read = ask(daemon, Op.TOP, ROOT, cursor=top["cursor"])  # nothing changed
    assert again["rows"] == [] and again["ids"] is None and read <= 1
    offered, read = ask(daemon, Op.COMPLETE, ANN, **{"for": "cancel", "prefix": ""})
    assert [row[0] for row in offered] == [str(i) for i in ann]  # bob's are not ann's to cancel
    assert read <= MAX_READ + 60
    offered, read = ask(daemon, Op.COMPLETE, ROOT, **{"for": "show", "prefix": str(array)})
    assert offered[0] == [str(array), f", array of {WAITING}: {WAITING} pending"]  # no name
    assert read <= MAX_READ + 60
    elements, read = ask(daemon, Op.COMPLETE, ROOT, **{"for": "show", "prefix": f"{array}_"})
    assert len(elements) == 200 and read <= 2 * MAX_READ


def test_stats_and_fairshare_read_no_waiting_job(busy):
    daemon, _, _ = busy
    stats, read = ask(daemon, Op.STATS, ROOT)
    assert stats["jobs_by_state"] == {"completed": 30, "failed": 10}  # cy's, from the history
    assert read == 0  # no job of the queue read
    shares, read = ask(daemon, Op.FAIRSHARE, ANN)
    assert "accounts" in shares and read == 0
