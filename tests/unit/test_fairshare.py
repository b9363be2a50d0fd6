"""Fair share, age and per-user limits, from literals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gq.model import DepKind, Job, JobState, Reason, Tier
from gq.policy import (
    Card, FairShareConfig, Host, Limits, Outcome, RunInterval, SchedulerInput, UserLimits,
    decayed_usage, schedule,
)
from gq.policy.fairshare import fairshare_factors

DAY = 86400.0


def job(id, user="ann", tier=Tier.NORMAL, at=0.0, gpus=1, deps=None, started=None, gpu_ids=()):
    return Job(id=id, user=user, command=["x"], cwd="/", priority=tier, submitted_at=at,
               gpus=gpus, deps=deps or {}, started_at=started, gpu_ids=list(gpu_ids),
               state=JobState.RUNNING if started is not None else JobState.PENDING)


def one_card(n=1):
    return Host(cpus=64, cards=tuple(Card(i, 80 << 30) for i in range(n)))


def order(pending, **kw):
    """The order in which jobs would start: one card, so each pass starts the first."""
    plan = schedule(SchedulerInput(one_card(), pending, [], {}, kw.pop("now", 10 * DAY), **kw))
    return plan.starts[0].job_id, plan


def test_usage_halves_every_half_life():
    iv = [RunInterval("ann", 1.0, 0.0, 3600.0)]
    fresh = decayed_usage(iv, 3600.0, 7 * DAY)["ann"]
    assert fresh == pytest.approx(3600, rel=1e-2)  # the hour itself decays a little
    assert decayed_usage(iv, 3600.0 + 7 * DAY, 7 * DAY)["ann"] == pytest.approx(fresh / 2)


def test_running_intervals_charge_until_now_and_slices_charge_their_share():
    usage = decayed_usage([RunInterval("ann", 0.25, 0.0, None)], 100.0, 1e12)
    assert usage["ann"] == pytest.approx(25.0)


def test_factors():
    f = fairshare_factors({"ann": 30.0, "bob": 10.0})
    assert "cat" not in f  # used nothing: the policy takes 1
    assert f["ann"] == pytest.approx(2 ** -(0.75 * 2)) and f["ann"] < f["bob"] < 1


def test_the_lighter_user_goes_first_within_a_tier():
    usage = {"ann": 100 * 3600.0}
    first, plan = order([job(1, "ann", at=0), job(2, "bob", at=5)], usage=usage, now=60)
    assert first == 2
    assert plan.scores[2].fairshare == 1.0 and plan.scores[1].fairshare < 1.0
    assert plan.scores[1].usage == usage["ann"]


def test_tiers_still_come_first():
    first, _ = order([job(1, "bob", Tier.LOW), job(2, "ann", Tier.NORMAL)],
                     usage={"ann": 1e9})
    assert first == 2


def test_age_breaks_ties_and_is_capped():
    cfg = FairShareConfig(age_cap=2 * DAY)
    first, plan = order([job(2, "bob", at=9 * DAY), job(1, "ann", at=0)], fairshare=cfg)
    assert first == 1
    assert plan.scores[1].age == 1.0  # capped: 10 days of waiting count as two
    assert plan.scores[2].age == pytest.approx(0.5)


def test_age_does_not_grow_while_waiting_on_a_dependency():
    deps = {DepKind.AFTER: [7]}
    waited = job(1, "ann", at=0, deps=deps)
    fresh = job(2, "bob", at=9.5 * DAY)
    outcomes = {7: Outcome(JobState.COMPLETED, 0, ended_at=9.9 * DAY)}
    plan = schedule(SchedulerInput(one_card(), [waited, fresh], [], outcomes, 10 * DAY))
    assert plan.scores[1].age < plan.scores[2].age
    assert plan.starts[0].job_id == 2


def test_max_running_gpus():
    limits = Limits(default=UserLimits(max_running_gpus=2))
    running = [job(9, "ann", started=0, gpu_ids=[0])]
    pending = [job(1, "ann", gpus=2), job(2, "ann"), job(3, "bob", gpus=2)]
    plan = schedule(SchedulerInput(one_card(8), pending, running, {}, 0, limits=limits))
    assert plan.reasons[1] == Reason.QUOTA_LIMIT and "at most 2 GPUs" in plan.shortfalls[1]
    assert sorted(s.job_id for s in plan.starts) == [2, 3]


def test_max_pending_jobs_considered():
    limits = Limits(users={"ann": UserLimits(max_pending_jobs=1)})
    pending = [job(1, "ann", at=1), job(2, "ann", at=2), job(3, "bob", at=3)]
    plan = schedule(SchedulerInput(one_card(8), pending, [], {}, 0, limits=limits))
    assert plan.reasons == {2: Reason.QUOTA_LIMIT}


def test_high_tier_share():
    pending = [job(i, "ann", Tier.HIGH) for i in range(1, 4)] + [job(4, "ann", Tier.NORMAL)]
    plan = schedule(SchedulerInput(one_card(10), pending, [], {}, 0))  # 20% of 10 cards
    assert sorted(s.job_id for s in plan.starts) == [1, 2, 4]
    assert plan.reasons[3] == Reason.QUOTA_LIMIT and "high-tier" in plan.shortfalls[3]


@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 1), st.floats(0, 30 * DAY),
                          st.floats(0, 30 * DAY)), max_size=20),
       st.floats(1, 60 * DAY))
def test_usage_is_never_negative_nor_more_than_the_raw_card_seconds(rows, now):
    ivs = [RunInterval(u, w, min(a, b), max(a, b)) for u, w, a, b in rows]
    usage = decayed_usage(ivs, now, 7 * DAY)
    for user, value in usage.items():
        raw = sum(iv.weight * max(0.0, min(iv.end, now) - iv.start) for iv in ivs
                  if iv.user == user)
        assert -1e-6 <= value <= raw + 1e-6 and not math.isnan(value)
