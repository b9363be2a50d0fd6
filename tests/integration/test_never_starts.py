"""A job that could never start under the current limits is refused at submit and at update,
explained by `gq why` when the limits changed after it was queued, and ended by `gq wait`."""

from __future__ import annotations

from dataclasses import replace

from gq.model import Job, Tier
from gq.policy.quotas import Limits, UserLimits, never_within_limits
from tests.support.hosts import host_with
from tests.support.jobs import gated


def test_never_within_limits_names_the_limit_that_no_queue_state_meets():
    job = Job(id=1, user="ann", command=["x"], cwd="/", priority=Tier.HIGH, gpus=2)
    assert never_within_limits(job, Limits(), 4) == (
        "ann's high-tier jobs may hold at most 1 GPU")
    assert never_within_limits(replace(job, gpus=1), Limits(), 4) is None
    assert never_within_limits(replace(job, priority=Tier.NORMAL), Limits(), 4) is None
    capped = Limits(default=UserLimits(max_running_gpus=2, high_share=None))
    assert never_within_limits(replace(job, gpus=3, priority=Tier.NORMAL), capped, 4) == (
        "ann may hold at most 2 GPUs at once")
    assert never_within_limits(replace(job, gpus=0), capped, 4) is None


def test_submit_and_update_refuse_a_job_that_could_never_start(host):
    refused = host.gq("submit", "-p", "high", "-g", "2", "--", "true", check=False)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "gq: -p high -g 2: " + _user(host) + "'s high-tier jobs may hold at most 1 GPU, so it "
        "could never start; ask for fewer GPUs or a lower tier (the limits: gq config show)"]
    assert host.count_jobs() == 0

    waiting = host.submit("--hold", "-g", "2", "--", "true")
    out = host.gq("update", str(waiting), "-p", "high", check=False)
    assert out.returncode == 1
    assert out.stderr.startswith(f"gq: job {waiting}: not high: ")
    assert "could never start" in out.stderr
    assert host.job(waiting)["priority"] == "normal"
    assert host.gq("update", str(waiting), "-p", "low").returncode == 0


def _user(host) -> str:
    return host.call("ping")["user"]


def test_why_and_wait_when_the_limits_changed_after_submit(make_host):
    host = host_with(make_host, "\n[limits]\nhigh_share = 0.5\n")
    job = host.submit("--hold", "-p", "high", "-g", "2", "--", "true")
    host.kill_daemon()
    (host.home / "config.toml").write_text(
        (host.home / "config.toml").read_text().replace("high_share = 0.5", "high_share = 0.2"))
    host.start()
    host.gq("release", str(job))
    host.wait_reason(job, "QuotaLimit")
    why = host.gq("why", str(job)).stdout
    assert "high-tier jobs may hold at most 1 GPU, so it can never start under the current " \
           f"limits: `gq update {job} -p normal` lets it start" in why

    waited = host.gq("wait", str(job), check=False)
    assert waited.returncode == 3
    assert waited.stdout.strip() == (
        f"job {job}: pending (QuotaLimit), can no longer start: gq why {job}")
    host.gq("update", str(job), "-p", "normal")
    assert host.gq("wait", str(job)).returncode == 0


def test_wait_ends_on_a_failed_dependency_and_on_its_timeout(host):
    gate = host.work / "gate"
    first = host.submit(*gated(gate, exit_code=1))
    after = host.submit("--afterok", str(first), "--", "true")
    gate.touch()
    waited = host.gq("wait", str(after), check=False)
    assert waited.returncode == 3
    assert "(DependencyNeverSatisfied), can no longer start" in waited.stdout

    stays = host.submit(*gated(host.work / "never"))
    host.wait_state(stays, "running")
    timed = host.gq("wait", "--timeout", "0s", str(stays), check=False)
    assert timed.returncode == 124
    assert timed.stdout.strip() == f"job {stays}: still running (--timeout ran out)"
    bad = host.gq("wait", "--timeout", "soon", str(stays), check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("gq: --timeout ")
