"""`gq update ID`: what waiting jobs ask for changes with submit's checks; a running job's
--time may be lowered; other changes to running jobs, and bad input, are refused."""

from __future__ import annotations

import pytest

from gq.daemon.update import refusal
from gq.model import Job, JobState
from tests.support.jobs import gated

G = 1 << 30


def test_tier_of_a_waiting_job_changes_and_running_ones_are_refused(host):
    gate = host.work / "gate"
    running = host.submit("-g", "4", *gated(gate))
    host.wait_state(running, "running")
    low = host.submit("-p", "low", *gated(gate))
    explicit = host.submit("-p", "low", "--no-preemptible", *gated(gate))
    host.wait_reason(low, "Resources")

    out = host.gq("update", str(low), str(explicit), "-p", "high")
    assert out.stdout.splitlines() == [f"job {low}: -p low -> high, not preemptible",
                                       f"job {explicit}: -p low -> high"]
    job = host.job(low)
    assert (job["priority"], job["preemptible"]) == ("high", False)
    assert host.job(explicit)["preemptible"] is False
    assert any("updated by" in (e["detail"] or "") and "-p low -> high" in e["detail"]
               for e in job["events"])

    refused = host.gq("update", str(running), "-p", "low", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"gq: job {running}: is running; only --time can change for a running job, not -p")
    assert host.job(running)["priority"] == "normal"

    bad = host.gq("update", str(low), "-p", "urgent", check=False)
    assert bad.returncode == 2 and "expected high, normal or low" in bad.stderr
    gate.touch()


def test_every_field_of_a_waiting_job_changes_with_the_checks_of_submit(host):
    gate = host.work / "gate"
    running = host.submit("-g", "4", *gated(gate))
    host.wait_state(running, "running")
    waiting = host.submit("-m", "10G", "-n", "first", *gated(gate))
    host.wait_reason(waiting, "Resources")
    out = host.gq("update", str(waiting), "--mem", "30G", "-g", "2", "-c", "3", "--ram", "4G",
                  "-t", "2h", "-n", "second", "-p", "low")
    assert out.stdout.strip() == (
        f"job {waiting}: -p normal -> low, --gpus 1 -> 2, --mem 10G -> 30G, --cpus 1 -> 3, "
        "--ram - -> 4G, --time - -> 2h00m, -n first -> second, preemptible")
    job = host.job(waiting)
    assert (job["mem"], job["gpus"], job["cpus"], job["ram"], job["name"], job["priority"]) == (
        30 * G, 2, 3, 4 * G, "second", "low")
    assert job["time_limit"] == 7200

    for argv, needle in (
            (["--mem", "30"], "--mem '30': a size needs a unit: did you mean 30G?"),
            (["--mem", "81G"], f"job {waiting}: --mem 81G: more than the cards here hold"),
            (["-g", "5"], f"job {waiting}: --gpus 5: "),
            (["-c", "999"], f"job {waiting}: --cpus 999: "),
            (["-t", "soon"], "--time 'soon': expected a duration"),
            (["-n", "a/b"], "must not contain '/'"),
            ([], "nothing to change")):
        bad = host.gq("update", str(waiting), *argv, check=False)
        assert bad.returncode == 2, (argv, bad.stderr)
        assert bad.stderr.startswith("gq: ") and needle in bad.stderr, (argv, bad.stderr)
    assert host.job(waiting)["mem"] == 30 * G  # nothing changed

    lowered = host.gq("update", str(running), "-t", "1h")
    assert lowered.stdout.strip() == f"job {running}: --time - -> 1h00m"
    assert host.job(running)["time_limit"] == 3600
    refused = host.gq("update", str(running), "--mem", "5G", check=False)
    assert refused.returncode == 1
    assert "only --time can change for a running job, not --mem" in refused.stderr
    gate.touch()


def test_an_array_update_changes_its_waiting_elements_and_skips_the_others(host):
    gate = host.work / "gate"
    array = host.submit("--array", "0-3", "-g", "4", *gated(gate))
    first = host.wait_state(array, "running")
    out = host.gq("update", str(array), "-c", "2")
    assert out.stdout.strip() == (f"array {array}: 1 skipped: is running; only --time can "
                                  "change for a running job, not --cpus, 3 --cpus 1 -> 2")
    cpus = [host.job(array + i)["cpus"] for i in range(4)]
    assert cpus == [1, 2, 2, 2] and first["id"] == array
    gate.touch()


def _running(limit):
    return Job(1, "ann", ["x"], "/", state=JobState.RUNNING, time_limit=limit)


@pytest.mark.parametrize("limit,new,admin,refused", [
    (3600.0, 1800.0, False, False),  # lowering: anyone who owns it
    (3600.0, 7200.0, False, True),  # raising: admins only, as in Slurm
    (None, 1800.0, False, True),  # no limit yet: any limit would be a raise from none
    (3600.0, 7200.0, True, False),
])
def test_a_running_jobs_time_may_be_lowered_and_raised_only_by_an_admin(limit, new, admin,
                                                                       refused):
    verdict = refusal(_running(limit), {"time_limit": new}, admin)
    assert (verdict is not None) == refused
    if refused:
        assert "raising it is for an admin" in verdict
