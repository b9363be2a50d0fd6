"""Lab governance as an admin finds it: bad settings and reservations refused, `gq why` naming
what really keeps a job, the settings and records an admin reads (issue 26)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.hosts import host_with, wait_for

from tests.support.cli import gq
from tests.support.paths import ROOT
from gq.model import Job, JobState, Reason
from tests.support.jobs import gated

POOLS = """
[pools.train]
cards = [0, 1]

[pools.batch]
cards = [2, 3]
default = true
"""


def test_the_daemon_refuses_to_start_with_a_pool_naming_a_card_it_lacks(make_host):
    """Item 3: the card was dropped silently and the pool was one card short."""
    host = make_host("8x80G", start=False)
    with open(host.home / "config.toml", "a") as f:
        f.write("\n[pools.big]\ncards = [1, 2, 3, 4, 5, 9]\n")
    run = subprocess.run([sys.executable, "-m", "gq", "daemon", "run"], env=host.env,
                         capture_output=True, text=True, timeout=60)
    config = host.home / "config.toml"
    assert run.returncode == 2
    assert run.stderr.strip().endswith(
        f"gq: {config} line 9: [pools.big] cards: card 9 not on this host (its cards: 0-7)")
    check = host.gq("config", "check", check=False)
    assert (check.returncode, check.stderr.strip()) == (2, run.stderr.strip().splitlines()[-1])


def test_a_reservation_for_nobody_is_refused(make_host):
    """Item 4, and item 10's 'give one of' when two holders were given."""
    host = make_host("2x80G")
    common = ("reserve", "--ids", "0", "--start", "now", "--duration", "1h")
    for flag in ("--user", "--group"):
        bad = host.gq(*common, flag, "no-such-holder-here", check=False)
        assert (bad.returncode, bad.stderr) == (
            2, f"gq: {flag} no-such-holder-here: no such {flag[2:]} on this host\n")
    two = host.gq(*common, "--user", "root", "--group", "root", check=False)
    assert (two.returncode, two.stderr) == (
        2, "gq: --user and --group: a reservation has one holder; give only one of them\n")
    assert host.gq("reserve", "ls").stdout.strip() == "no reservations"
    host.gq(*common, "--group", "root")  # an existing group is taken


def test_why_names_the_reservation_on_the_cards_of_the_jobs_pool(make_host):
    """Items 6 and 7: it named reservation 1, on a card of another pool, as "reservation 1
    (and 1 more)", and advised a shorter --time while the window was open."""
    host = host_with(make_host, POOLS)
    for card in ("3", "0"):
        host.gq("reserve", "--ids", card, "--start", "now", "--duration", "1h", "--user",
                "nobody")
    gate = host.work / "gate"
    job = host.submit("--pool", "train", "--gpus", "2", "--time", "10m", *gated(gate))
    host.wait_reason(job, "Resources")
    why = host.gq("why", str(job)).stdout
    assert "cards reserved by an admin for user nobody (reservation 2), open now" in why
    assert "reservation 1" not in why and "more)" not in why
    assert "shorter --time" not in why
    gate.touch()


def test_an_account_limit_names_its_own_table():
    """Item 8: it said "([limits] in config.toml)"."""
    from gq.daemon.views import why_sentence

    job = Job(id=5, user="ann", command=["true"], cwd="/", state=JobState.PENDING,
              reason=Reason.QUOTA_LIMIT)
    text = why_sentence(job, "account vision may hold at most 2 GPUs at once")
    assert text.endswith("at once ([accounts.vision] in config.toml).")
    assert why_sentence(job, "ann may hold at most 2 GPUs at once").endswith(
        "([limits] in config.toml).")


