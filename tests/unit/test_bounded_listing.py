"""A listing's work is bounded by its page, not by the queue (issue #38): with 50,000 of another
user's jobs waiting, one page of `gq ls` reads from the store's sorted index (Resident.read
counts the ids it hands out) no more ids than the page and the one that says a next page
follows. The Daemon object is built in-process (it serves nothing and starts no process) over a
real Store on a real SQLite file; the jobs are queued through the store's own array insert."""

from __future__ import annotations

from pathlib import Path

from gq.config import Config
from gq.daemon.core import Daemon
from gq.daemon.layout import Layout
from gq.daemon.ops import HANDLERS
from gq.daemon.submission import Caller
from gq.gpu import open_backend
from gq.model import ArrayPart, Job
from gq.protocol.ops import Op

WAITING = 50_000
PAGE = 100


def test_a_page_of_gq_ls_reads_the_page_whatever_waits(tmp_path: Path):
    daemon = Daemon(Layout(tmp_path), Config(host_cpus=4, host_ram=None),
                    open_backend(tmp_path, {"GQ_SIM_GPUS": "1x80G"}), "here",
                    clock=lambda: 1000.0)
    try:
        command = ["true"]
        bob = [Job(id=0, user="bob", uid=1001, command=command, cwd="/tmp", gpus=1,
                   array=ArrayPart(0, i, WAITING, None, {})) for i in range(WAITING)]
        daemon.store.insert_array(bob, at=0.0)
        ann = [daemon.store.insert_job(Job(id=0, user="ann", uid=1000, command=command,
                                           cwd="/tmp", gpus=1), at=0.0) for _ in range(3)]
        resident = daemon.store.resident
        columns = ["id", "state", "user"]

        def page(who: Caller, after=None, user=None) -> dict:
            resident.read = 0
            args = {"columns": columns, "page": PAGE, "recent": True, "after": after,
                    "user": user}
            return HANDLERS[Op.LIST](daemon, who, args)

        mine = page(Caller(1000, "ann"), user="ann")  # `gq ls -u ann`: listing: not bob's 50,000
        assert [r[0] for r in mine["rows"]] == ann and mine["next"] is None
        assert resident.read <= len(ann)
        everyone = page(Caller(0, "root"))
        assert len(everyone["rows"]) == PAGE and everyone["next"] == everyone["rows"][-1][0]
        assert resident.read <= PAGE + 1
        later = page(Caller(0, "root"), after=everyone["next"] + 20_000)  # a cursor far in
        assert later["rows"][0][0] == everyone["next"] + 20_001
        assert resident.read <= PAGE + 1
    finally:
        daemon.close()
