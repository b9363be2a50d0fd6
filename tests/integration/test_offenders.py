"""Offenders: idle, over-declared and over-budget jobs, zombie memory and strays, each found with
its evidence, and the actions [offenders] asks for (notify, requeue, cancel), recorded."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from tests.support.hosts import host_with, wait_for

from gq.config.telemetry import OffendersConfig, OffenderRules
from gq.daemon.attribution import Owner
from gq.daemon.offenders import JobView, job_offences, process_offences
from gq.model import Gpu, GpuProcess, Job, JobState, Tier
from gq.store.samples import JobSample, Window

G = 1 << 30
BURN = [sys.executable, "-m", "gq.sim.burn"]
FAST = """
[telemetry]
interval = "0.2s"

[offenders]
idle_window = "1s"
over_declared_after = "1s"
over_budget_after = "0s"
zombie_after = "0.5s"
stray_after = "0.5s"
"""


# --- the verdicts, from literals ---------------------------------------------------------------


def job(**kw) -> Job:
    fields = dict(id=1, user="ann", command=["x"], cwd="/", state=JobState.RUNNING, gpus=1,
                  gpu_ids=[0], started_at=0.0, priority=Tier.NORMAL)
    return Job(**{**fields, **kw})


def verdicts(j: Job, window: Window | None = None, peak=None, samples=0, mem_known=0,
             latest=(), now=2000.0, config=OffendersConfig()) -> set[str]:
    view = JobView(j, window, peak, samples, mem_known, list(latest))
    return {c.kind for c in job_offences(view, now, 5.0, config)}


def test_idle_needs_a_low_mean_from_enough_known_samples():
    # 15 minutes at 5 s on one card: 180 samples expected; at least a quarter of them taken,
    # and at least half of those taken known.
    assert verdicts(job(), Window(180, 180, 4.0, 180, G)) == {"idle"}
    assert verdicts(job(), Window(180, 89, 4.0, 180, G)) == set()  # mostly unknown: no verdict
    assert verdicts(job(), Window(50, 26, 4.0, 50, G)) == {"idle"}  # a busy daemon sampled late
    assert verdicts(job(), Window(40, 40, 4.0, 40, G)) == set()  # too little to judge by
    assert verdicts(job(), Window(180, 0, None, 180, G)) == set()
    assert verdicts(job(), Window(180, 180, 20.0, 180, G)) == set()  # not under 20%
    assert verdicts(job(state=JobState.PREEMPTING), Window(180, 180, 0.0, 180, G)) == set()
    assert verdicts(job(gpus=0, gpu_ids=[]), Window(180, 180, 0.0, 180, G)) == set()
    low = OffendersConfig(tiers={"low": OffenderRules(idle_util=2.0)})
    assert verdicts(job(priority=Tier.LOW), Window(180, 180, 4.0, 180, G), config=low) == set()


def test_over_declared_and_over_budget_judge_memory_against_mem():
    j = job(mem=20 * G)
    assert verdicts(j, peak=9 * G, samples=100, mem_known=100) == {"over_declared"}
    assert verdicts(j, peak=10 * G, samples=100, mem_known=100) == set()
    assert verdicts(j, peak=2 * G, samples=100, mem_known=40) == set()  # memory mostly unknown
    assert verdicts(j, peak=9 * G, samples=100, mem_known=100, now=500.0) == set()  # too soon
    assert verdicts(job(), peak=1 * G, samples=100, mem_known=100) == set()  # whole cards
    over = [JobSample(1, 0, 21 * G, 90)]
    assert verdicts(j, peak=21 * G, samples=1, mem_known=1, latest=over) == {"over_budget"}
    unknown = [JobSample(1, 0, None, 90)]
    assert verdicts(j, peak=None, latest=unknown) == set()


def test_processes_are_zombies_or_strays_by_who_holds_them():
    ended = job(id=5, state=JobState.COMPLETED, uid=1000)
    live = job(id=6, uid=1000)
    cards = [Gpu(0, "GPU-0", "x", 80 * G, "0", processes=[
        GpuProcess(10, G), GpuProcess(11, 2 * G), GpuProcess(12, 3 * G), GpuProcess(13, None),
        GpuProcess(14, G)])]
    owners = {10: Owner(10, 5, alive=False), 11: Owner(11, 5, True, True, uid=1000),
              12: Owner(12, 5, True, True, uid=1001), 13: Owner(13, None, True),
              14: Owner(14, 6, True)}
    found = {c.pid: c for c in process_offences(cards, owners, {5: ended, 6: live})}
    assert {pid: c.kind for pid, c in found.items()} == {10: "zombie", 11: "zombie",
                                                         12: "stray", 13: "stray"}
    assert found[10].evidence == "pid 10 (of job 5) is gone but still holds 1G on GPU 0"
    assert "which is completed" in found[11].evidence
    assert "an unknown amount on GPU 0" in found[13].evidence


# --- a real daemon ----------------------------------------------------------------------------


class Outside:
    """Burn processes the test starts itself, outside gq."""

    def __init__(self, host):
        self.host = host
        self.procs: list[subprocess.Popen] = []

    def burn(self, card: int, *args: str, **env: str) -> subprocess.Popen:
        proc = subprocess.Popen([*BURN, *args], stdout=subprocess.PIPE, env={
            **self.host.env, "CUDA_VISIBLE_DEVICES": str(card), **env})
        proc.stdout.readline()  # it holds its memory once it has said so
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)


@pytest.fixture
def outside_of():
    made: list[Outside] = []

    def make(host) -> Outside:
        made.append(Outside(host))
        return made[-1]

    yield make
    for o in made:
        o.stop()


def offenders_by(host) -> dict[tuple[str, int | None, int | None], dict]:
    return {(o["kind"], o["job_id"], o["pid"]): o for o in host.call("offenders")}


def test_every_kind_is_found_with_its_evidence_and_outlives_a_daemon_restart(
        make_host, outside_of):
    host = host_with(make_host, FAST)
    idle = host.submit("-m", "20G", "--", *BURN, "--mem", "4G", "--util", "5")
    over = host.submit("-m", "10G", "--", *BURN, "--mem", "12G", "--util", "90")
    leaky = host.submit("-m", "5G", "--", *BURN, "--mem", "2G", "--seconds", "1.5", "--leak")
    done = host.submit("-g", "0", "--", "true")
    assert host.wait_ended(leaky)["state"] == "completed"
    assert host.wait_ended(done)["state"] == "completed"
    outside = outside_of(host)
    stray = outside.burn(3, "--mem", "3G")
    left_behind = outside.burn(2, "--mem", "1G", GQ_JOB_ID=str(done))

    def all_kinds():
        found = offenders_by(host)
        kinds = {k[0] for k in found}
        # The evidence is that of the latest sample: once the window is past the burn's
        # start, the mean is the burn's own 5%.
        settled = found.get(("idle", idle, None), {}).get("figures", {}).get("util_mean") == 5
        return found if kinds >= {"idle", "over_declared", "over_budget", "zombie",
                                  "stray"} and len(found) >= 6 and settled else None

    found = wait_for(all_kinds, what="every kind of offender")
    assert "mean utilisation 5% over the last 1s" in found[("idle", idle, None)]["evidence"]
    assert found[("over_declared", idle, None)]["evidence"].startswith(
        "peak 4G of --mem 20G per GPU after")
    assert found[("over_budget", over, None)]["evidence"].startswith("holds 12G on GPU")
    zombies = {o["job_id"]: o for k, o in found.items() if k[0] == "zombie"}
    assert set(zombies) == {leaky, done}
    assert "is gone but still holds 2G on GPU" in zombies[leaky]["evidence"]
    assert zombies[done]["evidence"].startswith(
        f"pid {left_behind.pid} of job {done}, which is completed, still holds 1G on GPU 2")
    strays = [o for k, o in found.items() if k[0] == "stray"]
    assert [(o["pid"], o["gpus"]) for o in strays] == [(stray.pid, [3])]
    assert "holds 3G on GPU 3 outside gq" in strays[0]["evidence"]
    one = found[("idle", idle, None)]
    assert set(one) == {"id", "kind", "job_id", "user", "tier", "pid", "gpus", "since",
                        "last_seen", "ended_at", "evidence", "suggestion", "figures", "action",
                        "action_due_at", "notified_at", "acted", "acted_at"}
    assert (one["action"], one["tier"], one["acted"]) == ("report", "normal", None)
    assert one["figures"]["util_mean"] == 5.0
    table = host.gq("offenders").stdout
    assert "over-declared" in table and f"pid {stray.pid}" in table
    events = [e["detail"] or "" for e in host.job(idle)["events"]]
    assert any(d.startswith("offender (idle): mean utilisation") for d in events)

    host.kill_daemon()
    host.start()
    again = wait_for(lambda: ("idle", idle, None) in offenders_by(host) and offenders_by(host),
                     what="the idle job after the restart")
    assert again[("idle", idle, None)]["id"] == one["id"]
    assert again[("idle", idle, None)]["since"] == one["since"]
    outside.stop()
    wait_for(lambda: not any(k[0] == "stray" for k in offenders_by(host)),
             what="the stray to be over")


def test_actions_notify_requeue_and_cancel_per_tier_and_are_recorded(make_host, outside_of,
                                                                     tmp_path):
    notes = tmp_path / "notified"
    host = host_with(make_host, FAST + f"""
