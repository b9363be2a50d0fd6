"""Freezing in `gq sim` (gq/sim/freeze_model.py through the replay): a frozen victim loses no
work and frees its card after its freeze time, not a grace; its thaw costs the same time again;
freeze_ram and multi-card jobs send victims down the signal path, as in the daemon."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Tier
from gq.sim.cluster import parse_cluster
from gq.sim.freeze_model import COPY_RATE, OVERHEAD, FreezeModel
from gq.sim.replay import Preemption, replay
from gq.sim.traces import TraceJob
from tests.support.examples import examples

G = 1 << 30


def tj(job_id: str, submit: float, duration: float, gpus: int = 1, **kw) -> TraceJob:
    return TraceJob(job_id=job_id, submit_time=submit, duration=duration, gpus=gpus,
                    user="ann", **kw)


def test_a_frozen_low_job_frees_its_card_in_its_freeze_time_and_loses_nothing():
    trace = [tj("low", 0, 1000, tier=Tier.LOW, mem=40 * G),
             tj("high", 700, 200, tier=Tier.HIGH)]
    hosts = parse_cluster("1x1x80G")
    model = FreezeModel("freeze")
    took = OVERHEAD + 40 * G / COPY_RATE  # 5 s: 1 s and 40 GiB at 10 GiB/s
    r = replay(trace, hosts, "gq", preemption=Preemption(exempt=300, grace=60, freeze=model))
    done = {j.job_id: j for j in r.jobs}
    assert done["high"].start == pytest.approx(700 + took)  # not 760, the grace
    low = done["low"]
    # Frozen at 700 with 300 s left; thawed when the high job ends (its own thaw time too).
    assert low.end == pytest.approx(700 + took + 200 + took + 300)
    assert (low.preemptions, r.preemptions, r.freezes) == (0, 0, 1)
    assert low.held_seconds == pytest.approx(700 + took + took + 300)
    assert r.freeze_card_seconds == pytest.approx(took * 0.5)  # half a card (a 40G slice)
    assert r.preempted_for == {"high": 700}


def test_without_room_in_freeze_ram_or_on_several_cards_the_victim_is_signalled():
    hosts = parse_cluster("1x2x80G")
    small = FreezeModel("freeze", freeze_ram=10 * G)
    trace = [tj("low", 0, 1000, tier=Tier.LOW, mem=40 * G),
             tj("high", 700, 200, gpus=2, tier=Tier.HIGH)]
    r = replay(trace, hosts, "gq", preemption=Preemption(exempt=0, grace=60, freeze=small))
    assert (r.freezes, r.preemptions) == (0, 1)
    wide = [tj("low", 0, 1000, gpus=2, tier=Tier.LOW), tj("high", 700, 200, tier=Tier.HIGH)]
    r = replay(wide, hosts, "gq", preemption=Preemption(exempt=0, grace=60,
                                                        freeze=FreezeModel("freeze")))
    assert (r.freezes, r.preemptions) == (0, 1)


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 200), st.sampled_from([1, 1, 2]),
                          st.sampled_from(list(Tier)), st.sampled_from([None, 20, 40])),
                min_size=1, max_size=16))
def test_every_job_ends_and_skipping_idle_passes_changes_nothing_with_freezing(rows):
    trace = sorted((tj(f"{i:02d}", s, d, gpus=g, tier=t, mem=None if m is None or g > 1
                       else m * G) for i, (s, d, g, t, m) in enumerate(rows)),
                   key=lambda j: (j.submit_time, j.job_id))
    hosts = parse_cluster("2x2x80G", cpus_per_host=4)
    pre = Preemption(exempt=30, grace=7, freeze=FreezeModel("freeze", freeze_ram=60 * G))
    fast = replay(trace, hosts, "gq", preemption=pre)
    every = replay(trace, hosts, "gq", preemption=pre, skip_idle_passes=False)
    key = lambda r: sorted((j.job_id, round(j.start, 6), round(j.end, 6)) for j in r.jobs)  # noqa
    assert key(fast) == key(every)
    assert fast.unfinished == 0 and len(fast.jobs) == len(trace)
    durations = {j.job_id: j.duration for j in trace}
    for job in fast.jobs:  # a frozen job did all its work: it ran at least its duration
        assert job.held_seconds >= durations[job.job_id] - 1e-6


def test_gq_sim_freezes_when_asked_and_refuses_bad_modes(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name\n"
                     "0,1000,1,40G,ann,low,1,,low\n700,200,1,,bob,high,1,,high\n")
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gq", "sim", str(trace), "--cluster",
                               "1x1x80G", "--json", *args], capture_output=True, text=True)

    out = run("--preempt", "low", "--preempt-mode", "freeze", "--freeze-ram", "64G")
    assert out.returncode == 0, out.stderr
    m = json.loads(out.stdout)
    assert (m["freezes"], m["preemptions"], m["preempted_for"]) == (1, 0, 1)
    bad = run("--preempt", "low", "--preempt-mode", "bogus")
    assert (bad.returncode, bad.stderr) == (
        2, "gq: --preempt-mode 'bogus': expected freeze, signal or auto\n")
    alone = run("--preempt-mode", "freeze")
    assert alone.returncode == 2 and "needs --preempt" in alone.stderr
