"""gq sim with a lab: pools, admin reservations, elastic ranges and accounts in a replay, with
waits worked out by hand, and the CLI's --config."""

from __future__ import annotations

import json

import pytest

from gq.sim.cluster import parse_cluster
from gq.sim.lab import read_lab
from gq.sim.replay import replay
from gq.sim.traces import read_trace
from tests.support.cli import gq
from tests.support.paths import ROOT

# One host of 3 cards; every time limit is the run time.
#   P1, P2: pool a (card 0): P2 waits for P1 although cards 1 and 2 are free.
#   E1: 1-2 cards, at 0: takes what is left, cards 1 and 2 (pool b, the default).
#   R1: bob's, at 300, 100 s, pool b: card 1 and 2 are reserved for ann from 350 to 450, so
#       it waits until 450; A1, ann's, at 301, starts at once on the reserved cards.
TRACE = """\
job_id,submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name,pool,gpus_max
P1,0,100,1,,cy,normal,1,100s,,a,
P2,0,100,1,,cy,normal,1,100s,,a,
E1,0,200,1,,cy,normal,1,200s,,,2
R1,300,100,1,,bob,normal,1,100s,,,
A1,301,100,2,,ann,normal,1,100s,,,
"""
LAB = """\
[pools.a]
cards = [0]

[pools.b]
cards = [1, 2]
default = true

[accounts.vision]
users = ["ann"]

[[reservations]]
cards = [1, 2]
start = "350s"
duration = "100s"
user = "ann"
"""
STARTS = {"P1": 0, "P2": 100, "E1": 0, "R1": 450, "A1": 301}


@pytest.fixture
def files(tmp_path):
    trace, lab = tmp_path / "trace.csv", tmp_path / "lab.toml"
    trace.write_text(TRACE)
    lab.write_text(LAB)
    return trace, lab


@pytest.mark.parametrize("skip", [True, False])
def test_a_replay_keeps_pools_reservations_and_elastic_ranges(files, skip):
    trace, lab_file = files
    hosts = parse_cluster("1x3x80G")
    result = replay(read_trace(trace).jobs, hosts, "gq", 1.0, lab=read_lab(lab_file, hosts),
                    skip_idle_passes=skip)
    assert {j.job_id: j.start for j in result.jobs} == STARTS
    assert {j.job_id: j.gpus for j in result.jobs}["E1"] == 2
    assert result.unfinished == 0


def test_the_baselines_keep_pools_and_reservations_too(files):
    trace, lab_file = files
    hosts = parse_cluster("1x3x80G")
    for policy in ("fifo", "greedy"):
        starts = {j.job_id: j.start for j in replay(read_trace(trace).jobs, hosts, policy, 1.0,
                                                      lab=read_lab(lab_file, hosts)).jobs}
        assert starts["P2"] == 100 and starts["R1"] == 450, policy


def test_without_the_lab_the_same_trace_ignores_the_rules(files):
    """...and refuses the jobs naming a pool, as a daemon without pools refuses them."""
    trace, _ = files
    result = replay(read_trace(trace).jobs, parse_cluster("1x3x80G"), "gq", 1.0)
    starts = {j.job_id: j.start for j in result.jobs}
    assert "P2" not in starts and starts["R1"] == 300
    assert result.dropped == {"were refused: --pool a: host0 has no pools ([pools.NAME] in "
                              "config.toml)": 2}


def test_gq_sim_config_on_the_command_line(files):
    trace, lab = files
    out = gq("sim", str(trace), "--cluster", "1x3x80G", "--config", str(lab), "--time-factor",
             "1", "--json", cwd=ROOT, check=True)
    assert json.loads(out.stdout)["jobs"] == 5
    bad = lab.with_name("bad.toml")
    bad.write_text('[[reservations]]\ncards = [0]\nstart = "1h"\nduration = "1h"\n')
    err = gq("sim", str(trace), "--config", str(bad), cwd=ROOT)
    assert err.returncode == 2
    assert err.stderr.strip() == (f"gq: --config {bad}: [[reservations]] 1: give its holder: "
                                  "one of user, users or account")