def test_a_cpu_only_job_names_no_pool_and_ls_shows_held_cards_and_interactive_jobs(make_host):
    """Item 10: --gpus 0 --pool was accepted; GPUS said 2 for a 2-4 job holding 3 cards; an
    interactive job looked like any other."""
    host = host_with(make_host, POOLS.replace("[2, 3]", "[2, 3, 4, 5]"), sim="6x80G")
    cpu = host.gq("submit", "--gpus", "0", "--pool", "train", "--", "true", check=False)
    assert (cpu.returncode, cpu.stderr) == (
        2, "gq: --pool train: a CPU-only job (--gpus 0) is in no pool; give --gpus 1 or more, "
           "or leave out --pool\n")
    gate = host.work / "gate"
    busy = host.submit(*gated(gate))
    host.wait_state(busy, "running")
    elastic = host.submit("--gpus", "2-4", *gated(gate))
    assert len(host.wait_state(elastic, "running")["gpu_ids"]) == 3
    notebook = host.submit("--interactive", "--pool", "train", "--time", "10m", *gated(gate))
    host.wait_state(notebook, "running")
    rows = {line.split()[0]: line.split() for line in host.gq("ls").stdout.splitlines()[1:]}
    assert rows[str(elastic)][5:7] == ["3", "(2-4)"]
    assert rows[str(notebook)][4] == "interactive" and rows[str(busy)][4] == "normal"
    gate.touch()


def test_gq_sim_says_where_its_time_limits_come_from(tmp_path):
    """Item 10: it said "time limits 2x the run time" when every row gave its own."""
    trace = tmp_path / "t.csv"
    head = "job_id,submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name\n"
    trace.write_text(head + "A,0,10,1,,ann,normal,1,1h,\nB,0,10,1,,ann,normal,1,2h,\n")
    sim = ["sim", str(trace), "--cluster", "1x2x80G"]
    out = gq(*sim, cwd=ROOT, check=True).stdout
    assert out.splitlines()[0].endswith("time limits as each row gives")
    trace.write_text(head + "A,0,10,1,,ann,normal,1,1h,\nB,0,10,1,,ann,normal,1,,\n")
    out = gq(*sim, cwd=ROOT, check=True).stdout
    assert out.splitlines()[0].endswith("time limits as rows give, else 2x the run time")


def test_the_record_of_reservations_keeps_removed_and_past_ones(make_host):
    """Item 11: a removed reservation was deleted, and the log said nothing."""
    host = make_host("2x80G")
    past = host.gq("reserve", "--ids", "0", "--start", "now", "--duration", "1h", "--user",
                   "nobody", "--name", "deadline")
    assert past.returncode == 0
    host.gq("reserve", "rm", "1")
    again = host.gq("reserve", "rm", "1", check=False)
    assert (again.returncode, again.stderr) == (
        2, "gq: reservation 1: removed already, by root\n".replace("root", host_user()))
    assert host.gq("reserve", "ls").stdout.strip() == "no reservations"
    (row,) = json.loads(host.gq("reserve", "ls", "--all", "--json").stdout)
    assert (row["id"], row["state"], row["removed_by"]) == (1, "removed", host_user())
    assert row["removed_at"] is not None
    table = host.gq("reserve", "ls", "--all").stdout
    assert "removed" in table and f"removed by {host_user()}" in table
    log = (host.home / "daemon.test.log").read_text()
    assert f"reservation 1 made by {host_user()}: GPU 0 for user nobody" in log
    assert f"reservation 1 removed by {host_user()}: GPU 0 for user nobody" in log


def host_user() -> str:
    import getpass

    return getpass.getuser()


