"""A flood of submits from many clients at once: every one acknowledged once, none lost."""

from __future__ import annotations

import time

import pytest

from gq.protocol.ops import every_listed

from tests.support.hostile import collect, db_jobs, integrity_check, start_flood

CLIENTS, EACH = 32, 200


@pytest.mark.timeout(600)  # each submit waits for its fsync: slow disks take minutes
def test_32_clients_submitting_200_jobs_each_get_6400_distinct_increasing_ids(make_host):
    host = make_host("1x80G")
    began = time.monotonic()
    results = collect(start_flood(host, CLIENTS, EACH, "--hold", "-g", "0", "--", "true"))
    elapsed = time.monotonic() - began
    for code, ids, stderr in results:
        # Nothing at all on stderr: no "database is locked", no retry, no warning.
        assert (code, stderr) == (0, ""), stderr
        assert len(ids) == EACH
        assert ids == sorted(ids) and len(set(ids)) == EACH  # each client's ids increase
    acked = [i for _, ids, _ in results for i in ids]
    assert len(acked) == len(set(acked)) == CLIENTS * EACH
    assert sorted(acked) == list(range(min(acked), min(acked) + CLIENTS * EACH))
    listed = every_listed(host.call, all=True)  # 6,400: pages of at most 5,000
    assert sorted(j["id"] for j in listed) == sorted(acked)
    assert all(j["state"] == "held" and j["command"] == ["true"] for j in listed)
    stored = db_jobs(host.home / "gq.db")
    assert all(j.get("submitted_event") for j in stored.values())
    assert integrity_check(host.home / "gq.db") == ["ok"]
    print(f"\n{CLIENTS * EACH} submits from {CLIENTS} clients in {elapsed:.1f}s "
          f"({CLIENTS * EACH / elapsed:.0f}/s)")