notify = 'echo "$GQ_OFFENCE_KIND $GQ_JOB_ID $GQ_OFFENCE_ACTION $GQ_PID" >> {notes}'
idle = "notify"
stray = "notify"

[offenders.low]
idle = "cancel after 1s"

[offenders.high]
idle = "report"
over_budget = "requeue after 0.5s"
""")
    normal = host.submit("--", *BURN, "--mem", "1G", "--util", "5")
    low = host.submit("-p", "low", "--", *BURN, "--mem", "1G", "--util", "5")
    high = host.submit("-p", "high", "-m", "5G", "--", *BURN, "--mem", "8G")
    stray = outside_of(host).burn(3, "--mem", "1G")

    cancelled = host.wait_ended(low, timeout=30)
    assert cancelled["state"] == "cancelled"
    assert re.match(r"cancelled by gq \(idle: mean utilisation \d+% over the last 1s",
                    cancelled["reason"])
    requeued = host.wait_state(high, "pending", "running", timeout=30)
    wait_for(lambda: host.job(high)["restarts"] >= 1, what="the over-budget job's requeue")
    details = [e["detail"] or "" for e in host.job(high)["events"]]
    # Requeued with its measured peak plus 10% as its --mem, so that it fits next time.
    assert any("requeued by gq with --mem 9G (over-budget: holds 8G" in (e["reason"] or "")
               for e in host.job(high)["events"]), details
    assert host.job(high)["mem"] == 9 << 30
    assert requeued["priority"] == "high"
    wanted = {f"idle {normal} notify", f"idle {low} cancel after 1s",
              f"over_budget {high} requeue after 0.5s", f"stray  notify {stray.pid}"}

    def notified():
        lines = {" ".join(line.split()) for line in notes.read_text().splitlines()} if (
            notes.exists()) else set()
        return lines >= {" ".join(w.split()) for w in wanted}

    wait_for(notified, what="a notification for each")
    events = [e["detail"] or "" for e in host.job(normal)["events"]]
    assert "offender (idle): notify command started" in events
    assert host.job(normal)["state"] == "running"  # notified, not stopped
    history = host.call("stats", since=3600)["offenders"]["list"]
    acted = {(o["kind"], o["job_id"]): o["acted"] for o in history}
    assert acted[("idle", low)] == "cancelled" and acted[("over_budget", high)] == "requeued"
    assert acted[("idle", normal)] is None
    host.call("cancel", ids=[str(high), str(normal)])


def test_a_failing_notify_command_is_recorded_and_harms_nothing(make_host):
    host = host_with(make_host, FAST + 'notify = "exit 3"\nidle = "notify"\n')
    job = host.submit("--", *BURN, "--mem", "1G", "--util", "0")

    def noted():
        return any((e["detail"] or "").startswith("offender (idle): notify command started")
                   for e in host.job(job)["events"])

    wait_for(noted, what="the notify action to be recorded")
    assert host.call("ping") and host.job(job)["state"] == "running"
    assert os.path.exists(host.home / "logs" / "notify.log")


@pytest.mark.parametrize("config,needle", [
    ('[telemetry]\ninterval = "often"\n', "[telemetry] interval = 'often': expected a duration"),
    ("[telemetry]\nkeep = 3\n", "unknown setting [telemetry] keep"),
    ('[offenders]\nidle = "kill"\n', "[offenders] idle = 'kill': expected \"report\""),
    ('[offenders]\nstray = "cancel after 1h"\n', "it has no job to requeue or cancel"),
    ('[offenders]\nidle = "notify"\n', 'idle = "notify" needs [offenders] notify'),
    ("[offenders]\nidle_util = 120\n", "[offenders] idle_util = 120: expected a number"),
    ('[offenders.urgent]\nidle = "report"\n', "unknown setting [offenders] urgent"),
    ('[offenders.low]\nstray = "report"\n', "unknown setting [offenders] low.stray"),
])
def test_bad_telemetry_and_offender_settings_are_refused_at_start(make_host, config, needle):
    host = make_host("1x80G", start=False)
    with open(host.home / "config.toml", "a") as f:
        f.write(config)
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and needle in proc.stderr and proc.stderr.count("gq:") == 1
