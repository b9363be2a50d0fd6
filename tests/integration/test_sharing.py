"""Sharing a card: a slice joins a shared card only if the learned SM utilisations there fit
under [scheduler] share_util_max; from literals, and on a real daemon with burn --util jobs."""

from __future__ import annotations

import sys

from tests.support.hosts import host_with, wait_for

from gq.model import Job, JobState, Reason
from gq.policy import Card, Host, SchedulerInput, decide

G = 1 << 30
BURN = [sys.executable, "-m", "gq.sim.burn"]


def two_cards() -> Host:
    return Host(cpus=16, cards=(Card(0, 80 * G), Card(1, 80 * G)))


def slice_job(id, mem=20, state=JobState.PENDING, gpu_ids=()) -> Job:
    return Job(id=id, user="ann", command=["x"], cwd="/", gpus=1, mem=mem * G, state=state,
               gpu_ids=list(gpu_ids), started_at=0.0 if gpu_ids else None)


def placed(util: dict[int, float], util_max: float | None = 100.0, host=None):
    running = [slice_job(1, state=JobState.RUNNING, gpu_ids=[0])]
    inp = SchedulerInput(host or two_cards(), [slice_job(2)], running, now=10.0, util=util,
                         share_util_max=util_max)
    return decide(inp)


def test_a_slice_shares_a_card_only_when_the_utilisations_fit():
    # Memory alone puts job 2 beside job 1 on card 0 (best fit keeps card 1 whole).
    assert placed({}).starts[0].gpu_ids == (0,)
    assert placed({1: 40.0, 2: 60.0}).starts[0].gpu_ids == (0,)  # 100: at the bound
    assert placed({1: 40.0, 2: 61.0}).starts[0].gpu_ids == (1,)  # over: the empty card
    # No history for either job: placed by memory, as before the rule.
    assert placed({1: 95.0}).starts[0].gpu_ids == (0,)
    assert placed({2: 95.0}).starts[0].gpu_ids == (0,)
    assert placed({1: 90.0, 2: 90.0}, util_max=None).starts[0].gpu_ids == (0,)
    assert placed({1: 90.0, 2: 90.0}, util_max=200.0).starts[0].gpu_ids == (0,)


def test_a_slice_waits_for_a_quieter_card_and_says_so_with_the_numbers():
    plan = placed({1: 70.0, 2: 50.0}, host=Host(cpus=16, cards=(Card(0, 80 * G),)))
    assert plan.starts == [] and plan.reasons[2] == Reason.RESOURCES
    assert plan.shortfalls[2] == (
        "a card whose jobs' SM utilisation leaves room for its 50%: card 0 has the memory, but "
        "jobs 1 there use 70% ([scheduler] share_util_max = 100; learned from past runs of the "
        "same commands)")


# ---- a real daemon --------------------------------------------------------------------------

def test_the_daemon_learns_a_commands_utilisation_and_keeps_two_busy_ones_apart(make_host):
    host = host_with(make_host, '\n[telemetry]\ninterval = "0.2s"\n', sim="1x80G")
    gate = host.work / "gate"
    busy = ["sh", "-c", f"{' '.join(BURN)} --mem 10G --util 90 & b=$!; "
                        f"while [ ! -e {gate} ]; do sleep 0.05; done; kill $b; wait $b; exit 0"]
    learn = host.submit("--mem", "20G", "--", *busy)
    host.wait_state(learn, "running")
    wait_for(lambda: ((host.job(learn)["usage"] or {}).get("util_mean") or 0) >= 60,
             what="the first run to keep the card busy for a while")
    gate.touch()
    assert host.wait_ended(learn)["state"] == "completed"
    gate.unlink()
    # Two runs of the same command: each is known to use over 60%; they do not share.
    a = host.submit("--mem", "20G", "--", *busy)
    host.wait_state(a, "running")
    b = host.submit("--mem", "20G", "--", *busy)
    host.wait_reason(b, "Resources")
    why = host.gq("why", str(b)).stdout
    assert "SM utilisation leaves room for its" in why and f"jobs {a} there use" in why, why
    assert "share_util_max = 100" in why
    # A command without history is placed by memory, beside the busy one.
    fresh = host.submit("--mem", "20G", "--", *BURN, "--mem", "1G", "--util", "10")
    assert host.wait_state(fresh, "running")["gpu_ids"] == [0]
    gate.touch()
    assert host.wait_ended(a)["state"] == "completed"
    assert host.wait_ended(b)["state"] == "completed"
    first, second = host.job(a), host.job(b)
    assert second["started_at"] >= first["ended_at"]


# ---- the replay: slices slow each other down, and the rule keeps busy pairs apart ------------

def test_the_replay_stretches_shared_slices_and_applies_the_rule_to_drawn_profiles():
    from gq.sim.cluster import parse_cluster
    from gq.sim.colocation import Sharing, band
    from gq.sim.replay import replay
    from gq.sim.traces import TraceJob

    trace = [TraceJob(job_id=n, submit_time=0.0, duration=1000.0, user="ann", gpus=1, mem=30 * G)
             for n in ("a", "b")]
    hosts = parse_cluster("1x1x80G")
    busy_pairs = 0
    for seed in range(1, 30):
        u1, u2 = Sharing(seed).profile(1), Sharing(seed).profile(2)
        loose = replay(trace, hosts, "gq", seed=seed)
        ends = sorted(j.end for j in loose.jobs)
        assert loose.sharing["pairs"] == 1  # memory alone: they always share
        speed = band(u1 + u2)[1]
        # The one that joins is stretched (the first keeps the speed it started with).
        assert ends == [1000.0, 1000.0 / min(speed, 1.0)]
        ruled = replay(trace, hosts, "gq", seed=seed, share_util_max=100.0)
        apart = u1 + u2 > 100
        busy_pairs += apart
        assert ruled.sharing["pairs"] == (0 if apart else 1), (u1, u2)
        if apart:  # the second waits for the first to end
            assert sorted(j.start for j in ruled.jobs) == [0.0, 1000.0]
    assert 0 < busy_pairs < 29  # both cases were seen