def test_the_fair_share_view_by_hand():
    """Item 12: per account and user, the share, the usage and the factor. vision (share 2)
    has ann (1 h) and bob (0.5 h); cy, in no account, used 0.5 h; nlp has used nothing.
    Accounts with usage: vision 2/3, cy 1/3. ann: her effective usage 0.5 + (0.75 - 0.5) / 2
    = 0.625 of all, her fair share (2/3) / 2, factor 2^-(0.625 / (1/3))."""
    from gq.policy.accounts import Accounts, share_report, share_factors

    usage = {"ann": 3600.0, "bob": 1800.0, "cy": 1800.0}
    accounts = Accounts({"ann": "vision", "bob": "vision", "dan": "nlp"}, {"vision": 2.0})
    rows = {r["account"]: r for r in share_report(usage, accounts)}
    assert list(rows) == ["cy", "nlp", "vision"]
    vision = rows["vision"]
    assert (vision["norm_share"], vision["norm_usage"]) == (2 / 3, 0.75)
    ann = vision["users"][0]
    assert ann["user"] == "ann" and ann["effective_usage"] == 0.625
    assert ann["factor"] == 2 ** -(0.625 / (1 / 3))
    assert ann["factor"] == share_factors(usage, accounts).of("ann")  # what the pass uses
    assert rows["cy"]["configured"] is False and rows["cy"]["norm_share"] == 1 / 3
    assert rows["nlp"]["users"] == [{"user": "dan", "usage_card_seconds": 0.0,
                                     "norm_usage": 0.0, "effective_usage": None, "factor": 1.0}]


def test_gq_fairshare_shows_the_factor_a_waiting_job_gets(make_host):
    me = host_user()
    host = host_with(make_host, f'\n[accounts.vision]\nusers = ["{me}", "nobody"]\nshare = 2\n',
                     sim="1x80G")
    gate = host.work / "gate"
    host.wait_state(host.submit(*gated(gate)), "running")
    waiting = host.submit(*gated(gate))
    host.wait_reason(waiting, "Resources")
    found = json.loads(host.gq("fairshare", "--json").stdout)
    (vision,) = [a for a in found["accounts"] if a["account"] == "vision"]
    assert vision["share"] == 2.0
    assert [u["user"] for u in vision["users"]] == sorted([me, "nobody"])
    mine = next(u for u in vision["users"] if u["user"] == me)
    assert abs(mine["factor"] - wait_score(host, waiting)) < 1e-4  # what its score holds
    table = host.gq("fairshare").stdout
    assert table.splitlines()[0].split() == ["ACCOUNT", "USER", "SHARE", "NORM_SHARE",
                                             "CARD_HOURS", "USAGE", "EFFECTIVE_USAGE",
                                             "FAIRSHARE"]
    assert "Usage decays by half every 7d" in table
    gate.touch()


def wait_score(host, job_id: int) -> float:
    return json.loads(host.gq("show", str(job_id), "--json").stdout)["score"]["fairshare"]


def test_stats_and_gpus_show_each_pool(make_host):
    """Item 13: per-pool utilisation and waits in gq stats, a pool column in gq gpus."""
    host = host_with(make_host, POOLS)
    gate = host.work / "gate"
    first = host.submit("--pool", "train", "--gpus", "2", *gated(gate))
    host.wait_state(first, "running")
    host.wait_ended(host.submit("--", "true"))
    second = host.submit("--pool", "train", "--", "true")
    host.wait_reason(second, "Resources")
    gate.touch()
    host.wait_ended(second)
    wait_for(lambda: host.call("samples", since=600)["points"], what="a sample of the cards")
    figures = json.loads(host.gq("stats", "--since", "1h", "--json").stdout)
    pools = figures["by_pool"]
    assert set(pools) == {"train", "batch"}
    assert pools["train"]["gpus"] == [0, 1] and pools["batch"]["gpus"] == [2, 3]
    assert (pools["train"]["waits"]["jobs"], pools["batch"]["waits"]["jobs"]) == (2, 1)
    assert pools["train"]["waits"]["p95"] > 0  # the second waited for the first
    assert pools["train"]["utilization"] == 0.0  # simulated cards idle
    text = host.gq("stats", "--since", "1h").stdout
    assert any(line.split()[:2] == ["train", "0,1"] for line in text.splitlines())
    gpus = host.gq("gpus").stdout.splitlines()
    assert gpus[0].split()[:2] == ["GPU", "POOL"]
    assert [line.split()[1] for line in gpus[1:] if line[:1].isdigit()] == [
        "train", "train", "batch", "batch"]
    assert [c["pool"] for c in host.call("gpus")] == ["train", "train", "batch", "batch"]
