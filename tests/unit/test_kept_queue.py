"""The daemon's kept queue (gq/daemon/kept_queue.py): it follows the store's changes, sets aside
held jobs and jobs whose dependencies have not ended, and a quick pass over it decides what the
old way decided, a full pass over every waiting job listed afresh."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gq.daemon.kept_queue import KeptQueue
from gq.model import DepKind, ENDED_STATES, Job, JobState, Reason, Tier
from gq.policy import Card, Host, Outcome, PreemptRule, SchedulerInput, decide
from gq.store import Store
from tests.support.examples import examples

G, NOW = 1 << 30, 10_000.0


def new_job(user="ann", gpus=1, deps=None, tier=Tier.NORMAL, at=0.0, limit=None) -> Job:
    return Job(id=0, user=user, command=["python", "x.py"], cwd="/tmp", gpus=gpus,
               deps=deps or {}, priority=tier, submitted_at=at, time_limit=limit,
               preemptible=tier is Tier.LOW)


def kept_ids(kept: KeptQueue) -> set[int]:
    return set(kept.queue.jobs)


def start(store: Store, job_id: int, cards: list[int], at: float = NOW - 3600) -> None:
    store.transition(job_id, JobState.RUNNING, at, started_at=at, gpu_ids=cards, holding=1)


def end(store: Store, job_id: int, state: JobState = JobState.COMPLETED) -> None:
    store.transition(job_id, state, NOW - 10, ended_at=NOW - 10, holding=0,
                     exit_code=0 if state is JobState.COMPLETED else 1)


def test_held_jobs_and_jobs_waiting_on_dependencies_are_set_aside(tmp_path):
    store = Store(tmp_path / "gq.db")
    kept = KeptQueue(lambda job: None)
    a = store.insert_job(new_job(), 1.0)
    b = store.insert_job(new_job(deps={DepKind.AFTER: [a]}), 2.0)
    c = store.insert_job(new_job(deps={DepKind.AFTEROK: [a]}), 3.0)
    h = store.insert_job(new_job(), 4.0)
    store.transition(h, JobState.HELD, 5.0, reason=Reason.HELD)
    assert kept.sync(store, {}) == {b: Reason.DEPENDENCY, c: Reason.DEPENDENCY}
    assert kept_ids(kept) == {a}
    start(store, a, [0])
    assert kept.sync(store, {}) == {} and kept_ids(kept) == set()
    end(store, a, JobState.FAILED)  # b runs after it whatever; c never will
    assert kept.sync(store, {}) == {c: Reason.DEPENDENCY_NEVER_SATISFIED}
    assert kept_ids(kept) == {b} and kept.outcomes[a].state is JobState.FAILED
    store.transition(a, JobState.PENDING, NOW)  # requeued: both wait for it again
    assert kept.sync(store, {}) == {b: Reason.DEPENDENCY, c: Reason.DEPENDENCY}
    assert kept_ids(kept) == {a} and a not in kept.outcomes
    store.transition(h, JobState.PENDING, NOW)  # released
    kept.sync(store, {})
    assert kept_ids(kept) == {a, h}


def test_a_victim_kept_off_a_card_is_given_a_copy_that_avoids_it(tmp_path):
    store = Store(tmp_path / "gq.db")
    kept = KeptQueue(lambda job: None)
    v = store.insert_job(new_job(), 1.0)
    kept.sync(store, {})
    kept.sync(store, {v: (99, frozenset({1}))})
    assert kept.queue.jobs[v].avoid_gpus == frozenset({1})
    assert store.waiting_job(v).avoid_gpus != frozenset({1})  # the store's own is untouched
    kept.sync(store, {})  # its killer ended
    assert not kept.queue.jobs[v].avoid_gpus


def test_predictions_are_taken_on_arrival_and_again_only_when_asked(tmp_path):
    store = Store(tmp_path / "gq.db")
    book = {"x": 600.0}
    kept = KeptQueue(lambda job: book["x"])
    j = store.insert_job(new_job(), 1.0)
    t = store.insert_job(new_job(limit=60.0), 1.0)  # declares --time: predicted all the same
    kept.sync(store, {})
    book["x"] = 30.0  # a run completed: held until usage is recalculated
    kept.sync(store, {})
    assert kept.predicted == {j: 600.0, t: 600.0}
    kept.repredict()
    assert kept.predicted == {j: 30.0, t: 30.0}


# ---- the kept queue, against the whole queue listed afresh ---------------------------------

steps = st.lists(st.tuples(
    st.sampled_from(["submit", "submit", "after", "after", "hold", "release", "start", "start",
                     "end", "fail", "cancel", "requeue"]),
    st.integers(0, 10_000), st.sampled_from(list(Tier)), st.sampled_from(["ann", "bob"]),
    st.integers(0, 2), st.sampled_from([None, 600.0, 7200.0]),
), min_size=1, max_size=30)


def host() -> Host:
    return Host(cpus=8, cards=tuple(Card(i, 80 * G) for i in range(3)))


def plans(store: Store, kept: KeptQueue, usage: dict) -> tuple:
    """The kept queue's quick pass, and a full pass over every waiting job (held ones and
    those waiting on dependencies included, with the outcomes of every dependency)."""
    running = store.holding_jobs()
    waiting = store.queue()
    deps = {i for j in waiting for ids in j.deps.values() for i in ids}
    outcomes = {j.id: Outcome(j.state, j.exit_code, j.ended_at)
                for j in store.light_jobs(list(deps)).values() if j.state in ENDED_STATES}
    common = dict(now=NOW, usage=usage, score_time=NOW - 30)
    quick = decide(SchedulerInput(host(), kept.queue, copy.deepcopy(running), kept.outcomes,
                                  predicted=kept.predicted, **common),
                   explain=False, preempt=PreemptRule(600.0))
    full = decide(SchedulerInput(host(), copy.deepcopy(waiting), copy.deepcopy(running),
                                 outcomes, **common), preempt=PreemptRule(600.0))
    return quick, full


def summary(plan) -> tuple:
    return (sorted(plan.starts, key=lambda s: s.job_id), plan.forecasts,
            [(p.job_id, sorted(v.job_id for v in p.victims)) for p in plan.preemptions])


@settings(max_examples=examples(80), deadline=None)
@given(steps)
def test_a_quick_pass_on_the_kept_queue_decides_as_a_full_pass_on_the_whole_queue(ops):
    with tempfile.TemporaryDirectory() as home:
        store = Store(Path(home) / "gq.db")
        kept = KeptQueue(lambda job: None)
        usage = {"ann": 1000.0}
        for op, n, tier, user, gpus, limit in ops:
            waiting = sorted(j.id for j in store.queue())
            holding = sorted(j.id for j in store.holding_jobs())
            pick = lambda ids: ids[n % len(ids)] if ids else None  # noqa: E731
            if op == "submit":
                store.insert_job(new_job(user, gpus, tier=tier, at=float(n), limit=limit),
                                 float(n))
            elif op == "after" and (dep := pick(waiting + holding)) is not None:
                store.insert_job(new_job(user, gpus, deps={DepKind.AFTEROK: [dep]}, tier=tier,
                                         at=float(n), limit=limit), float(n))
            elif op == "hold" and (j := pick(waiting)) is not None:
                if store.waiting_job(j).state is JobState.PENDING:
                    store.transition(j, JobState.HELD, NOW, reason=Reason.HELD)
            elif op == "release" and (j := pick(waiting)) is not None:
                if store.waiting_job(j).state is JobState.HELD:
                    store.transition(j, JobState.PENDING, NOW)
            elif op == "start":
                quick, _full = plans(store, kept, usage)
                for s in quick.starts[:1]:
                    start(store, s.job_id, list(s.gpu_ids))
            elif op in ("end", "fail") and (j := pick(holding)) is not None:
                end(store, j, JobState.COMPLETED if op == "end" else JobState.FAILED)
            elif op == "cancel" and (j := pick(waiting)) is not None:
                store.end_waiting([store.waiting_job(j)], JobState.CANCELLED, NOW, "cancelled")
            elif op == "requeue":
                ended = [j.id for j in store.jobs(states=ENDED_STATES, light=True)]
                if (j := pick(ended)) is not None:
                    store.transition(j, JobState.PENDING, NOW)
            if n % 7 == 0:
                usage = {"ann": float(n), "bob": 500.0}  # recalculated: a new dict
            kept.sync(store, {})
            quick, full = plans(store, kept, usage)
            assert summary(quick) == summary(full)
            # What the kept queue holds: the waiting jobs that could start, nothing else.
            could = {j.id for j in store.queue() if j.state is JobState.PENDING and all(
                d in kept.outcomes and (kind is not DepKind.AFTEROK
                                        or kept.outcomes[d].state is JobState.COMPLETED)
                for kind, ids in j.deps.items() for d in ids)}
            assert kept_ids(kept) == could
