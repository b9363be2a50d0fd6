"""Collateral deaths: a job killed out of memory by another job's overrun is not charged for it,
and the over-budget job's offence escalates to its tier's over_budget action."""

from __future__ import annotations

import shlex
import sys

from tests.support.hosts import host_with, wait_for

G = 1 << 30
BURN = [sys.executable, "-m", "gq.sim.burn"]

CONFIG = """
[telemetry]
interval = "0.2s"

[offenders]
over_budget_after = "1h"   # only the collateral death can escalate it within the test
over_budget = "requeue"
"""


def _gated_burn(gate, *burn_args: str) -> list[str]:
    """Wait for `gate`, then allocate as a training job would."""
    burn = " ".join(shlex.quote(a) for a in [*BURN, *burn_args])
    return ["--", "sh", "-c", f'while [ ! -e "{gate}" ]; do sleep 0.02; done; exec {burn}']


def test_a_job_killed_by_another_jobs_overrun_is_requeued_uncharged(make_host):
    host = host_with(make_host, CONFIG)
    gate = host.work / "gate"
    # The victim starts first, on GPU 0, and allocates its 40G only once the gate opens.
    victim = host.submit("-m", "40G", *_gated_burn(gate, "--mem", "40G", "--seconds", "0.5"))
    card = host.wait_state(victim, "running")["gpu_ids"][0]
    # Best fit puts the next slice beside it (40G free): it then holds 50G, not its 10G.
    over = host.submit("-m", "10G", "--", *BURN, "--mem", "50G", "--seconds", "600")
    assert host.wait_state(over, "running")["gpu_ids"] == [card]
    wait_for(lambda: any(j["id"] == over and j["used"] == 50 * G
                         for j in host.call("gpus")[card]["jobs"]),
             what="the overrun to be measured")
    gate.touch()  # 50G + 40G on an 80G card: the victim dies out of memory

    done = host.wait_state(victim, "completed", "oom", "failed", timeout=30)
    assert done["state"] == "completed", done
    assert done["gpu_ids"] != [card] and done["oom_retries"] == 0
    assert done["restarts"] == 1
    details = [e["detail"] or "" for e in done["events"]]
    assert any(d.startswith("requeued at once, not charged to --retry-oom: job "
                            f"{over} held 50G on GPU {card}, 40G over its --mem 10G")
               for d in details), details
    reasons = [e.get("reason") or "" for e in done["events"]]
    assert any(f"job {over} held 50G" in r for r in reasons), reasons

    # Escalated at once (over_budget_after is an hour): requeued with its peak plus 10%.
    offender = wait_for(lambda: (j := host.job(over))["mem"] == 55 * G and j,
                        what="the over-budget job to be requeued with more memory")
    events = [e["detail"] or "" for e in offender["events"]]
    assert any(d.startswith(f"its overrun killed job {victim}") for d in events), events
    assert any("requeued by gq with --mem 55G" in (e.get("reason") or "")
               for e in offender["events"])
