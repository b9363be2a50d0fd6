"""Placement by what cards really hold: measured use, over-budget cards, and a restarted daemon
that trusts no reading before it has matched every running job to its card."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Job, JobState, Reason
from gq.policy import Card, Host, SchedulerInput, schedule
from gq.policy.placement import MEASURED_MARGIN
from tests.support.hosts import host_with, wait_for
from tests.support.examples import examples

G = 1 << 30
BURN = [sys.executable, "-m", "gq.sim.burn"]


def job(id, mem=None, gpus=1, state=JobState.PENDING, gpu_ids=()):
    return Job(id=id, user="u", command=["x"], cwd="/", gpus=gpus, mem=mem, state=state,
               submitted_at=float(id), gpu_ids=list(gpu_ids), started_at=0.0
               if state == JobState.RUNNING else None)


def card(i, measured=(), external=0, total=80):
    return Card(i, total * G, external, measured=tuple(measured))


# --- from literals ----------------------------------------------------------------------------


def test_a_job_over_its_budget_keeps_new_slices_off_its_card_with_the_numbers():
    over = job(41, mem=10 * G, state=JobState.RUNNING, gpu_ids=[0])
    sweep = [job(i, mem=30 * G) for i in (50, 51, 52, 53)]
    cards = (card(0, [(41, 25 * G)]), card(1, external=6 * G), card(2, external=40 * G),
             card(3, external=60 * G))
    plan = schedule(SchedulerInput(Host(64, cards=cards), sweep, [over], now=100.0))
    placed = {s.job_id: s.gpu_ids for s in plan.starts}
    assert all(0 not in cards_ for cards_ in placed.values())
    assert sorted(placed) == [50, 51, 52]  # two on GPU 1 (74G free), one on GPU 2 (40G)
    assert plan.reasons[53] == Reason.RESOURCES
    assert ("GPU 0 takes no new slices while job 41 holds 25G, 15G over its --mem 10G"
            in plan.shortfalls[53])
    assert "the most free on another card is" in plan.shortfalls[53]


def test_a_job_within_budget_occupies_what_it_holds_plus_a_margin():
    within = job(41, mem=10 * G, state=JobState.RUNNING, gpu_ids=[0])
    held = 10 * G - (1 << 20)  # just under its --mem: the margin counts beyond it
    h = Host(64, cards=(card(0, [(41, held)]),))
    fits = 80 * G - held - MEASURED_MARGIN
    plan = schedule(SchedulerInput(h, [job(1, mem=fits)], [within], now=100.0))
    assert [s.job_id for s in plan.starts] == [1]
    plan = schedule(SchedulerInput(h, [job(1, mem=fits + 1)], [within], now=100.0))
    assert plan.starts == []


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 40), st.integers(0, 60)),
             max_size=6),
    st.lists(st.integers(1, 60), min_size=1, max_size=6),
    st.lists(st.integers(0, 20), min_size=4, max_size=4),
)
def test_no_card_is_ever_given_more_than_it_holds_measured_plus_reserved(running, asked,
                                                                       outside):
    """Whatever the running jobs declared and hold, the memory measured on a card (outside gq,
    and each job's) plus what the jobs started on it reserve never exceeds the card."""
    jobs, measured = [], {i: [] for i in range(4)}
    for n, (c, declared, held) in enumerate(running):
        jobs.append(job(100 + n, mem=declared * G, state=JobState.RUNNING, gpu_ids=[c]))
        measured[c].append((100 + n, held * G))
    cards = tuple(card(i, measured[i], outside[i] * G) for i in range(4))
    pending = [job(n + 1, mem=a * G) for n, a in enumerate(asked)]
    plan = schedule(SchedulerInput(Host(64, cards=cards), pending, jobs, now=100.0))
    mem_of = {j.id: j.mem for j in pending}
    for i in range(4):
        on_card = [j for j in jobs if j.gpu_ids == [i]]
        if any(h > j.mem for j in on_card for k, h in measured[i] if k == j.id):
            assert not any(i in s.gpu_ids for s in plan.starts)  # over budget: no new slice
        held = sum(max(j.mem, h) for j in on_card for k, h in measured[i] if k == j.id)
        started = sum(mem_of[s.job_id] for s in plan.starts if i in s.gpu_ids)
        if started:
            assert outside[i] * G + held + started <= 80 * G


# --- a real daemon ----------------------------------------------------------------------------


FAST = """
[telemetry]
interval = "0.2s"

[offenders]
over_budget_after = "0s"
"""


def test_a_sweep_never_lands_on_a_card_where_a_job_is_over_budget(make_host):
    host = host_with(make_host, FAST)
    over = host.submit("-m", "10G", "--", *BURN, "--mem", "25G", "--seconds", "600")
    host.wait_state(over, "running")
    wait_for(lambda: any(j["id"] == over and j["used"] == 25 * G
                         for c in host.call("gpus") for j in c["jobs"]),
             what="the over-budget job's memory to be measured")
    # Best fit by declarations alone would put two of these beside it (70G "free").
    sweep = [host.submit("-m", "30G", "--", *BURN, "--mem", "30G", "--seconds", "600")
             for _ in range(4)]
    ended = {j: host.wait_state(j, "running", "oom", "failed") for j in sweep}
    assert {j: s["state"] for j, s in ended.items()} == {j: "running" for j in sweep}
    over_card = host.job(over)["gpu_ids"][0]
    assert all(over_card not in s["gpu_ids"] for s in ended.values())
    assert f"{over}:{host.job(over)['user']}:10G(holds 25G!)" in host.gq("gpus").stdout
    offences = wait_for(lambda: host.job(over)["offences"], what="the over-budget offence")
    assert offences[0]["kind"] == "over_budget"
    assert "holds 25G on GPU" in offences[0]["evidence"]
    assert f"`gq cancel {over}`, then the same command with --mem 28G" in (
        offences[0]["suggestion"])


def test_a_restarted_daemon_takes_no_running_job_for_memory_outside_gq(make_host):
    host = host_with(make_host, FAST)
    held = host.submit("-m", "20G", "--", *BURN, "--mem", "20G", "--seconds", "600")
    card_of = host.wait_state(held, "running")["gpu_ids"][0]
    wait_for(lambda: host.call("gpus")[card_of]["jobs"][0]["used"] == 20 * G,
             what="the job's memory to be measured")
    host.kill_daemon()
    host.start()
    # The first answer of the new daemon: the job's memory is its own, never outside gq
    # (which the scheduler would place on), nor an unknown that outlives the adoption.
    first = host.call("gpus")[card_of]
    assert first["external_used"] == 0
    assert first["jobs"][0]["used"] == 20 * G
