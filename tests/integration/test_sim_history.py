"""`gq sim --from-history`: a real daemon's ended jobs replayed under every policy."""

from __future__ import annotations

import json


def test_from_history_replays_this_hosts_ended_jobs(make_host):
    host = make_host("2x80G")
    ids = [host.submit("-g", "1", "--", "true"), host.submit("-g", "2", "--", "true"),
           host.submit("-g", "0", "--", "true")]
    for i in ids:
        host.wait_ended(i)
    out = json.loads(host.gq("sim", "--from-history", "--policy", "all", "--json").stdout)
    assert [m["jobs"] for m in out] == [3] * 6
    assert out[0]["gpus"] == 2 and out[0]["largest_gpus"] == 2