def test_a_gq_trace_checks_its_governance_columns(tmp_path):
    from gq.sim.traces import TraceError

    path = tmp_path / "t.csv"
    path.write_text("submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name,gpus_max,"
                    "interactive\n0,10,2,,ann,normal,1,,,1,\n")
    with pytest.raises(TraceError, match="gpus_max: '1': expected at least gpus"):
        read_trace(path)
    path.write_text("submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name,gpus_max,"
                    "interactive\n0,10,2,,ann,normal,1,,,4,yes\n")
    (job,) = read_trace(path).jobs
    assert (job.gpus, job.gpus_max, job.interactive) == (2, 4, True)


# One host of 2 cards, one user, limits = run times. B (both cards) comes before S in the
# queue (it asks for less card-time). With reservations, B holds both cards from 100 (when L
# ends) and S, which would end at 302, waits until B has run; with none, S takes the free card
# at once and B waits for it.
BACKFILL_TRACE = """\
job_id,submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name,pool,gpus_max
L,0,100,1,,cy,normal,1,100s,,,
B,1,100,2,,cy,normal,1,100s,,,
S,2,300,1,,cy,normal,1,300s,,,
"""


@pytest.mark.parametrize("settings, starts", [
    ("", {"L": 0, "B": 100, "S": 200}),
    ("[scheduler]\nreservations = 0\n", {"L": 0, "B": 302, "S": 2}),
    # B can never start under this limit: it is left waiting (unfinished).
    ("[limits]\nmax_running_gpus = 1\n", {"L": 0, "S": 100}),
])
def test_a_lab_file_sets_the_scheduler_and_limits_of_a_replay(tmp_path, settings, starts):
    trace, lab = tmp_path / "trace.csv", tmp_path / "lab.toml"
    trace.write_text(BACKFILL_TRACE)
    lab.write_text(settings)
    hosts = parse_cluster("1x2x80G")
    result = replay(read_trace(trace).jobs, hosts, "gq", 1.0, lab=read_lab(lab, hosts))
    assert {j.job_id: j.start for j in result.jobs} == starts


def test_a_lab_files_default_time_is_the_limit_of_jobs_that_declare_none(tmp_path):
    # L declares no limit; B (high, both cards) waits for it; S (normal, 150 s) may backfill
    # only if it ends before B's reservation, which begins when L is assumed to end.
    trace, lab = tmp_path / "trace.csv", tmp_path / "lab.toml"
    trace.write_text(BACKFILL_TRACE.splitlines()[0] + "\n" + "L,0,100,1,,cy,normal,1,,,,\n"
                     "B,1,100,2,,cy,high,1,100s,,,\nS,2,150,1,,cy,normal,1,150s,,,\n")
    hosts = parse_cluster("1x2x80G")
    # The replay assumes a day: S backfills, and B starts when both have ended.
    assert {j.job_id: j.start for j in replay(read_trace(trace).jobs, hosts, "gq", 0).jobs
            } == {"L": 0, "B": 152, "S": 2}
    # A lab that assumes 90 s for the normal tier: B's reservation begins at 90, S would delay
    # it and waits; B starts at 100, when L really ends.
    # (high_share 1: the daemon's default, 20% of the cards, would never let B start.)
    lab.write_text('[scheduler]\ndefault_time = {normal = "90s", high = "1h"}\n'
                   '[limits]\nhigh_share = 1.0\n')
    starts = {j.job_id: j.start for j in replay(read_trace(trace).jobs, hosts, "gq", 0,
                                                  lab=read_lab(lab, hosts)).jobs}
    assert starts == {"L": 0, "B": 100, "S": 200}


def test_a_config_without_limits_has_the_daemons_high_share_and_its_refusal(tmp_path):
    """Issue #39 item 2: the replay applied no [limits] unless the file had them, while the
    daemon always applies high_share, and kept a job the daemon refuses as 'unfinished'."""
    trace, lab = tmp_path / "trace.csv", tmp_path / "config.toml"
    trace.write_text(BACKFILL_TRACE.splitlines()[0] + "\n" + "B,1,100,2,,cy,high,1,100s,,,\n"
                     "S,2,150,1,,cy,normal,1,150s,,,\n")
    lab.write_text('[daemon]\ntick = "2s"\n[notify]\ntimeout = "1m"\n')
    hosts = parse_cluster("1x2x80G")
    config = read_lab(lab, hosts)
    assert config.ignored == ("[daemon]", "[notify]")
    result = replay(read_trace(trace).jobs, hosts, "gq", 0, lab=config)
    assert [j.job_id for j in result.jobs] == ["S"] and result.unfinished == 0
    assert result.dropped_jobs == [("B", "were refused: -p high -g 2: cy's high-tier jobs may "
                                    "hold at most 1 GPU, so it could never start; ask for "
                                    "fewer GPUs or a lower tier (the limits: gq config show)")]


