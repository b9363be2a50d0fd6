"""`gq stats` health indicators against a history computed by hand, and the monthly review."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from tests.support.hosts import wait_for

from gq.model import Job, JobState, Tier
from gq.stats.lab import StatsInput, lab_stats
from gq.stats.health import percentile
from gq.stats.review import month_bounds, review
from gq.store import Store
from gq.store.samples import CardSample

G = 1 << 30
APRIL = datetime(2026, 4, 1, tzinfo=timezone.utc).timestamp()
MAY = datetime(2026, 5, 1, tzinfo=timezone.utc).timestamp()
JUNE = datetime(2026, 6, 1, tzinfo=timezone.utc).timestamp()
ACCOUNTS = {"ann": "vision", "bob": "nlp"}


def run(store: Store, user: str, submitted: float, started: float, ended: float,
        state: str = "completed", card: int = 0) -> int:
    job = Job(id=0, user=user, command=["train"], cwd="/", priority=Tier.NORMAL, gpus=1,
              submitted_at=submitted)
    job.id = store.insert_job(job, submitted)
    store.transition(job.id, JobState.RUNNING, started, started_at=started, gpu_ids=[card],
                     holding=1)
    final = JobState.PENDING if state == "preempted" else JobState(state)
    store.transition(job.id, final, ended, ended_at=ended, holding=0)
    store.add_run(store.get_job(job.id), 1.0, ended, state, account=ACCOUNTS.get(user))
    return job.id


@pytest.fixture
def store(tmp_path) -> Store:
    """Two cards. April: both at 50% for an hour; two jobs waited 20 and 30 minutes. May: card 0
    at 90% and card 1 at 60% for an hour; five jobs waited 1, 2, 5, 8 1/3 and 15 minutes, and
    one of them was preempted once before it completed."""
    store = Store(tmp_path / "gq.db")
    for base, utils in ((APRIL + 86400, (50, 50)), (MAY + 86400, (90, 60))):
        for minute in range(60):
            store.samples.write(base + 60 * minute,
                                [CardSample(c, u, 10 * G, 0, 50, 200.0) for c, u in enumerate(utils)],
                                [])
    store.samples.roll_up(MAY + 2 * 86400)
    t = APRIL + 2 * 86400
    run(store, "ann", t, t + 1200, t + 4800)  # 1 h
    run(store, "bob", t, t + 1800, t + 3600, card=1)  # 0.5 h
    t = MAY + 2 * 86400
    for n, (user, wait) in enumerate([("ann", 60), ("ann", 120), ("bob", 300), ("cy", 500),
                                      ("bob", 900)]):
        job_id = run(store, user, t + n, t + n + wait, t + n + wait + 3600)
        if n == 2:  # bob's second: preempted after half an hour, then ran again
            store.add_run(store.get_job(job_id), 1.0, t + n + wait + 1800, "preempted",
                          account="nlp")
    return store


def stats(store: Store, start: float, end: float) -> dict:
    return lab_stats(store, StatsInput(since=start, now=end, card_totals={0: 80 * G, 1: 80 * G},
                                       running=[], interval=60.0,
                                       idle_util={"high": 20.0, "normal": 20.0, "low": 20.0},
                                       accounts=ACCOUNTS))


def test_the_health_of_may_by_hand(store):
    util, wait, bad = stats(store, MAY, JUNE)["health"]
    # (60 * 90 + 60 * 60) / 120 = 75 > 70.
    assert (util["value"], util["status"]) == (75.0, "pass")
    # Nearest rank 4 of 5 (ceil(0.8 * 5)): 500 s, within 600.
    assert (wait["value"], wait["status"], wait["jobs"]) == (500.0, "pass", 5)
    # Bob's job lost a run to preemption: 1 of the 5 jobs with ended runs, 20%.
    assert (bad["value"], bad["status"], bad["bad"], bad["jobs"]) == (20.0, "fail", 1, 5)


def test_the_health_of_april_by_hand(store):
    util, wait, bad = stats(store, APRIL, MAY)["health"]
    assert (util["value"], util["status"]) == (50.0, "fail")
    assert (wait["value"], wait["status"]) == (1800.0, "fail")  # rank 2 of 2
    assert (bad["value"], bad["status"]) == (0.0, "pass")


def test_no_data_is_neither_pass_nor_fail(store):
    health = stats(store, JUNE - 3600, JUNE)["health"]
    assert [i["status"] for i in health] == ["unknown"] * 3
    assert [i["value"] for i in health] == [None] * 3


def test_use_by_account_counts_runs_under_their_account(store):
    may = stats(store, MAY, JUNE)
    # ann 2 h, bob 2 h + the preempted half hour, cy 1 h (in no account).
    assert may["gpu_hours_by_account"] == {"(no account)": 1.0, "nlp": 2.5, "vision": 2.0}


def test_percentile_is_nearest_rank_without_float_surprises():
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 80) == 4.0  # 0.8 * 5 is 4.000000000000001
    assert percentile([7.0], 80) == 7.0 and percentile([], 80) is None


def test_month_bounds():
    before, start, end, name, last = month_bounds(None, datetime(
        2026, 1, 15, tzinfo=timezone.utc).timestamp())
    assert (name, last) == ("December 2025", "November 2025")
    assert end == datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    assert month_bounds("2026-05", 0)[1:4] == (MAY, JUNE, "May 2026")
    with pytest.raises(ValueError, match="expected a month as YYYY-MM"):
        month_bounds("May", 0)


def test_the_monthly_review_in_markdown(store):
    text = review({**stats(store, MAY, JUNE), "host": "lab1"},
                  {**stats(store, APRIL, MAY), "host": "lab1"}, "May 2026", "April 2026")
    lines = text.splitlines()
    assert lines[0] == "# GPU review: May 2026 (lab1)"
    assert "| card utilisation | 75.0% | 50.0% | +25.0 pts | over 70% | pass |" in lines
    assert "| p80 wait | 8m20s | 30m00s | -21m40s | 10m or less | pass |" in lines
    assert ("| ended by resources or preemption | 20.0% | 0.0% | +20.0 pts | under 5% | fail |"
            in lines)
    assert "- out-of-memory runs: 0 (April 2026: 0)" in lines
    i = lines.index("## Use by account")
    assert lines[i + 2:i + 7] == [
        "| account | GPU-hours | share | April 2026 | change |", "|---|---|---|---|---|",
        "| nlp | 2.5 | 45.5% | 0.5 | +2.0 |", "| vision | 2.0 | 36.4% | 1.0 | +1.0 |",
        "| (no account) | 1.0 | 18.2% | 0.0 | +1.0 |"]
    assert lines[-1] == "No offenders: every card held was in use."


def test_gq_stats_opens_with_health_and_writes_the_monthly_review(make_host):
    host = make_host("2x80G")
    host.wait_ended(host.submit("--", "true"))
    # Utilisation is N/A until the cards have been sampled once (unknown is not idle).
    wait_for(lambda: host.call("samples", since=600)["points"], what="a sample of the cards")
    lines = host.gq("stats", "--since", "1h").stdout.splitlines()
    assert lines[1] == "health"
    # The simulated cards idle (0%); the job started at once and completed.
    assert [line.split()[0] for line in lines[2:5]] == ["FAIL", "PASS", "PASS"]
    assert "p80 wait" in lines[3] and "target: 10m or less" in lines[3]
    now = datetime.now(timezone.utc)
    month = host.gq("stats", "--month", "--of", now.strftime("%Y-%m")).stdout
    assert month.startswith(f"# GPU review: {now.strftime('%B %Y')} (")
    assert "| p80 wait |" in month and "## Use by account" in month
    assert "| (no account) |" in month
    bad = host.gq("stats", "--month", "--of", "2026-13", check=False)
    assert (bad.returncode, bad.stderr) == (2, "gq: --of 2026-13: expected a month as YYYY-MM, "
                                               "e.g. 2026-05\n")
    later = host.gq("stats", "--month", "--of", f"{now.year + 1}-01", check=False)
    assert later.returncode == 2 and "has not begun" in later.stderr


def test_the_review_of_a_month_before_the_history_says_there_are_no_figures(store):
    """Issue 26 item 9: it printed an empty period and "No offenders: every card held was in
    use"."""
    march = datetime(2026, 3, 1, tzinfo=timezone.utc).timestamp()
    feb = datetime(2026, 2, 1, tzinfo=timezone.utc).timestamp()
    text = review({**stats(store, march, APRIL), "host": "lab1"},
                  {**stats(store, feb, march), "host": "lab1"}, "March 2026", "February 2026")
    assert text == ("# GPU review: March 2026 (lab1)\n\nNo figures for March 2026: this host's "
                    "history begins 2026-04-02T00:00:00Z.\n")
