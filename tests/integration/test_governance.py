"""Pools, interactive jobs, admin reservations, elastic ranges and accounts on a real daemon
with simulated cards, driven through the CLI."""

from __future__ import annotations

import getpass
import json

import pytest

from tests.support.hosts import host_with, wait_for
from gq.config import AccessConfig
from gq.daemon.authz import Authority
from gq.daemon.submission import Caller
from tests.support.jobs import gated

POOLS = """
[pools.interactive]
cards = [0]
max_time = "1h"
interactive = true
past_limit = "requeue"

[pools.train]
cards = [1, 2]

[pools.batch]
cards = [3]
default = true
"""


def test_jobs_run_on_the_cards_of_their_pool(make_host):
    host = host_with(make_host, POOLS)
    gate = host.work / "gate"
    train = host.submit("--pool", "train", "--gpus", "2", *gated(gate))
    plain = host.submit(*gated(gate))
    waiting = host.submit(*gated(gate))  # the batch pool has one card
    assert host.wait_state(train, "running")["gpu_ids"] == [1, 2]
    assert host.wait_state(plain, "running")["gpu_ids"] == [3]
    assert host.wait_reason(waiting, "Resources")["pool"] is None
    gate.touch()
    assert host.wait_ended(waiting)["gpu_ids"] == [3]


def test_pool_options_are_checked_at_submit(make_host):
    host = host_with(make_host, POOLS)
    bad = host.gq("submit", "--pool", "gpu9", "--", "true", check=False)
    assert bad.returncode == 2
    assert bad.stderr.startswith("gq: --pool gpu9: no such pool")
    long = host.gq("submit", "--pool", "interactive", "--time", "2h", "--", "true", check=False)
    assert (long.returncode, long.stderr.strip()) == (
        2, "gq: --time 2h00m: pool interactive allows at most 1h00m")
    big = host.gq("submit", "--pool", "train", "--gpus", "3", "--", "true", check=False)
    assert "pool train has only 2 GPUs" in big.stderr
    # An interactive job goes to the interactive pool, with its max_time as the limit.
    job = host.job(host.submit("--interactive", "--mem", "10G", "--", "true"))
    assert (job["pool"], job["interactive"], job["time_limit"]) == ("interactive", True, 3600.0)


def test_an_interactive_job_goes_ahead_of_waiting_batch_work(make_host):
    host = host_with(make_host, POOLS)
    gate, blocker_gate = host.work / "gate", host.work / "blocker"
    blocker = host.submit("--pool", "interactive", "--time", "30m", *gated(blocker_gate))
    host.wait_state(blocker, "running")
    urgent = host.submit("--pool", "interactive", "-p", "high", "--time", "30m", *gated(gate))
    notebook = host.submit("--interactive", "--time", "10m", *gated(gate))
    host.wait_reason(urgent, "Resources")
    host.wait_reason(notebook, "Resources")
    blocker_gate.touch()
    assert host.wait_state(notebook, "running")["gpu_ids"] == [0]
    assert host.job(urgent)["state"] == "pending"
    gate.touch()
    host.wait_ended(urgent)


def test_an_interactive_job_past_its_limit_goes_on_as_batch_work(make_host):
    host = host_with(make_host, POOLS)
    gate = host.work / "gate"
    # Each run says which card it had (simulated cards are visible by index): the first run
    # need not be caught while it lasts, a second.
    job = host.submit("--interactive", "--time", "1s",
                      *gated(gate, echo='"$GQ_RESTART_COUNT $CUDA_VISIBLE_DEVICES"'))

    def requeued_as_batch():
        j = host.job(job)
        return j if j["state"] == "running" and j["gpu_ids"] == [3] else None

    j = wait_for(requeued_as_batch, what="the job to run again in the batch pool")
    assert (j["interactive"], j["pool"], j["time_limit"], j["restarts"]) == (False, None, None, 1)
    assert any("requeued as batch work" in (e["reason"] or "") for e in j["events"])
    gate.touch()
    assert host.wait_ended(job)["state"] == "completed"
    assert host.log(job).splitlines() == ["0 0", "1 3"]  # the interactive card, then batch's


def test_a_reservation_keeps_its_cards_from_other_users(make_host):
    host = make_host("4x80G")
    me = getpass.getuser()
    made = json.loads(host.gq("reserve", "--cards", "2", "--start", "now", "--duration", "1h",
                              "--user", "nobody", "--name", "deadline", "--json").stdout)
    assert made["gpu_ids"] == [0, 1] and made["state"] == "active"
    assert made["holder"] == {"kind": "user", "name": "nobody"}
    gate = host.work / "gate"
    three = host.submit("--gpus", "3", *gated(gate))
    host.wait_reason(three, "Resources")
    why = host.gq("why", str(three)).stdout
    assert "reserved by an admin for user nobody (reservation 1)" in why
    assert made["end"] in why  # expected to start when the reservation ends
    two = host.submit("--gpus", "2", "--time", "10m", *gated(gate))
    assert host.wait_state(two, "running")["gpu_ids"] == [2, 3]
    listed = host.gq("reserve", "ls").stdout
    assert "deadline" in listed and "user nobody" in listed and me in listed
    assert host.gq("reserve", "rm", str(made["id"])).stdout.strip() == (
        f"removed reservation {made['id']}")
    assert host.gq("reserve", "ls").stdout.strip() == "no reservations"
    gate.touch()
    assert host.wait_ended(three)["state"] == "completed"


