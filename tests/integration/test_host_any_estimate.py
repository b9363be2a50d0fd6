"""The estimate of `--host any` against what a real daemon then starts: the same array elements
held back (tests/unit/test_decide.py checks decide's two ways of keeping the queue)."""

from __future__ import annotations

from gq.model import Reason
from tests.support.hosts import wait_for


def test_the_host_any_estimate_holds_back_array_elements_as_the_daemon_does(make_host):
    host = make_host("4x80G", cpus=16)
    gate = host.work / "gate"
    hold = ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done"]
    # An array that may run one element at a time: five elements wait, three cards stay free.
    array = host.submit("--array", "0-5%1", "--gpus", "1", "--", *hold)
    wait_for(lambda: host.job(array)["state"] == "running", what="the first element")
    one = dict(command=hold, gpus=1, cwd=str(host.work))
    answer = host.call("estimate", **one)
    assert answer["wait"] == 0 and answer["starting"] == 1, answer
    job = host.submit("--gpus", "1", "--", *hold)
    assert host.wait_state(job, "running")["state"] == "running"
    # A new array of %2 elements: two of its four start at once (two cards are free).
    four = dict(one, array={"indices": [0, 1, 2, 3], "limit": 2})
    answer = host.call("estimate", **four)
    assert answer["wait"] == 0 and answer["starting"] == 2, answer
    second = host.submit("--array", "0-3%2", "--gpus", "1", "--", *hold)
    wait_for(lambda: sum(host.job(second + i)["state"] == "running" for i in range(4)) == 2,
             what="two elements of the second array")
    assert [host.job(second + i)["reason"] for i in (2, 3)] == [Reason.ARRAY_LIMIT] * 2
    gate.touch()
