"""What one submit may cost: an array stores what its elements share once, and a submit beyond
[daemon] max_submit_jobs, max_submit_bytes or max_waiting_per_user is refused, nothing queued."""

from __future__ import annotations

import json
import os
import socket

from tests.support.hosts import host_with

BIG_ENV = {"PATH": "/usr/bin:/bin", "BIG": "x" * (100 << 10)}


def _stored(host) -> int:
    return sum(os.path.getsize(p) for p in (host.home / "gq.db", host.home / "gq.db-wal")
               if p.exists())


def _raw_submit(host, **args) -> dict:
    req = {"v": 1, "op": "submit", "args": {"command": ["true"], "cwd": str(host.work),
                                            "gpus": 0, "hold": True, **args}}
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(120)
        s.connect(str(host.home / "gq.sock"))
        s.sendall(json.dumps(req).encode() + b"\n")
        return json.loads(s.makefile("rb").readline())


def test_an_array_stores_its_environment_once_and_each_element_still_has_it(make_host):
    host = make_host()
    before = _stored(host)
    reply = _raw_submit(host, env=BIG_ENV, command=["echo", "{lr}"],
                        sweep=[["lr", [str(i) for i in range(40)]],
                               ["seed", [str(i) for i in range(50)]]])
    assert reply["ok"], reply
    grown = _stored(host) - before
    # 2,000 elements of a 100 KB environment: 200 MB when each row had its copy.
    assert grown < 20 << 20, f"{grown} bytes"
    ids = reply["result"]["array_jobs"]
    assert len(ids) == 2000
    last = host.job(ids[-1])
    assert (last["env"]["BIG"], last["command"]) == (BIG_ENV["BIG"], ["echo", "39"])
    assert host.job(ids[0])["command"] == ["echo", "0"]
    listed = host.call("list", states=["held"])["jobs"]
    assert len(listed) == 2000
    assert {j["command"][1] for j in listed} == {str(i) for i in range(40)}
    # An element runs with the shared environment and its own command.
    host.call("release", ids=[f"{ids[0]}_1"])
    ended = host.wait_ended(ids[1])
    assert ended["state"] == "completed" and host.log(ids[1]) == "0\n"
    host.call("cancel", ids=[str(ids[0])])


def test_a_submit_beyond_the_limits_is_refused_in_one_line_and_queues_nothing(make_host):
    host = host_with(make_host, '\nmax_submit_jobs = 100\nmax_submit_bytes = "1M"\n'
                                "max_waiting_per_user = 150\n")
    reply = _raw_submit(host, array={"indices": list(range(101))})
    assert reply == {"ok": False, "code": 2, "error": (
        "101 jobs in one submit: this host takes at most 100 ([daemon] max_submit_jobs); "
        "submit the array in parts, e.g. --array 0-99 and --array 100-...")}
    reply = _raw_submit(host, env={"BIG": "x" * (2 << 20)})
    assert not reply["ok"] and reply["code"] == 2
    assert reply["error"].startswith("this submit would store 2.0M: at most 1M in one submit")
    assert "([daemon] max_submit_bytes)" in reply["error"]
    assert host.call("list", all=True)["jobs"] == []
    assert _raw_submit(host, array={"indices": list(range(100))})["ok"]
    reply = _raw_submit(host, array={"indices": list(range(60))})
    user = host.call("ping")["user"]
    assert reply == {"ok": False, "code": 1, "error": (
        f"{user} has 100 jobs waiting; 60 more would pass the 150 one user may have waiting "
        "([daemon] max_waiting_per_user): submit them once some have started, or cancel some "
        "(gq cancel)")}
    assert len(host.call("list", all=True)["jobs"]) == 100
    shown = host.gq("config", "show", "--json")
    rows = {(r["section"], r["key"]): r["value"] for r in json.loads(shown.stdout)["settings"]}
    assert (rows["daemon", "max_submit_jobs"], rows["daemon", "max_submit_bytes"],
            rows["daemon", "max_waiting_per_user"]) == (100, "1M", 150)
