"""`gq sim --time-model` and `--learn`: how replayed users declare time limits, and a replay
that plans jobs without one by their learned run times, with the daemon's predictor."""

from __future__ import annotations

import pytest

from gq.policy import Card, Host
from gq.sim.metrics import metrics
from gq.sim.replay import replay
from gq.sim.time_model import MODAL_VALUES, TimeModel, parse_time_model
from gq.sim.traces import TraceJob


def test_time_models_parse_and_refuse_with_one_line():
    assert parse_time_model("factor:2") == TimeModel("factor", 2.0)
    assert parse_time_model("none") == TimeModel("none")
    assert parse_time_model("MODAL") == TimeModel("modal")
    for bad in ("factor", "factor:x", "factor:-1", "oracle", "factor:nan"):
        with pytest.raises(ValueError, match="expected factor:F"):
            parse_time_model(bad)


def test_modal_limits_are_round_values_well_above_the_run_time():
    model = TimeModel("modal")
    for n, duration in enumerate((30.0, 700.0, 3000.0, 20000.0, 100000.0)):
        limit = model.limit(duration, f"job{n}")
        assert limit in MODAL_VALUES and duration * 1.5 <= limit
    assert model.limit(700.0, "a") == model.limit(700.0, "a")  # the same job, the same limit
    assert TimeModel("none").limit(700.0, "a") is None
    assert TimeModel("factor", 2.0).limit(700.0, "a") == 1400.0


def _lab_trace() -> list[TraceJob]:
    """One user's 4-card training runs (an hour each), and a stream of 1-card jobs of
    another, 5 minutes each; nobody declares --time."""
    jobs = [TraceJob(job_id=f"big{i}", submit_time=i * 3600.0, duration=3600.0, user="ann",
                     gpus=4, name="train") for i in range(6)]
    jobs += [TraceJob(job_id=f"small{i}", submit_time=30.0 + i * 200.0, duration=300.0,
                      user="bob", gpus=1, name="eval") for i in range(100)]
    return sorted(jobs, key=lambda j: j.submit_time)


def test_learned_run_times_bring_a_replay_without_limits_near_the_oracle():
    """Without limits every job is assumed to run a day: the 4-card runs wait for hours
    behind 5-minute jobs that, for all gq knows, would hold a card for a day. With learned
    run times the replay plans as an oracle that knows every run time does."""
    hosts = (Host(64, cards=tuple(Card(i, 80 << 30) for i in range(4)), name="h0"),)
    trace = _lab_trace()
    jct, big_wait = {}, {}
    for label, model, learn in (("oracle", TimeModel("factor", 1.0), False),
                                ("none", TimeModel("none"), False),
                                ("learned", TimeModel("none"), True)):
        result = replay(trace, hosts, "gq", time_model=model, learn=learn)
        assert len(result.jobs) == len(trace)
        jct[label] = metrics(result)["avg_jct_s"]
        big_wait[label] = max(j.start - j.submit for j in result.jobs
                              if j.job_id.startswith("big"))
    assert jct["learned"] <= 1.25 * jct["oracle"]
    assert big_wait["learned"] <= big_wait["oracle"] < big_wait["none"] / 1.5


def test_a_kept_queue_orders_learned_jobs_as_a_fresh_sort_would(monkeypatch):
    # Without limits, a waiting job's score counts its predicted run time, which changes as
    # runs of its fingerprint complete: the kept queue places such jobs again (rekey), so the
    # replay starts what a pass over a freshly sorted queue starts.
    from dataclasses import replace as with_

    import gq.sim.replay as sim
    from gq.policy import PendingQueue
    from gq.policy.decide import decide
    from gq.sim.cluster import parse_cluster

    def fresh(inp, preempt=None):
        return decide(with_(inp, pending=PendingQueue(list(inp.pending))), explain=False,
                      preempt=preempt)

    monkeypatch.setitem(sim.POLICIES, "fresh", fresh)
    trace = [TraceJob(job_id=f"{i:03d}", submit_time=float(i * 37 % 900),
                      duration=60.0 + (i * 7919) % 1800, gpus=1 + i % 2,
                      user=["ann", "bob", "cy"][i % 3], name=["a", "b", "c", "d"][i % 4])
             for i in range(200)]
    trace.sort(key=lambda j: (j.submit_time, j.job_id))
    hosts = parse_cluster("1x4x80G")
    model = TimeModel("none")
    key = lambda r: sorted((j.job_id, j.start, j.host) for j in r.jobs)  # noqa: E731
    kept = replay(trace, hosts, "gq", time_model=model, learn=True)
    assert key(kept) == key(replay(trace, hosts, "fresh", time_model=model, learn=True))