def test_the_holder_runs_on_reserved_cards_and_a_future_window_turns_long_jobs_away(make_host):
    host = make_host("2x80G")
    me = getpass.getuser()
    host.gq("reserve", "--ids", "1", "--start", "now", "--duration", "1h", "--user", me)
    soon = host.gq("reserve", "--ids", "0", "--start", _in(1800), "--duration", "1h",
                   "--user", "nobody", "--json")
    assert json.loads(soon.stdout)["state"] == "future"
    gate = host.work / "gate"
    mine = host.submit("--gpus", "2", "--time", "10m", *gated(gate))
    assert host.wait_state(mine, "running")["gpu_ids"] == [0, 1]  # ends before card 0's window
    gate.touch()
    host.wait_ended(mine)
    gate.unlink()
    long = host.submit("--gpus", "2", "--time", "2h", *gated(gate))
    host.wait_reason(long, "Resources")
    assert json.loads(host.gq("ls", "--json").stdout)[0]["expected_start"] is not None
    clash = host.gq("reserve", "--ids", "0", "--start", _in(1900), "--duration", "1h",
                    "--user", me, check=False)
    assert clash.returncode == 2 and "card 0 is in reservation 2" in clash.stderr
    gate.touch()


def _in(seconds: float) -> str:
    import time

    from gq.units import iso

    return iso(time.time() + seconds)


def test_only_admins_may_reserve():
    """`gq reserve` asks gq/daemon/authz.py, as every admin-only action does."""
    authority = Authority(AccessConfig(admins="no-such-group-here"), owner_uid=1)
    assert authority.is_admin(Caller(0, "root"))
    assert not authority.is_admin(Caller(65534, "nobody"))


def test_an_elastic_job_starts_with_the_cards_that_are_free_and_is_told_how_many(make_host):
    host = make_host("4x80G")
    gate = host.work / "gate"
    busy = host.submit(*gated(gate))
    host.wait_state(busy, "running")
    elastic = host.submit("--gpus", "2-4", *gated(gate, echo='"$GQ_NUM_GPUS"'))
    job = host.wait_state(elastic, "running")
    assert (job["gpus"], job["gpus_max"], len(job["gpu_ids"])) == (2, 4, 3)
    assert wait_for(lambda: host.log(elastic).strip(), what="its output").split()[0] == "3"
    waits = host.submit("--gpus", "1-2", *gated(gate))
    host.wait_reason(waits, "Resources")
    bad = host.gq("submit", "--gpus", "3-2", "--", "true", check=False)
    assert bad.returncode == 2 and "expected a range like 2-4" in bad.stderr
    gate.touch()
    assert host.wait_ended(elastic)["state"] == "completed"
    assert 1 <= len(host.wait_ended(waits)["gpu_ids"]) <= 2


def test_account_limits_and_the_account_shown(make_host):
    me = getpass.getuser()
    host = host_with(make_host, f'\n[accounts.vision]\nusers = ["{me}"]\nmax_running_gpus = 2\n')
    gate = host.work / "gate"
    first = host.submit("--gpus", "2", *gated(gate))
    host.wait_state(first, "running")
    second = host.submit(*gated(gate))
    host.wait_reason(second, "QuotaLimit")
    assert "account vision may hold at most 2 GPUs at once" in host.gq("why", str(second)).stdout
    assert host.job(second)["account"] == "vision"
    gate.touch()
    host.wait_ended(second)


@pytest.mark.parametrize("setting, message", [
    ('[pools.a]\ncards = []\n', "[pools.a] cards: expected a list of card indices"),
    ('[pools.a]\ncards = [0]\ncolour = "red"\n', "unknown setting [pools.a] colour"),
    ('[pools.a]\ncards = [0]\ndefault = true\n[pools.b]\ncards = [1]\ndefault = true\n',
     "default = true in a and b"),
    ('[accounts.x]\nusers = ["ann"]\n[accounts.y]\nusers = ["ann"]\n',
     "ann is in account x already"),
    ('[accounts.x]\nusers = ["ann"]\nmax_share = 2\n', "[accounts.x] max_share = 2"),
])
def test_bad_governance_settings_are_refused_naming_them(tmp_path, setting, message):
    from gq.config import load_config
    from gq.protocol import GqError

    path = tmp_path / "config.toml"
    path.write_text(setting)
    with pytest.raises(GqError) as e:
        load_config(path)
    assert message in e.value.message


def test_a_database_from_before_governance_is_upgraded_with_its_jobs_and_runs(tmp_path):
    from sqlite_utils import Database

    from gq.store import Store
    from gq.store.schema import migrations

    old = Database(tmp_path / "gq.db")
    migrations.apply(old, stop_before="m010_governance")
    old.execute(
        "INSERT INTO jobs (user, uid, state, priority, gpus, cpus, command, cwd, env, deps, "
        "submitted_at) VALUES ('ann', 1000, 'pending', 'normal', 2, 1, '[\"x\"]', '/', '{}', "
        "'{}', 5.0)")
    old.execute("INSERT INTO runs (job_id, user, gpus, weight, started_at, ended_at, state) "
                "VALUES (1, 'ann', 1, 0.25, 0.0, 100.0, 'completed')")
    old.conn.commit()
    old.close()
    store = Store(tmp_path / "gq.db")
    (job,) = store.queue()
    assert (job.pool, job.gpus_max, job.interactive, job.gpus) == (None, None, False, 2)
    assert list(store.runs_since(0.0)) == [{"user": "ann", "share": 0.25, "started_at": 0.0,
                                            "ended_at": 100.0}]
    assert store.reservations.ending_after(0.0) == []
