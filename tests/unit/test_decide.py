"""decide(): the one entry point. The daemon's way of applying it (a fresh list, every reason)
and the replay's (a queue kept between passes, reading only as far as a start is possible)
give the same starts, held-back array elements and preemption victims for the same input."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import ArrayPart, Job, JobState, Reason, Tier
from gq.policy import Card, Host, PendingQueue, PreemptRule, SchedulerInput, decide
from tests.support.examples import examples

G, NOW, SCORED = 1 << 30, 10_000.0, 9_900.0


@st.composite
def cases(draw):
    n_cards = draw(st.integers(1, 6))
    host = Host(cpus=32, cards=tuple(Card(i, 80 * G) for i in range(n_cards)))
    running, job_id, free = [], 0, list(range(n_cards))
    for _ in range(draw(st.integers(0, n_cards))):
        if not free:
            break
        job_id += 1
        take = free[: draw(st.integers(1, len(free)))]
        free = free[len(take):]
        tier = draw(st.sampled_from(list(Tier)))
        running.append(Job(
            id=job_id, user=draw(st.sampled_from("abc")), command=["x"], cwd="/",
            priority=tier, gpus=len(take), gpu_ids=take, state=JobState.RUNNING,
            started_at=NOW - draw(st.sampled_from([60.0, 1200.0, 7200.0])),
            preemptible=tier is Tier.LOW or draw(st.booleans()),
            time_limit=draw(st.sampled_from([None, 3600.0, 86400.0])), cpus=2))
    pending = []
    for _ in range(draw(st.integers(1, 14))):
        job_id += 1
        array = None
        if draw(st.integers(0, 3)) == 0:  # an element of array 1000 or 2000, %1 or %2
            aid = draw(st.sampled_from([1000, 2000]))
            array = ArrayPart(aid, job_id, 20, 1 if aid == 1000 else 2)
        pending.append(Job(
            id=job_id, user=draw(st.sampled_from("abc")), command=["x"], cwd="/",
            priority=draw(st.sampled_from(list(Tier))), gpus=draw(st.integers(0, n_cards)),
            mem=draw(st.sampled_from([None, None, 20 * G, 50 * G])),
            cpus=draw(st.integers(1, 8)), submitted_at=draw(st.floats(0, NOW - 1)),
            time_limit=draw(st.sampled_from([None, 600.0, 3600.0])), array=array,
            state=JobState.HELD if draw(st.integers(0, 9)) == 0 else JobState.PENDING))
    for r in running:  # elements of the arrays already running
        if draw(st.integers(0, 3)) == 0:
            r.array = ArrayPart(draw(st.sampled_from([1000, 2000])), r.id, 20,
                                1 if r.id % 2 else 2)
    for job in pending:  # interactive jobs: a lane ahead of every tier, whatever their tier
        if draw(st.integers(0, 5)) == 0:
            job.interactive, job.time_limit = True, 600.0
    usage = {u: draw(st.floats(0, 1e5)) for u in "abc"}
    return (host, running, pending, usage, draw(st.randoms()),
            draw(st.sampled_from([8, 8, 0, 1, 2])))


def explained(host, running, pending, usage, reservations=8) -> tuple:
    """A fresh list, every job explained (the daemon's explaining pass)."""
    inp = SchedulerInput(host, copy.deepcopy(pending), copy.deepcopy(running), now=NOW,
                         usage=usage, score_time=SCORED, max_reservations=reservations)
    return summary(decide(inp, preempt=PreemptRule(exempt=600.0)))


def kept_and_quick(host, running, pending, usage, rng, reservations=8) -> tuple:
    """One queue kept across passes, built in another order, with jobs that came and went, and
    read only as far as a start is possible (the replay, and the daemon between its explaining
    passes)."""
    queue = PendingQueue()
    jobs = copy.deepcopy(pending)
    rng.shuffle(jobs)
    gone = [Job(id=90_000 + i, user="c", command=["x"], cwd="/", submitted_at=1.0 * i)
            for i in range(3)]
    for job in [*jobs[: len(jobs) // 2], *gone, *jobs[len(jobs) // 2:]]:
        queue.add(job)
    held = copy.deepcopy(running)
    decide(SchedulerInput(host, queue, held, now=NOW - 50, usage=usage, score_time=SCORED,
                          max_reservations=reservations),
           explain=False)  # an earlier pass, which sorts the kept queue
    for job in gone:
        queue.remove(job.id)
    inp = SchedulerInput(host, queue, held, now=NOW, usage=usage, score_time=SCORED,
                         max_reservations=reservations)
    return summary(decide(inp, explain=False, preempt=PreemptRule(exempt=600.0)))


def summary(plan) -> tuple:
    return (sorted(plan.starts, key=lambda s: s.job_id), plan.held_back, plan.forecasts,
            [(p.job_id, sorted(v.job_id for v in p.victims)) for p in plan.preemptions])


@settings(max_examples=examples(400), deadline=None)
@given(cases())
def test_an_explaining_pass_and_a_quick_pass_on_a_kept_queue_decide_alike(case):
    host, running, pending, usage, rng, reservations = case
    assert explained(host, running, pending, usage, reservations) == kept_and_quick(
        host, running, pending, usage, rng, reservations)


def test_an_array_limit_holds_back_the_same_elements_however_the_queue_is_kept():
    host = Host(cpus=32, cards=tuple(Card(i, 80 * G) for i in range(4)))
    pending = [Job(id=i, user="a", command=["x"], cwd="/", gpus=1, submitted_at=0.0,
                   array=ArrayPart(1, i - 1, 6, 2)) for i in range(1, 7)]
    daemon = decide(SchedulerInput(host, copy.deepcopy(pending), [], now=NOW))
    assert [s.job_id for s in daemon.starts] == [1, 2]
    assert daemon.held_back == dict.fromkeys([3, 4, 5, 6], Reason.ARRAY_LIMIT)
    assert daemon.reasons[6] == Reason.ARRAY_LIMIT
    queue = PendingQueue(copy.deepcopy(pending))
    kept = decide(SchedulerInput(host, queue, [], now=NOW), explain=False)
    assert kept.starts == daemon.starts and kept.held_back == daemon.held_back
    assert len(queue) == 6  # the held-back elements are back in the kept queue


def test_a_quick_pass_reads_as_far_as_preemption_serves_even_with_no_reservations():
    # No reservations: the first waiting job settles its shape at once, and a quick pass would
    # stop there; preemption serves the first 8 waiting jobs, so the pass reads on to job 4.
    host = Host(cpus=32, cards=(Card(0, 80 * G), Card(1, 80 * G)))
    running = [Job(id=i, user="a", command=["x"], cwd="/", priority=Tier.LOW, gpus=1,
                   gpu_ids=[i - 1], state=JobState.RUNNING, started_at=NOW - 7200,
                   preemptible=True) for i in (1, 2)]
    pending = [Job(id=i, user="b", command=["x"], cwd="/", gpus=1, submitted_at=float(i))
               for i in (3, 4)]
    plans = [decide(SchedulerInput(host, PendingQueue(copy.deepcopy(pending)),
                                   copy.deepcopy(running), now=NOW, max_reservations=0),
                    explain=explain, preempt=PreemptRule(600.0)) for explain in (True, False)]
    assert [summary(p) for p in plans][0] == [summary(p) for p in plans][1]
    assert [(p.job_id, [v.job_id for v in p.victims]) for p in plans[1].preemptions] == [
        (3, [2]), (4, [1])]