@pytest.mark.parametrize("text, message", [
    ("[scheduler]\nreservations = -1\n",
     "[scheduler] reservations = -1: expected a whole number, 0 or more"),
    ("[scheduler]\nreservation = 2\n", "unknown setting [scheduler] reservation"),
    ("[limits]\nhigh_share = 2\n", "[limits] high_share = 2: expected a number from 0 to 1"),
    ("scheduler = 3\n", "[scheduler]: expected a table"),
])
def test_a_bad_scheduler_setting_in_a_lab_file_is_one_line(tmp_path, text, message):
    trace, lab = tmp_path / "trace.csv", tmp_path / "lab.toml"
    trace.write_text(BACKFILL_TRACE)
    lab.write_text(text)
    err = gq("sim", str(trace), "--config", str(lab), cwd=ROOT)
    assert (err.returncode, err.stderr) == (2, f"gq: --config {lab}: {message}\n")


def test_gq_sim_jobs_writes_each_jobs_start_end_host_and_cards(files, tmp_path):
    """Issue 26 item 14: a lab file checked on a handful of jobs, job by job."""
    import csv

    trace, lab = files
    with open(trace, "a") as f:
        f.write("X,0,10,1,,cy,normal,1,10s,,gpu9,\n")
    out = tmp_path / "jobs.csv"
    gq("sim", str(trace), "--cluster", "1x3x80G", "--config", str(lab), "--time-factor", "1",
       "--jobs", str(out), cwd=ROOT, check=True)
    rows = {r["job_id"]: r for r in csv.DictReader(out.open())}
    assert {k: float(r["start"]) for k, r in rows.items() if r["start"]} == STARTS
    assert (rows["P2"]["host"], rows["P2"]["gpu_ids"], rows["P2"]["end"]) == ("host0", "0", "200")
    assert rows["E1"]["gpu_ids"] == "1 2" and rows["R1"]["wait"] == "150"
    assert rows["X"]["start"] == "" and rows["X"]["dropped"] == (
        "refused: --pool gpu9: no such pool on host0 (pools: a, b)")
    bad = gq("sim", str(trace), "--jobs", str(tmp_path / "no" / "jobs.csv"), cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.startswith(f"gq: --jobs {tmp_path / 'no'}")


def test_the_replay_holds_a_job_preempted_more_than_max_requeues_as_the_daemon(tmp_path):
    """Issue #39 item 2: a job preempted 8 times finished in the replay; live it was held after
    [preemption] max_requeues. The file's exempt and grace are the replay's too."""
    trace, lab = tmp_path / "trace.csv", tmp_path / "config.toml"
    trace.write_text(BACKFILL_TRACE.splitlines()[0] + "\n" + "L,0,1000,1,,ann,low,1,,,,\n"
                     + "".join(f"H{n},{n * 100 + 10},10,1,,bob,high,1,,,,\n" for n in range(3)))
    lab.write_text('[preemption]\nexempt = "0s"\ngrace = "5s"\nmax_requeues = 1\n'
                   '[limits]\nhigh_share = 1.0\n')
    hosts = parse_cluster("1x1x80G")
    result = replay(read_trace(trace).jobs, hosts, "gq", 0, lab=read_lab(lab, hosts))
    assert sorted(j.job_id for j in result.jobs) == ["H0", "H1", "H2"]
    assert result.preemptions == 2
    assert [job for job, _ in result.held_jobs] == ["L"]
    assert "more than [preemption] max_requeues = 1" in result.held_jobs[0][1]
    assert {j.job_id: j.start for j in result.jobs}["H0"] == 15  # the file's grace
