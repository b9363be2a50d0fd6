"""gq sim: cluster specs, the baselines, the replay (hand-computed waits), metrics, the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Job, JobState, Reason, Tier
from gq.policy import Card, Host, SchedulerInput
from gq.policy.baselines import fifo, greedy
from gq.sim.cluster import parse_cluster
from gq.sim.metrics import metrics, percentile, summarize
from gq.config.governance import PoolsConfig
from gq.sim.conversion import host_limits, to_job
from gq.sim.replay import JobResult, ReplayResult, replay
from gq.sim.traces import TraceJob, read_trace

from tests.support.cli import gq as run_gq
from tests.support.paths import ROOT
from tests.support.examples import examples

G = 1 << 30

# One host of 4 cards. J1 holds 2 cards until 100; J2 needs all 4; J3 is short (ends at 52,
# before J2 could start anyway); J4 is long (ends 200 s after it starts). Every time limit
# equals the run time, so each policy's choices can be worked out by hand:
#   fifo:   J2 waits for J1 (start 100), J3 and J4 wait behind J2 (start 200).
#   greedy: J3 and J4 start at once; J2 waits until J4 ends (203): the big job starves.
#   gq:     J2 is reserved all 4 cards from 100; J3 fits in before that (backfill), J4 would
#           delay J2, so it waits until J2 ends (200).
HAND_TRACE = """\
job_id,submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name
J1,0,100,2,,ann,normal,1,100s,
J2,1,100,4,,ann,normal,1,100s,
J3,2,50,1,,ann,normal,1,50s,
J4,3,200,1,,ann,normal,1,200s,
"""
HAND_STARTS = {
    "fifo": {"J1": 0, "J2": 100, "J3": 200, "J4": 200},
    "greedy": {"J1": 0, "J2": 203, "J3": 2, "J4": 3},
    "gq": {"J1": 0, "J2": 100, "J3": 2, "J4": 200},
}


def tj(job_id: str, submit: float, duration: float, gpus: int = 1, **kw) -> TraceJob:
    kw.setdefault("user", "ann")
    return TraceJob(job_id=job_id, submit_time=submit, duration=duration, gpus=gpus, **kw)


def starts(result: ReplayResult) -> dict[str, float]:
    return {j.job_id: j.start for j in result.jobs}


def job(job_id: int, gpus: int = 1, submitted_at: float = 0.0, **kw) -> Job:
    return Job(id=job_id, user="ann", command=["true"], cwd="/", gpus=gpus,
               submitted_at=submitted_at, **kw)


def cards(n: int, gb: int = 80) -> tuple[Card, ...]:
    return tuple(Card(i, gb * G) for i in range(n))


@pytest.fixture
def hand_trace(tmp_path) -> Path:
    path = tmp_path / "hand.csv"
    path.write_text(HAND_TRACE)
    return path


# ---- cluster specs -------------------------------------------------------------------------

def test_cluster_spec_hosts_cards_and_islands():
    hosts = parse_cluster("3x8x80G")
    assert [h.name for h in hosts] == ["host0", "host1", "host2"]
    assert all(len(h.cards) == 8 and h.cpus == 128 for h in hosts)
    assert {c.memory_total for h in hosts for c in h.cards} == {80 * G}
    assert [c.index for c in hosts[2].cards] == list(range(8))

    pairs = parse_cluster("2x8xH100/2", cpus_per_host=64)
    assert [c.island for c in pairs[1].cards] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert pairs[0].cpus == 64

    mixed = parse_cluster("2x4xH100,4xA100-40G")
    assert [c.memory_total // G for c in mixed[0].cards] == [80] * 4 + [40] * 4


@pytest.mark.parametrize("spec, words", [
    ("8x80G", "HOSTSxCARDS"),           # a GQ_SIM_GPUS value without the host count
    ("0x8x80G", "0 hosts"),
    ("3x8x80", "neither a size"),
    ("three hosts", "HOSTSxCARDS"),
    ("2x0", "without cards"),
])
def test_bad_cluster_spec_is_one_clear_line(spec, words):
    with pytest.raises(ValueError) as e:
        parse_cluster(spec)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith(f"--cluster {spec!r}")


# ---- the baselines -------------------------------------------------------------------------

def test_fifo_stops_at_the_first_job_that_does_not_fit():
    host = Host(cpus=8, cards=cards(2))
    running = [job(1, gpus=1, state=JobState.RUNNING, gpu_ids=[0], started_at=0.0)]
    pending = [job(2, gpus=2, submitted_at=1), job(3, gpus=1, submitted_at=2)]
    plan = fifo(SchedulerInput(host, pending, running, now=5))
    assert plan.starts == []
    assert plan.reasons == {2: Reason.RESOURCES, 3: Reason.PRIORITY}
    assert "job 2" in plan.shortfalls[3]
    # greedy starts what fits, whatever is ahead of it
    plan = greedy(SchedulerInput(host, pending, running, now=5))
    assert [(s.job_id, s.gpu_ids) for s in plan.starts] == [(3, (1,))]
    assert plan.reasons == {2: Reason.RESOURCES}


def test_baselines_ignore_tiers_and_fill_hosts_in_order():
    hosts = (Host(cpus=8, cards=cards(1), name="a"), Host(cpus=8, cards=cards(2), name="b"))
    pending = [job(1, gpus=2, submitted_at=0, priority=Tier.LOW),
               job(2, gpus=1, submitted_at=1, priority=Tier.HIGH),
               job(3, gpus=1, submitted_at=2)]
    plan = fifo(SchedulerInput(hosts, pending, []))
    assert [(s.job_id, s.host, s.gpu_ids) for s in plan.starts] == [
        (1, "b", (0, 1)), (2, "a", (0,))]
    assert plan.reasons == {3: Reason.RESOURCES}


def test_a_held_job_does_not_block_fifo():
    host = Host(cpus=8, cards=cards(1))
    pending = [job(1, submitted_at=0, state=JobState.HELD), job(2, submitted_at=1)]
    plan = fifo(SchedulerInput(host, pending, []))
    assert [s.job_id for s in plan.starts] == [2]
    assert plan.reasons == {1: Reason.HELD}


# ---- the replay ----------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["fifo", "greedy", "gq"])
def test_hand_computed_starts(hand_trace, policy):
    result = replay(read_trace(hand_trace).jobs, parse_cluster("1x4x80G"), policy)
    assert starts(result) == HAND_STARTS[policy]
    assert result.unfinished == 0 and result.dropped == {}


def test_gq_backfills_like_greedy_and_protects_the_big_job_like_fifo(hand_trace):
    hosts = parse_cluster("1x4x80G")
    m = {p: metrics(replay(read_trace(hand_trace).jobs, hosts, p)) for p in HAND_STARTS}
    assert [m[p]["avg_wait_s"] for p in ("fifo", "greedy", "gq")] == [
        (0 + 99 + 198 + 197) / 4, (0 + 202 + 0 + 0) / 4, (0 + 99 + 0 + 197) / 4]
    assert [m[p]["max_wait_largest_s"] for p in ("fifo", "greedy", "gq")] == [99, 202, 99]
    assert m["gq"]["largest_gpus"] == 4
    # 850 GPU-seconds of work over 4 cards x makespan (fifo and gq end at 400, greedy at 303)
    assert m["greedy"]["allocation_rate"] == pytest.approx(850 / (4 * 303))
    assert m["gq"]["allocation_rate"] == pytest.approx(850 / (4 * 400))


def test_slices_share_a_card_and_count_their_share():
    # Alibaba-style shares of a card: two halves run together, the third waits for one.
    trace = [tj("a", 0, 100, gpu_fraction=0.5), tj("b", 0, 100, gpu_fraction=0.5),
             tj("c", 10, 100, gpu_fraction=0.5)]
    result = replay(trace, parse_cluster("1x1x80G"), "gq")
    assert starts(result) == {"a": 0, "b": 0, "c": 100}
    assert {j.weight for j in result.jobs} == {0.5}
    assert metrics(result)["allocation_rate"] == pytest.approx(150 / 200)


def test_mapping_of_a_trace_job():
    hosts = tuple(host_limits(h, PoolsConfig()) for h in parse_cluster("1x4x80G", 128))
    j = to_job(tj("x", 5, 100, gpu_fraction=0.25, cpus=300), 7, 2.0, 40 * G, 128, hosts)
    assert (j.id, j.mem, j.cpus, j.time_limit, j.submitted_at) == (7, 10 * G, 128, 200.0, 5)
    assert to_job(tj("x", 0, 100), 1, 0.0, G, 8, hosts).time_limit is None
    assert to_job(tj("x", 0, 1), 1, 2.0, G, 8, hosts).time_limit == 60.0  # at least a minute
    assert to_job(tj("x", 0, 100, time_limit=30.0), 1, 2.0, G, 8, hosts).time_limit == 30.0
    assert to_job(tj("x", 0, 100, mem=20 * G), 1, 2.0, G, 8, hosts).mem == 20 * G


def test_jobs_that_fit_no_host_are_dropped_and_a_limit_ends_a_job():
    trace = [tj("big", 0, 10, gpus=16), tj("ok", 0, 10, gpus=8), tj("cut", 0, 500, gpus=1,
                                                                  time_limit=100.0)]
    result = replay(trace, parse_cluster("2x8x80G"), "gq")
    assert sum(result.dropped.values()) == 1 and "16" in next(iter(result.dropped))
    by_id = {j.job_id: j for j in result.jobs}
    assert set(by_id) == {"ok", "cut"}
    assert by_id["cut"].end == 100 and by_id["cut"].timed_out
    assert {by_id["ok"].host, by_id["cut"].host} == {"host0", "host1"}


def test_fair_share_is_recalculated_every_five_simulated_minutes():
    # ann's first job runs 400 s; bob submits after ann queued two more. At 400 the pass sees
    # usage as of 300 (ann: 300 card-seconds), so bob goes first; with usage never recalculated
    # after 0, age decides (ann first).
    trace = [tj("a1", 0, 400), tj("a2", 0, 400), tj("a3", 0, 400), tj("b1", 1, 400, user="bob")]
    hosts = parse_cluster("1x1x80G")
    assert starts(replay(trace, hosts, "gq"))["b1"] == 400
    assert starts(replay(trace, hosts, "gq", usage_refresh=1e9))["b1"] == 1200
    assert starts(replay(trace, hosts, "fifo"))["b1"] == 1200


def test_a_plan_that_over_commits_a_card_stops_the_replay(monkeypatch):
    import gq.sim.replay as sim
    from gq.policy import Plan, Start

    def everything_on_card_0(inp: SchedulerInput, preempt=None) -> Plan:
        return Plan(starts=[Start(j.id, (0,), "host0") for j in inp.pending])

    monkeypatch.setitem(sim.POLICIES, "card0", everything_on_card_0)
    with pytest.raises(RuntimeError, match="takes card 0 whole, which is in use"):
        replay([tj("a", 0, 10), tj("b", 0, 10)], parse_cluster("1x2x80G"), "card0")


def test_usage_is_recalculated_on_a_fixed_grid_so_skipping_stays_exact():
    # A skipped pass (225: nothing fits) must not move a recalculation: ann's usage passes
    # bob's at 232, so usage taken at 225 puts ann's c1 first and usage taken at 240, bob's c2.
    # On a grid of 100 s both passes at 225 and 240 see the usage of 200: ann first.
    trace = [tj("b0", 0, 120, user="bob"), tj("a0", 112, 1000), tj("e0", 120, 120, user="cy"),
             tj("c1", 225, 10), tj("c2", 225, 10, user="bob")]
    hosts = parse_cluster("1x2x80G")
    for skip in (True, False):
        result = replay(trace, hosts, "gq", usage_refresh=100.0, skip_idle_passes=skip)
        assert starts(result)["c1"] == 240 and starts(result)["c2"] == 250


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 200), st.sampled_from([0, 1, 2, 3]),
                          st.sampled_from([None, 0.25, 0.5]), st.sampled_from(list(Tier)),
                          st.sampled_from(["ann", "bob", "cy"])), min_size=1, max_size=25),
       st.sampled_from(["gq", "fifo", "greedy"]), st.sampled_from([300.0, 37.0, 0.0]))
def test_skipping_idle_passes_changes_nothing(rows, policy, usage_refresh):
    trace = sorted((tj(f"{i:02d}", s, d, gpus=g, gpu_fraction=f if g == 1 else None, tier=t,
                       user=u, cpus=2)
                    for i, (s, d, g, f, t, u) in enumerate(rows)),
                   key=lambda j: (j.submit_time, j.job_id))
    hosts = parse_cluster("2x2x80G", cpus_per_host=4)
    fast = replay(trace, hosts, policy, usage_refresh=usage_refresh)
    every = replay(trace, hosts, policy, usage_refresh=usage_refresh, skip_idle_passes=False)
    key = lambda r: sorted((j.job_id, j.start, j.end, j.host) for j in r.jobs)  # noqa: E731
    assert key(fast) == key(every)
    assert fast.passes <= every.passes and fast.unfinished == 0
    assert len(fast.jobs) + sum(fast.dropped.values()) == len(trace)  # 3 GPUs: dropped


# ---- metrics -------------------------------------------------------------------------------

def test_metrics_of_a_hand_made_result():
    r = ReplayResult("gq", parse_cluster("1x2x80G"), [
        JobResult("a", "ann", Tier.HIGH, 1, 1.0, submit=0, start=0, end=100, host="host0"),
        JobResult("b", "ann", Tier.LOW, 2, 2.0, submit=0, start=100, end=150, host="host0"),
        JobResult("c", "bob", Tier.LOW, 1, 0.5, submit=50, start=60, end=200, host="host0"),
    ], dropped={"fit no empty host: GPUs": 2})
    m = metrics(r)
    assert m["policy"] == "gq" and m["jobs"] == 3 and m["dropped"] == 2
    assert m["avg_wait_s"] == pytest.approx(110 / 3)
    assert m["p95_wait_s"] == 100 and m["max_wait_largest_s"] == 100 and m["largest_gpus"] == 2
    assert m["avg_jct_s"] == pytest.approx((100 + 150 + 150) / 3)
    assert m["makespan_s"] == 200
    assert m["allocation_rate"] == pytest.approx((100 + 100 + 70) / (2 * 200))
    low = m["by_tier"]["low"]
    assert low["jobs"] == 2 and low["avg_wait_s"] == 55 and low["max_wait_largest_s"] == 100
    # a tier's allocation is its part of the whole cluster's over the whole makespan
    assert m["by_tier"]["high"]["allocation_rate"] + low["allocation_rate"] == pytest.approx(
        m["allocation_rate"])
    assert set(m["by_tier"]) == {"high", "low"}


def test_the_average_wait_of_the_largest_jobs():
    r = ReplayResult("gq", parse_cluster("1x2x80G"), [
        JobResult("a", "ann", Tier.HIGH, 1, 1.0, submit=0, start=0, end=100, host="host0"),
        JobResult("b", "ann", Tier.LOW, 2, 2.0, submit=0, start=100, end=150, host="host0"),
        JobResult("c", "bob", Tier.HIGH, 2, 2.0, submit=140, start=150, end=160, host="host0"),
    ])
    m = metrics(r)
    assert (m["max_wait_largest_s"], m["avg_wait_largest_s"]) == (100, 55)
    assert m["by_tier"]["high"]["avg_wait_largest_s"] == 10


def test_percentile_is_nearest_rank():
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([5.0], 95) == 5.0 and percentile([], 95) == 0.0
    assert percentile([1, 2, 3, 4], 50) == 2
    assert summarize([], 8)["jobs"] == 0


# ---- the command ---------------------------------------------------------------------------

def gq(*args: str, env=None) -> subprocess.CompletedProcess:
    return run_gq(*args, cwd=ROOT, env=env)


def test_cli_json_for_every_policy(hand_trace):
    proc = gq("sim", str(hand_trace), "--cluster", "1x4x80G", "--policy", "all", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [m["policy"] for m in out] == ["gq", "fifo", "greedy", "sjf-oracle", "tiresias",
                                         "qssf"]
    for m in out:
        for key in ("jobs", "avg_wait_s", "p95_wait_s", "avg_jct_s", "allocation_rate",
                    "makespan_s", "max_wait_largest_s", "by_tier", "dropped", "sim_seconds"):
            assert key in m, key
        assert 0 <= m["allocation_rate"] <= 1 and m["jobs"] == 4
    assert out[0]["max_wait_largest_s"] == 99 and out[2]["max_wait_largest_s"] == 202
    one = json.loads(gq("sim", str(hand_trace), "--cluster", "1x4x80G", "--policy", "fifo",
                        "--json").stdout)
    assert one["policy"] == "fifo" and one["avg_wait_s"] == 123.5


def test_cli_table_has_one_row_per_policy(hand_trace):
    proc = gq("sim", str(hand_trace), "--cluster", "1x4x80G", "--policy", "all")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["POLICY", "JOBS"])
    assert [line.split()[0] for line in lines[header + 1:header + 7]] == [
        "gq", "fifo", "greedy", "sjf-oracle", "tiresias", "qssf"]
    assert lines[header + 7] == ""


@pytest.mark.parametrize("args, words", [
    (["--cluster", "8x80G"], "--cluster '8x80G'"),
    (["--policy", "lifo"], "--policy lifo"),
    (["--time-factor", "-1"], "--time-factor"),
    (["--format", "philly"], "philly format"),
])
def test_cli_bad_input_is_one_line_and_exit_2(hand_trace, args, words):
    proc = gq("sim", str(hand_trace), *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gq: ") and words in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_cli_needs_a_trace_or_history():
    proc = gq("sim")
    assert proc.returncode == 2 and "trace file or --from-history" in proc.stderr


# ---- preemption ------------------------------------------------------------------------------

def test_a_low_job_is_preempted_for_a_high_one_and_resumes_where_it_was():
    from gq.sim.replay import Preemption

    trace = [tj("low", 0, 1000, tier=Tier.LOW), tj("high", 700, 200, tier=Tier.HIGH)]
    hosts = parse_cluster("1x1x80G")
    plain = {j.job_id: j for j in replay(trace, hosts, "gq").jobs}
    assert plain["high"].start == 1000  # without preemption it waits for the low job
    r = replay(trace, hosts, "gq", preemption=Preemption(exempt=300, grace=60))
    done = {j.job_id: j for j in r.jobs}
    assert done["high"].start == 760  # the signal at 700, the grace until 760
    low = done["low"]
    assert (low.start, low.end, low.preemptions) == (0, 760 + 200 + 300, 1)  # 300 s were left
    assert low.held_seconds == 760 + 300
    assert (r.preemptions, r.grace_card_seconds, r.at_risk_card_seconds) == (1, 60.0, 700.0)
    exempt = replay(trace, hosts, "gq", preemption=Preemption(exempt=800, grace=60))
    assert {j.job_id: j.start for j in exempt.jobs}["high"] == 860  # at the exempt end, 800
    normal = replay(trace, hosts, "gq", preemption=Preemption(tiers=frozenset({"normal"})))
    assert {j.job_id: j.start for j in normal.jobs}["high"] == 1000  # low is not preemptible


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 200), st.sampled_from([0, 1, 2]),
                          st.sampled_from(list(Tier))), min_size=1, max_size=20))
def test_skipping_idle_passes_changes_nothing_with_preemption(rows):
    from gq.sim.replay import Preemption

    trace = sorted((tj(f"{i:02d}", s, d, gpus=g, tier=t, user="ann" if i % 2 else "bob")
                    for i, (s, d, g, t) in enumerate(rows)),
                   key=lambda j: (j.submit_time, j.job_id))
    hosts, pre = parse_cluster("2x2x80G", cpus_per_host=4), Preemption(exempt=30, grace=7)
    fast = replay(trace, hosts, "gq", preemption=pre)
    every = replay(trace, hosts, "gq", preemption=pre, skip_idle_passes=False)
    key = lambda r: sorted((j.job_id, j.start, j.end, j.preemptions) for j in r.jobs)  # noqa: E731
    assert key(fast) == key(every) and fast.unfinished == 0
    assert fast.preemptions == every.preemptions
