"""Pools, admin reservations, elastic GPU ranges, interactive jobs and accounts, from literals:
each rule with the reason a waiting job is given."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gq.model import Job, JobState, Reason, Tier
from gq.policy import Card, Host, Limits, SchedulerInput, UserLimits, schedule
from gq.policy.accounts import AccountLimits, Accounts, dominant_weight, share_factors
from gq.policy.fairshare import fairshare_factors
from gq.policy.pools import Pools
from gq.policy.windows import Window

H, G = 3600.0, 1 << 30
NOW = 1000 * H


def job(id, user="ann", gpus=1, mem=None, limit=None, tier=Tier.NORMAL, at=0.0, pool=None,
        gpus_max=None, interactive=False, cpus=1, started=None, gpu_ids=()):
    return Job(id=id, user=user, command=["x"], cwd="/", priority=tier, gpus=gpus, mem=mem,
               cpus=cpus, time_limit=limit, submitted_at=at, pool=pool, gpus_max=gpus_max,
               interactive=interactive, gpu_ids=list(gpu_ids), started_at=started,
               state=JobState.RUNNING if started is not None else JobState.PENDING)


def host(n=4, cpus=64):
    return Host(cpus=cpus, cards=tuple(Card(i, 80 * G) for i in range(n)))


def plan_of(pending, running=(), **kw):
    return schedule(SchedulerInput(kw.pop("host", host()), list(pending), list(running), {},
                                   kw.pop("now", NOW), **kw))


def starts(plan):
    return {s.job_id: s.gpu_ids for s in plan.starts}


POOLS = Pools({"interactive": frozenset({0}), "train": frozenset({1, 2}),
               "batch": frozenset({3})}, default="batch", interactive=frozenset({"interactive"}))


# ---- pools ------------------------------------------------------------------------------------

def test_a_job_runs_only_on_the_cards_of_its_pool_and_without_one_on_the_default_pool():
    plan = plan_of([job(1, pool="train", gpus=2), job(2), job(3, gpus=0)], pools=POOLS)
    assert starts(plan) == {1: (1, 2), 2: (3,), 3: ()}  # a CPU-only job is in no pool


def test_a_full_pool_makes_its_jobs_wait_though_other_cards_are_free():
    busy = job(9, pool="batch", started=NOW - H, gpu_ids=[3], limit=2 * H)
    plan = plan_of([job(1)], [busy], pools=POOLS)
    assert plan.starts == [] and plan.reasons[1] == Reason.RESOURCES
    assert "free card" in plan.shortfalls[1]
    assert plan.forecasts[1].gpu_ids == (3,) and plan.forecasts[1].start == NOW + H


def test_a_pool_that_is_gone_from_the_configuration_has_no_cards():
    plan = plan_of([job(1, pool="old")], pools=POOLS)
    assert plan.reasons[1] == Reason.RESOURCES and "pool old" in plan.shortfalls[1]
    assert 1 not in plan.forecasts


def test_interactive_jobs_go_ahead_of_every_tier_on_leftover_memory():
    # Card 0 has 30G left; an urgent batch job and an interactive one both want 20G of it.
    notebook = job(5, "cy", mem=50 * G, started=NOW - 60, gpu_ids=[0], pool="interactive",
                   limit=H)
    urgent = job(1, "bob", mem=20 * G, tier=Tier.HIGH, at=0, pool="interactive")
    quick = job(2, "ann", mem=20 * G, at=100, pool="interactive", interactive=True, limit=H)
    plan = plan_of([urgent, quick], [notebook], pools=POOLS)
    assert starts(plan) == {2: (0,)}
    assert plan.reasons[1] == Reason.RESOURCES


def test_an_interactive_job_is_not_held_back_by_a_reservation_for_batch_work():
    # Job 1 (normal) waits for all of card 0 from in an hour; an interactive job that would
    # run past that still starts: it is read first, before any reservation is made.
    running = job(9, mem=40 * G, started=NOW - H, gpu_ids=[0], limit=2 * H)
    big = job(1, at=0, pool="interactive", limit=H)
    notebook = job(2, mem=10 * G, at=50, pool="interactive", interactive=True, limit=2 * H)
    plan = plan_of([big, notebook], [running], pools=POOLS)
    assert starts(plan) == {2: (0,)}
    batch_only = plan_of([big, job(3, mem=10 * G, at=50, pool="interactive", limit=2 * H)],
                         [running], pools=POOLS)
    assert batch_only.reasons[3] == Reason.PRIORITY  # the same job as batch work would wait


# ---- admin reservations (windows) ---------------------------------------------------------

def window(cards=(0, 1), start=NOW + 2 * H, hours=8, users=("ann",), id=1):
    return Window(id, frozenset(cards), start, start + hours * H, frozenset(users),
                  holder="user ann")


def test_a_job_that_would_run_into_a_window_does_not_start_on_its_cards():
    plan = plan_of([job(1, "bob", gpus=2, limit=3 * H)], host=host(2), windows=(window(),))
    assert plan.starts == [] and plan.reasons[1] == Reason.RESOURCES
    assert "reserved by an admin for user ann (reservation 1)" in plan.shortfalls[1]
    # It is expected to start when the window ends, not before.
    assert plan.forecasts[1].start == NOW + 10 * H


def test_a_job_that_ends_before_the_window_begins_starts_there():
    plan = plan_of([job(1, "bob", gpus=2, limit=2 * H)], host=host(2), windows=(window(),))
    assert starts(plan) == {1: (0, 1)}


def test_a_job_without_a_time_limit_is_assumed_to_run_into_it():
    plan = plan_of([job(1, "bob")], host=host(2), windows=(window(),))  # a day assumed
    assert plan.starts == [] and plan.forecasts[1].start == NOW + 10 * H


def test_other_cards_are_used_when_the_window_keeps_some():
    plan = plan_of([job(1, "bob", limit=5 * H)], host=host(4), windows=(window(),))
    assert starts(plan) == {1: (2,)}


def test_the_holder_uses_the_cards_before_and_during_the_window():
    plan = plan_of([job(1, "ann", gpus=2)], host=host(2), windows=(window(),))
    assert starts(plan) == {1: (0, 1)}
    during = plan_of([job(1, "ann", gpus=2), job(2, "bob", limit=60.0)], host=host(2),
                     windows=(window(start=NOW - H),))
    assert starts(during) == {1: (0, 1)}
    assert during.reasons[2] == Reason.RESOURCES


def test_no_one_else_starts_during_an_open_window_even_briefly():
    plan = plan_of([job(2, "bob", limit=60.0)], host=host(2), windows=(window(start=NOW - H),))
    assert plan.starts == [] and plan.forecasts[2].start == NOW + 7 * H


def test_a_group_window_lets_every_member_in_and_a_past_one_nobody_out():
    w = window(users=("ann", "bob"), start=NOW - H)
    plan = plan_of([job(1, "bob"), job(2, "cy", at=1)], host=host(2), windows=(w,))
    assert starts(plan) == {1: (0,)} and plan.reasons[2] == Reason.RESOURCES
    gone = window(start=NOW - 10 * H)  # ended 2 h ago
    assert starts(plan_of([job(2, "cy")], host=host(2), windows=(gone,))) == {2: (0,)}


def test_backfill_does_not_cross_a_window_and_reservations_avoid_it():
    # Card 2 busy for 1 h; a 3-card job waits for it; a reservation must not be placed on the
    # window's cards during the window: the 3-card job (bob's) is expected after it ends.
    running = job(9, "cy", started=NOW - H, gpu_ids=[2], limit=2 * H)
    big = job(1, "bob", gpus=3, limit=H, at=0)
    plan = plan_of([big], [running], host=host(3), windows=(window(start=NOW + 1.5 * H),))
    assert plan.forecasts[1].start == NOW + 9.5 * H
    # Fitting before it: a 3-card job of an hour ends in time, once card 2 is free at +1h.
    early = plan_of([big], [running], host=host(3), windows=(window(start=NOW + 2 * H),))
    assert early.forecasts[1].start == NOW + H


# ---- elastic GPU ranges -----------------------------------------------------------------

def test_an_elastic_job_takes_as_many_cards_as_are_free_within_its_range():
    busy = job(9, started=NOW - 60, gpu_ids=[0], limit=H)
    assert starts(plan_of([job(1, gpus=2, gpus_max=4)], [busy])) == {1: (1, 2, 3)}
    assert starts(plan_of([job(1, gpus=2, gpus_max=3)])) == {1: (0, 1, 2)}


def test_an_elastic_job_waits_for_its_minimum_and_is_reserved_by_it():
    busy = [job(9, started=NOW - 60, gpu_ids=[0, 1, 2], gpus=3, limit=H)]
    plan = plan_of([job(1, gpus=2, gpus_max=4, limit=H)], busy)
    assert plan.reasons[1] == Reason.RESOURCES and "needs 2 free cards" in plan.shortfalls[1]
    assert len(plan.forecasts[1].gpu_ids) == 2 and plan.forecasts[1].start == NOW + H - 60


def test_an_elastic_job_takes_fewer_cards_rather_than_delay_a_reservation():
    # Cards 0 and 1 are busy for an hour, card 2 holds a 10G slice for 10 h. Job 1 waits for 3
    # whole cards: reserved from +1h on cards 0, 1 and 3. Job 2 (10G slices, 2 h) fits on cards
    # 2 and 3 now, but card 3 is reserved: with a range of 1-3 it takes card 2 alone.
    running = [job(9, gpus=2, started=NOW - H, gpu_ids=[0, 1], limit=2 * H),
               job(8, mem=10 * G, started=NOW - H, gpu_ids=[2], limit=11 * H)]
    big = job(1, gpus=3, limit=H, at=0)
    plan = plan_of([big, job(2, gpus=1, gpus_max=3, mem=10 * G, limit=2 * H, at=10)], running)
    assert plan.forecasts[1].gpu_ids == (0, 1, 3)
    assert starts(plan) == {2: (2,)}
    plan = plan_of([big, job(2, gpus=2, gpus_max=3, mem=10 * G, limit=2 * H, at=10)], running)
    assert plan.starts == [] and plan.reasons[2] == Reason.PRIORITY


def test_an_elastic_job_stays_within_its_users_limits():
    limits = Limits(default=UserLimits(max_running_gpus=3, high_share=None))
    busy = job(9, started=NOW - 60, gpu_ids=[0], limit=H)
    plan = plan_of([job(1, gpus=1, gpus_max=4)], [busy], host=host(8), limits=limits)
    assert len(starts(plan)[1]) == 2  # ann holds 1 already: 2 more at most


def test_a_running_elastic_job_counts_the_cards_it_got():
    limits = Limits(default=UserLimits(max_running_gpus=4, high_share=None))
    elastic = job(9, gpus=2, gpus_max=4, started=NOW - 60, gpu_ids=[0, 1, 2], limit=H)
    plan = plan_of([job(1, gpus=2)], [elastic], host=host(8), limits=limits)
    assert plan.reasons[1] == Reason.QUOTA_LIMIT


# ---- accounts -----------------------------------------------------------------------------

def test_without_accounts_the_factors_are_the_per_user_ones_exactly():
    @given(st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 1e9), min_size=1))
    def check(usage):
        f = share_factors(usage, Accounts())
        assert f.users == fairshare_factors(usage)
        assert f.of("zed") == 1.0

    check()


TEAMS = Accounts(members={"ann": "vision", "bob": "vision", "cy": "nlp"})


def test_a_light_user_of_a_heavy_account_ranks_below_the_user_of_a_light_one():
    # Usage parts: ann 0, bob 0.6 (vision 0.6), cy 0.4 (nlp). Vision's users are due 0.25 each.
    usage = {"ann": 1e-9, "bob": 60.0, "cy": 40.0}
    f = share_factors(usage, TEAMS)
    assert f.of("ann") == pytest.approx(2 ** -(0.3 / 0.25), rel=1e-6)  # 0 + (0.6 - 0) / 2
    assert f.of("bob") == pytest.approx(2 ** -(0.6 / 0.25))
    assert f.of("cy") == pytest.approx(2 ** -(0.4 / 0.5))
    assert f.of("bob") < f.of("ann") < f.of("cy")
    assert f.of("dan") == 1.0  # in no account, no usage
    assert share_factors({"bob": 60.0, "cy": 40.0}, TEAMS).of("ann") == pytest.approx(
        2 ** -(0.6 / 0.5))  # a newcomer to vision: its account's factor
    # ...and so in the queue: cy first, then ann, then bob.
    pending = [job(1, "bob", at=0), job(2, "ann", at=1), job(3, "cy", at=2)]
    plan = plan_of(pending, host=host(1), usage=usage, accounts=TEAMS, now=60.0)
    assert starts(plan) == {3: (0,)}
    assert plan.scores[2].total > plan.scores[1].total
    per_user = plan_of(pending, host=host(1), usage=usage, now=60.0)
    assert per_user.scores[2].fairshare > per_user.scores[3].fairshare  # ann alone: lightest


def test_an_accounts_share_weighs_its_fair_part():
    heavy = Accounts(members=TEAMS.members, shares={"vision": 3.0})
    usage = {"bob": 60.0, "cy": 40.0}
    assert share_factors(usage, heavy).of("bob") == pytest.approx(2 ** -(0.6 / 0.75))


def test_the_dominant_share_counts_cores_and_card_memory():
    h = host(4, cpus=64)
    slice_many_cores = job(1, mem=20 * G, cpus=32, gpu_ids=[0])
    assert dominant_weight(slice_many_cores, h) == pytest.approx(0.5 * 4)  # half the cores
    assert dominant_weight(job(2, mem=20 * G, gpu_ids=[0]), h) == pytest.approx(0.25)
    assert dominant_weight(job(3, gpus=2, gpu_ids=[0, 1]), h) == pytest.approx(2.0)
    assert dominant_weight(job(4, gpus=0, cpus=16), h) == pytest.approx(1.0)


def test_account_limits_hold_its_jobs_back_with_the_reason():
    capped = Accounts(members=TEAMS.members, limits={"vision": AccountLimits(max_running_gpus=2)})
    running = [job(9, "ann", started=NOW - 60, gpu_ids=[0], limit=H)]
    plan = plan_of([job(1, "bob", gpus=2), job(2, "cy", at=1)], running, accounts=capped)
    assert plan.reasons[1] == Reason.QUOTA_LIMIT
    assert plan.shortfalls[1] == "account vision may hold at most 2 GPUs at once"
    assert starts(plan) == {2: (1,)}


def test_an_account_cannot_take_the_host_with_small_jobs():
    # Each job: a 10G slice and 16 of 64 cores: a quarter of the host by its cores.
    shared = Accounts(members=TEAMS.members, limits={"vision": AccountLimits(max_share=0.5)})
    small = [job(i, "ann", mem=10 * G, cpus=16, at=i) for i in range(1, 5)]
    plan = plan_of(small, accounts=shared)
    assert len(plan.starts) == 2 and plan.reasons[3] == Reason.QUOTA_LIMIT
    assert "dominant share" in plan.shortfalls[3]


def test_preemption_frees_cards_only_in_the_waiting_jobs_pool():
    from gq.policy.preemption import plan_preemptions
    from gq.policy.schedule import allowed_cards

    two = Pools({"train": frozenset({0}), "batch": frozenset({1})}, default="batch")
    low = job(9, "bob", tier=Tier.LOW, started=NOW - H, gpu_ids=[1], limit=10 * H)
    low.preemptible = True
    urgent = job(1, "ann", tier=Tier.HIGH, pool="train")
    busy = job(8, "cy", started=NOW - H, gpu_ids=[0], limit=10 * H)
    inp = SchedulerInput(host(2), [urgent], [low, busy], {}, NOW, pools=two)
    plan = schedule(inp)
    assert plan.reasons[1] == Reason.RESOURCES
    allowed = {1: allowed_cards(inp, urgent, inp.host)}
    decided = plan_preemptions(inp.host, [urgent], [low, busy], NOW, allowed=allowed)
    assert decided.preemptions == []  # the low job is on a batch card: no use to stop it
    assert plan_preemptions(inp.host, [urgent], [low, busy], NOW).preemptions  # without pools
