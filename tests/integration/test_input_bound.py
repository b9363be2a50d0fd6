"""Input-bound jobs: cards mostly idle while the job's processes keep its CPUs busy, from
literals and on a real daemon with a job that spins a core beside a simulated card at 10%."""

from __future__ import annotations

import sys

from gq.config.telemetry import OffendersConfig, OffenderRules
from tests.support.hosts import host_with, wait_for
from gq.daemon.cpu_usage import CpuMeter, CpuWindow
from gq.daemon.offenders import JobView, job_offences
from gq.model import Job, JobState, Tier
from gq.store.samples import Window

G = 1 << 30
WINDOW = Window(120, 120, 12.0, 120, G)  # 10 minutes at 5 s: 12% on average


def verdict(cpu: CpuWindow | None, window: Window | None = WINDOW, cpus: int = 1,
            config: OffendersConfig = OffendersConfig()):
    j = Job(id=7, user="ann", command=["x"], cwd="/", state=JobState.RUNNING, gpus=1,
            gpu_ids=[0], started_at=0.0, priority=Tier.NORMAL, cpus=cpus)
    view = JobView(j, Window(180, 180, 12.0, 180, G), None, 0, 0, [], window, cpu)
    return {c.kind: c for c in job_offences(view, 2000.0, 5.0, config)}


def test_a_busy_main_process_beside_an_idle_card_is_input_bound_not_idle():
    found = verdict(CpuWindow(120, 1.0, 0.98, 1))
    assert set(found) == {"input_bound"}  # it would be idle too (12% < 20%): the cause wins
    c = found["input_bound"]
    assert c.evidence == ("mean utilisation 12% over the last 10m00s on GPU 0 while its 1 "
                          "process kept 1.0 of its 1 core busy (the busiest 98% of a core): it "
                          "starves its cards of data")
    assert "num_workers" in c.suggestion and "--cpus 4" in c.suggestion
    assert c.figures["cpu_busiest"] == 0.98


def test_loaders_using_every_core_asked_for_are_told_to_ask_for_more():
    c = verdict(CpuWindow(120, 7.6, 0.97, 9), cpus=8)["input_bound"]
    assert "ask for more (--cpus 16)" in c.suggestion and "prefetch_factor" in c.suggestion


def test_no_verdict_without_busy_cpus_enough_samples_or_an_idle_card():
    assert set(verdict(CpuWindow(120, 0.2, 0.2, 1))) == {"idle"}  # merely idle
    assert set(verdict(CpuWindow(120, 3.0, 0.5, 6), cpus=8)) == {"idle"}  # cores to spare
    assert set(verdict(None)) == {"idle"}  # CPU use unknown: no diagnosis
    assert set(verdict(CpuWindow(20, 1.0, 1.0, 1))) == {"idle"}  # too few CPU readings
    busy_card = Window(120, 120, 75.0, 120, G)
    assert set(verdict(CpuWindow(120, 1.0, 1.0, 1), window=busy_card)) == {"idle"}
    strict = OffendersConfig(default=OffenderRules(input_bound_util=10.0))
    assert set(verdict(CpuWindow(120, 1.0, 1.0, 1), config=strict)) == {"idle"}


def test_the_cpu_meter_reads_a_process_tree():
    import subprocess
    import time

    import psutil

    # A stand-in shim whose child spins (for a minute at most, should the test die).
    spin = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"
    shim = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run("
                             f"[sys.executable, '-c', {spin!r}])"])
    try:
        meter = CpuMeter()

        def busy():
            meter.sample({1: shim.pid}, time.monotonic())
            w = meter.window(1, 60.0, time.monotonic())
            # a loaded 2-core machine (load 15 seen) gives the spinner a tenth of a core; an
            # idle tree reads 0: what is read is the child's, through the shim
            return w if w is not None and w.samples >= 2 and w.busiest > 0.03 else None

        w = wait_for(busy, interval=0.3, what="a busy core")
        assert w.processes == 1 and w.cores >= w.busiest
        meter.sample({}, time.monotonic())  # the job is gone: so is what was known of it
        assert meter.window(1, 60.0, time.monotonic()) is None
    finally:
        for child in psutil.Process(shim.pid).children(recursive=True):
            child.kill()
        shim.kill()
        shim.wait()


FAST = """
[telemetry]
interval = "0.25s"

[offenders]
input_bound_window = "2s"
input_bound_cpu = 0.25  # a shared test machine may give the spinning job little of a core
"""


def test_a_job_that_starves_its_card_is_an_offender_with_the_fitting_advice(make_host):
    host = host_with(make_host, FAST)
    spin = "import time\nend = time.time() + 120\nwhile time.time() < end: pass"
    job = host.submit("-m", "10G", "--", "sh", "-c",
                      f"{sys.executable} -m gq.sim.burn --mem 2G --util 10 --seconds 120 & "
                      f"exec {sys.executable} -c '{spin}'")
    host.wait_state(job, "running")

    def diagnosed():
        return next((o for o in host.call("offenders")
                     if o["kind"] == "input_bound" and o["job_id"] == job), None)

    found = wait_for(diagnosed, timeout=40, what="the input-bound diagnosis")
    assert "it starves its cards of data" in found["evidence"]
    assert "over the last 2s on GPU 0" in found["evidence"]
    table = host.gq("offenders").stdout
    assert "input-bound" in table and f"job {job}" in table and "num_workers" in table
