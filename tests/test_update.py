"""`gq update ID -p TIER`: the tier of waiting jobs changes; running ones and bad input are refused."""

from __future__ import annotations

from tests.jobs import gated


def test_tier_of_a_waiting_job_changes_and_running_ones_are_refused(host):
    gate = host.work / "gate"
    running = host.submit("-g", "4", *gated(gate))
    host.wait_state(running, "running")
    low = host.submit("-p", "low", *gated(gate))
    explicit = host.submit("-p", "low", "--no-preemptible", *gated(gate))
    host.wait_reason(low, "Resources")

    out = host.gq("update", str(low), str(explicit), "-p", "high")
    assert out.stdout.splitlines() == [f"job {low}: tier high, not preemptible",
                                       f"job {explicit}: tier high"]
    job = host.job(low)
    assert (job["priority"], job["preemptible"]) == ("high", False)
    assert host.job(explicit)["preemptible"] is False
    assert any("tier low -> high by" in (e["detail"] or "") for e in job["events"])

    refused = host.gq("update", str(running), "-p", "low", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"gq: job {running}: is running; only a pending or held job's tier can change")
    assert host.job(running)["priority"] == "normal"

    bad = host.gq("update", str(low), "-p", "urgent", check=False)
    assert bad.returncode == 2 and "expected high, normal or low" in bad.stderr
    gate.touch()
