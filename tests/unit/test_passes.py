"""Scheduling passes as a service (gq/daemon/passes.py Passes), without a daemon or a process: a
store in a temporary directory, the fake supervisor, a fixed clock and a monotonic one the test
moves (tests/support/services.py). What a pass decides is the policy's (tests/unit/test_decide.py
and others); here, that a pass acts on it and keeps what it says, and when passes run. The same
with real shims: tests/integration/test_daemon_jobs.py, tests/integration/test_preemption.py."""

from __future__ import annotations

from gq.daemon.passes import EXPLAIN_MAX_AGE
from gq.daemon.shim import PREEMPT
from gq.daemon.supervisor import Shim
from gq.model import JobState, Reason, Tier
from tests.support.services import NOW, Services


def test_a_pass_starts_the_first_job_that_fits_and_says_why_the_next_waits(tmp_path):
    s = Services(tmp_path)  # one card
    first, second = s.job(JobState.PENDING), s.job(JobState.PENDING)
    s.passes.run_pass(explain=False)
    started = s.store.get_job(first.id)
    assert (started.state, started.gpu_ids, started.started_at) == (JobState.RUNNING, [0], NOW)
    assert s.store.is_holding(first.id)
    assert s.supervisor.asked == [("spawn", first.id)] and first.id in s.runs.shims
    env = s.supervisor.specs[first.id]["env"]
    assert (env["CUDA_VISIBLE_DEVICES"], env["GQ_JOB_ID"]) == ("0", str(first.id))
    waiting = s.store.get_job(second.id)
    assert (waiting.state, waiting.reason) == (JobState.PENDING, Reason.RESOURCES)
    assert "1 free card" in s.passes.shortfalls[second.id]
    assert s.passes.forecasts[second.id].after == first.id
    # It waits for a job with no --time and nothing learned: its expected start is unknown.
    assert s.passes.start_notes[second.id][0] is False
    assert s.passes.counts == {"quick": 1, "explaining": 0, "skipped": 0}


def test_a_quick_pass_that_could_not_act_is_skipped(tmp_path):
    s = Services(tmp_path)
    s.job()  # holds the one card
    waiting = s.job(JobState.PENDING)
    s.passes.run_pass(explain=False)
    assert s.passes.counts == {"quick": 0, "explaining": 0, "skipped": 1}
    assert s.store.get_job(waiting.id).reason is None and s.passes.shortfalls == {}
    assert s.supervisor.asked == []
    # The explaining pass reads it all the same, and says why it waits.
    s.passes.run_pass(explain=True)
    assert s.passes.counts == {"quick": 0, "explaining": 1, "skipped": 1}
    assert s.store.get_job(waiting.id).reason == Reason.RESOURCES
    assert "1 free card" in s.passes.shortfalls[waiting.id]


def test_a_quick_pass_that_could_preempt_runs_and_says_so(tmp_path):
    """Nothing fits the free cards, but a higher tier waits on a preemptible job: not skipped."""
    s = Services(tmp_path)
    low = s.job(priority=Tier.LOW, preemptible=True)
    s.runs.watch(Shim(low.id, pid=100_000 + low.id, pidfd=-1))
    high = s.job(JobState.PENDING, priority=Tier.HIGH)
    s.passes.run_pass(explain=False)
    assert s.passes.counts == {"quick": 1, "explaining": 0, "skipped": 0}
    victim = s.store.get_job(low.id)
    assert victim.state == JobState.PREEMPTING and f"job {high.id} (high)" in victim.reason
    assert s.supervisor.asked == [("ask", low.id, PREEMPT)]
    # What preemption does for the waiting job joins what it lacks.
    assert s.passes.shortfalls[high.id] == (
        f"GPUs (it needs 1 free card); preempting job(s) {low.id} for it")


def test_the_explaining_pass_runs_on_its_rhythm(tmp_path):
    """Due when the queue changed and EXPLAIN_EVERY (0.5 s) has passed, or after
    EXPLAIN_MAX_AGE whatever happened; the passes in between are quick ones."""
    s = Services(tmp_path)
    s.job()
    s.job(JobState.PENDING)
    clock, counts = s.monotonic, s.passes.counts
    s.passes.run_pass()  # none has explained yet
    assert counts["explaining"] == 1
    s.passes.request_pass()  # a change
    clock.now += 0.1
    s.passes.run_pass()
    assert (counts["explaining"], counts["skipped"]) == (1, 1)
    clock.now += 0.5
    s.passes.run_pass()
    assert counts["explaining"] == 2
    clock.now += 1.0  # nothing changed since
    s.passes.run_pass()
    assert (counts["explaining"], counts["skipped"]) == (2, 2)
    s.passes.request_pass(tick=True)  # the clock's: no change
    assert explaining_after(s, EXPLAIN_MAX_AGE - 1.0 - 0.1) == 2
    assert explaining_after(s, 0.2) == 3


def explaining_after(s: Services, seconds: float) -> int:
    """Run a pass `seconds` later; how many explaining passes there have been."""
    s.monotonic.now += seconds
    s.passes.run_pass()
    return s.passes.counts["explaining"]


def test_a_slow_explaining_pass_is_spaced_to_a_share_of_the_time(tmp_path):
    """One that took 50 ms runs at most every 2.5 s (EXPLAIN_SHARE, 2%), changes or not."""
    s = Services(tmp_path)
    s.job()
    s.job(JobState.PENDING)
    clock, counts = s.monotonic, s.passes.counts
    clock.step = 0.05  # each reading of the clock: the pass takes 50 ms
    s.passes.run_pass()
    clock.step = 0.0
    assert counts["explaining"] == 1
    s.passes.request_pass()
    assert explaining_after(s, 2.4) == 1
    assert explaining_after(s, 0.1) == 2


def test_gq_why_explains_again_only_when_the_queue_changed(tmp_path):
    s = Services(tmp_path)
    s.job()
    s.job(JobState.PENDING)
    s.passes.explain_now()
    assert s.passes.counts["explaining"] == 1
    s.passes.explain_now()
    assert s.passes.counts["explaining"] == 1
    s.passes.request_pass()
    s.passes.explain_now()  # at once: not spaced like the passes the daemon has by itself
    assert s.passes.counts["explaining"] == 2


def test_an_empty_queue_forgets_what_the_last_pass_said(tmp_path):
    s = Services(tmp_path)
    s.job()
    waiting = s.job(JobState.PENDING)
    s.passes.run_pass(explain=True)
    assert waiting.id in s.passes.shortfalls and waiting.id in s.passes.forecasts
    s.store.transition(waiting.id, JobState.CANCELLED, NOW, ended_at=NOW)
    s.passes.run_pass(explain=True)
    assert (s.passes.shortfalls, s.passes.forecasts, s.passes.scores,
            s.passes.start_notes) == ({}, {}, {}, {})
