"""Card telemetry: what each job uses of each card, samples and rollups in the store, the history
API, unknown readings that stay unknown, and --mem auto learnt from past runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.hosts import wait_for
from tests.support.fakes.fake_pynvml import GIB, FakeDevice, FakeNvml, FakeProcess

from gq.daemon.attribution import Attributor, Owner, split_memory
from gq.daemon.telemetry import Telemetry, job_card_use
from gq.gpu.nvml import NvmlBackend
from gq.gpu.sim import write_faults
from gq.config.telemetry import TelemetryConfig
from gq.model import Gpu, GpuProcess, Job, JobState
from gq.store import Store
from gq.store.samples import CardSample, JobSample

G = 1 << 30
BURN = [sys.executable, "-m", "gq.sim.burn"]


def card(index: int, util: int | None, procs: list[GpuProcess] | None) -> Gpu:
    return Gpu(index=index, uuid=f"GPU-{index}", name="test", memory_total=80 * G,
               visible_id=str(index), utilization=util, memory_used=None if procs is None
               else sum(p.used_memory or 0 for p in procs), processes=procs)


def running(job_id: int, gpu_ids: list[int], mem: int | None = None) -> Job:
    return Job(id=job_id, user="ann", command=["x"], cwd="/", state=JobState.RUNNING,
               gpu_ids=gpu_ids, mem=mem, started_at=0.0)


# --- what a job uses of a card ---------------------------------------------------------------


def test_a_job_alone_on_its_card_gets_the_cards_utilisation():
    cards = [card(0, 64, [GpuProcess(10, 5 * G, utilization=None)])]
    owners = {10: Owner(10, 1, alive=True)}
    [use] = job_card_use(cards, owners, {1: running(1, [0])})
    assert (use.job_id, use.card, use.mem, use.util) == (1, 0, 5 * G, 64)


def test_on_a_shared_card_each_job_gets_its_own_processes_utilisation():
    cards = [card(0, 90, [GpuProcess(10, 5 * G, 10), GpuProcess(11, 7 * G, 80),
                          GpuProcess(12, G, None)])]
    owners = {10: Owner(10, 1, True), 11: Owner(11, 2, True), 12: Owner(12, 3, True)}
    jobs = {i: running(i, [0], mem=20 * G) for i in (1, 2, 3, 4)}
    use = {u.job_id: (u.mem, u.util) for u in job_card_use(cards, owners, jobs)}
    # Job 3's process gives no utilisation: unknown. Job 4 runs nothing there: 0, measured.
    assert use == {1: (5 * G, 10), 2: (7 * G, 80), 3: (G, None), 4: (0, 0)}


def test_nothing_is_known_of_a_card_whose_processes_cannot_be_listed():
    cards = [card(0, 3, None)]
    [use] = job_card_use(cards, {}, {1: running(1, [0])})
    assert (use.mem, use.util) == (None, None)


def test_memory_a_process_will_not_report_is_unknown_not_zero():
    cards = [card(0, 50, [GpuProcess(10, None, 50)])]
    [use] = job_card_use(cards, {10: Owner(10, 1, True)}, {1: running(1, [0])})
    assert (use.mem, use.util) == (None, 50)


def test_memory_of_an_ended_job_or_a_claim_counts_as_outside():
    cards = [card(0, 0, [GpuProcess(10, 2 * G), GpuProcess(11, 3 * G), GpuProcess(12, 4 * G)])]
    owners = {10: Owner(10, 1, True), 11: Owner(11, 9, True),  # job 9 has ended
              12: Owner(12, 1, True, by_environment=True)}
    external, per_job = split_memory(cards, owners, holding={1})
    assert (external, per_job) == ({0: 7 * G}, {1: 2 * G})


# --- the NVML backend, sampled ----------------------------------------------------------------


def gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_nvml_sampling_keeps_what_could_not_be_read_unknown(tmp_path):
    """A lost card, fields the driver does not support, and a process that vanished between
    listing the processes and asking for their utilisation."""
    me, vanished = os.getpid(), gone_pid()
    devices = [
        FakeDevice("GPU-a", used=12 * GIB, util=70, processes=[
            FakeProcess(me, 10 * GIB, sm_util=40), FakeProcess(vanished, 2 * GIB)]),
        FakeDevice("GPU-b", used=GIB, util=30),
        FakeDevice("GPU-c", used=3 * GIB, util=55, unsupported={
            "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
            "nvmlDeviceGetProcessUtilization"}, processes=[FakeProcess(me, 3 * GIB, 99)]),
    ]
    backend = NvmlBackend(FakeNvml(devices))
    backend.read()
    devices[1].lost = True
    cards = backend.read()
    assert [p.utilization for p in cards[0].processes] == [40, None]
    assert cards[1].processes is None and cards[2].processes[0].utilization is None

    store = Store(tmp_path / "gq.db")
    job = running(7, [0, 1, 2])
    owners = Attributor().owners(cards, {me: 7})  # this test's process is job 7's
    assert owners[vanished].alive is False and owners[me].job_id == 7
    external, _ = split_memory(cards, owners, {7})
    telemetry = Telemetry(store.samples, TelemetryConfig(interval=5.0))
    assert telemetry.observe(cards, owners, {7: job}, external, now=1000.0)
    rows = {r["card"]: r for r in store.samples.card_series(0)}
    assert (rows[0]["utilization"], rows[0]["memory_used"], rows[0]["external_used"]) == (
        70, 12 * GIB, 2 * GIB)
    assert [rows[1][k] for k in ("utilization", "memory_used", "external_used", "temperature",
                                 "power_w")] == [None] * 5
    assert (rows[2]["utilization"], rows[2]["temperature"], rows[2]["power_w"]) == (55, None,
                                                                                    None)
    used = {r["card"]: (r["memory_used"], r["utilization"])
            for r in store.samples.job_series(7, 0)}
    # Card 0 is shared with a dead process: the job's own sample. Card 2: alone, the card's.
    assert used == {0: (10 * GIB, 40), 1: (None, None), 2: (3 * GIB, 55)}
    assert telemetry.usage_of(job).peaks == {0: 10 * GIB, 2: 3 * GIB}


def test_a_run_begun_before_the_daemon_gets_its_usage_back_and_one_begun_since_reads_nothing(
        tmp_path):
    """After a restart, a run's peaks so far are read back from the store; a run this daemon
    started has had its usage in memory from its first sample, so one it never sampled (off
    the cards, or short) had none, and its end reads nothing."""
    store = Store(tmp_path / "gq.db")
    for job_id, at in ((7, 1010.0), (8, 1610.0)):  # in each run: which only the first may own
        store.samples.write(at, [CardSample(0, 50, 9 * GIB, 0, 40, 100.0)],
                            [JobSample(job_id, 0, 6 * GIB, 50)])
    telemetry = Telemetry(store.samples, TelemetryConfig(interval=5.0), since=1500.0)
    before, since = running(7, [0]), running(8, [0])
    before.started_at, since.started_at = 1000.0, 1600.0
    assert telemetry.run_record(before)["peaks"] == {0: 6 * GIB}
    assert telemetry.run_record(since)["peaks"] == {}


# --- the store: samples and rollups ------------------------------------------------------------


def test_rollups_add_up_and_the_minute_being_filled_reads_with_them(tmp_path):
    samples = Store(tmp_path / "gq.db").samples
    t0 = 1_700_000_040.0  # the start of a minute
    for i, util in enumerate([10, 20, None, 40, 50]):  # 20 s apart: 3 in the first minute
        samples.write(t0 + 20 * i, [CardSample(0, util, (i + 1) * G, 0, 40 + i, 100.0)],
                      [JobSample(3, 0, i * G, util)])
    samples.roll_up(t0 + 60)  # the first minute has ended; the second has not
    [first, second] = samples.card_minutes(t0)
    assert (first["n"], first["util_n"], first["util_sum"], first["util_max"]) == (3, 2, 30, 20)
    assert (first["mem_max"], first["mem_avg"], first["temp_max"]) == (3 * 1024, 2 * 1024, 42)
    assert (second["minute"] - first["minute"], second["n"], second["util_sum"]) == (1, 2, 90)
    assert [(r["n"], r["util_sum"], r["mem_max"]) for r in samples.job_minutes(t0, 3)] == [
        (3, 30, 2 * 1024), (2, 90, 4 * 1024)]
    assert samples.job_peaks(3, t0) == {0: 4 * G}
    samples.prune(raw_before=t0 + 61, rollups_before=t0)
    assert [r["at"] for r in samples.card_series(0)] == [t0 + 80]
    assert len(samples.card_minutes(t0)) == 2  # the rolled-up minute outlives its raw rows


def test_a_database_from_before_telemetry_is_upgraded_with_its_runs(tmp_path):
    from sqlite_utils import Database

    from gq.store.schema import migrations

    old = Database(tmp_path / "gq.db")
    migrations.apply(old, stop_before="m006_telemetry")
    old.execute("INSERT INTO jobs (user, uid, state, priority, gpus, cpus, command, cwd, env, "
                "deps, submitted_at, started_at, ended_at) VALUES ('ann', 1000, 'completed', "
                "'normal', 1, 1, '[\"x\"]', '/', '{}', '{}', 5.0, 6.0, 9.0)")
    old.execute("INSERT INTO runs (job_id, user, gpus, weight, started_at, ended_at, state) "
                "VALUES (1, 'ann', 1, 1.0, 6.0, 9.0, 'completed')")
    old.conn.commit()
    old.close()
    store = Store(tmp_path / "gq.db")
    [run] = store.history.runs_between(0, 10)
    assert (run["weight"], run["peaks"], run["peak_mem"], run["cmd_key"]) == (1.0, None, None,
                                                                              None)
    assert store.samples.card_minutes(0) == [] and store.offences.still_open() == []


# --- a real daemon ------------------------------------------------------------------------------


def fast_host(make_host, sim: str = "2x80G", extra: str = ""):
    host = make_host(sim, start=False)
    with open(host.home / "config.toml", "a") as f:
        f.write('\n[telemetry]\ninterval = "0.2s"\n' + extra)
    host.start()
    return host


def test_samples_of_cards_and_jobs_reach_the_history_api(make_host):
    host = fast_host(make_host)
    job = host.submit("--mem", "20G", "--", *BURN, "--mem", "6G", "--util", "70")
    gpu = host.wait_state(job, "running")["gpu_ids"][0]

    def job_points():
        points = host.call("samples", job=str(job), since=60)["points"]
        return [p for p in points if p["memory_used"] == 6 * G] or None

    points = wait_for(job_points, what="samples of the job")
    assert {(p["gpu"], p["utilization"]) for p in points} == {(gpu, 70)}
    history = host.call("samples", gpu=gpu, since=60)
    assert history["resolution"] == "raw" and history["interval"] == 0.2
    assert any(p["utilization"] == 70 and p["memory_used"] == 6 * G
               for p in history["points"])
    assert set(history["points"][0]) == {"at", "gpu", "utilization", "memory_used",
                                         "external_used", "temperature", "power_w"}
    minutes = host.call("samples", since=600, resolution="minute")["points"]
    assert minutes and all(p["samples"] >= 1 for p in minutes)
    usage = host.job(job)["usage"]
    # Samples taken before the burn began count too: the card was idle then.
    assert usage["peak_mem_by_gpu"] == {str(gpu): 6 * G} and 0 < usage["util_mean"] <= 70
    shown = host.gq("show", str(job)).stdout
    assert re.search(rf"current run: peak 6G on GPU {gpu}; mean utilisation \d+%", shown)
    bad = host.gq("show", "999", check=False)  # the op's own errors stay one line
    assert bad.returncode == 2


def test_a_card_that_cannot_be_read_is_unknown_and_never_idle(make_host):
    host = fast_host(make_host, extra='[offenders]\nidle_window = "1s"\n')
    a = host.submit("--", *BURN, "--mem", "1G", "--util", "3")
    b = host.submit("--", *BURN, "--mem", "1G", "--util", "3")
    card_a = host.wait_state(a, "running")["gpu_ids"][0]
    card_b = host.wait_state(b, "running")["gpu_ids"][0]
    write_faults(host.home / "sim", {card_b: ["lost"]})

    def idle_jobs():
        found = {o["job_id"] for o in host.call("offenders") if o["kind"] == "idle"}
        return found if a in found else None

    assert wait_for(idle_jobs, what="job a to be idle") == {a}
    cards = {c["index"]: c for c in host.call("gpus")}
    assert (cards[card_b]["utilization"], cards[card_b]["processes"]) == (None, None)
    assert cards[card_a]["utilization"] == 3

    def unknown_for_a_window():
        points = host.call("samples", gpu=card_b, since=1.5)["points"]
        return len(points) >= 3 and all(p["utilization"] is None for p in points)

    wait_for(unknown_for_a_window, what="a window of unknown readings of card b")
    assert b not in idle_jobs()
    # Once the card answers again, b is found idle like a: the check above could fail.
    write_faults(host.home / "sim", {})
    wait_for(lambda: b in idle_jobs(), what="job b to be idle once its card reads again")


def test_mem_auto_learns_from_completed_runs_and_submit_warns_far_from_history(make_host):
    host = fast_host(make_host)
    command = ["--", *BURN, "--mem", "5G", "--seconds", "1.5"]
    first = host.gq("submit", "--mem", "auto", *command)
    assert "no completed run of this command in this directory" in first.stderr
    assert host.wait_ended(int(first.stdout))["state"] == "completed"
    assert host.job(int(first.stdout))["mem"] is None  # whole cards
    auto = host.gq("submit", "--mem", "auto", *command)
    job = host.job(int(auto.stdout))
    assert job["mem"] == 6 * G  # the 5G peak plus 20%
    assert auto.stderr == (f"gq: --mem auto: 6G per GPU, the 5G peak of the last 1 run "
                           f"(jobs {first.stdout.strip()}) plus 20%\n")
    low = host.gq("submit", "--mem", "2G", *command)
    assert "warning: --mem 2G is less than the 5G this command peaked at" in low.stderr
    high = host.gq("submit", "--mem", "40G", *command)
    assert "warning: --mem 40G is over 2x what this command used here" in high.stderr
    fine = host.gq("submit", "--mem", "8G", *command)
    assert fine.stderr == ""
    other_dir = host.gq("submit", "--mem", "auto", "--cwd", str(host.home), *command)
    assert "no completed run" in other_dir.stderr
    as_json = host.gq("submit", "--json", "-m", "auto", *command)
    assert '"notes": [' in as_json.stdout


def test_show_lists_the_jobs_processes_on_its_cards(host):
    job = host.submit("--mem", "10G", "--", *BURN, "--mem", "3G", "--util", "50")
    shown = wait_for(lambda: host.job(job)["processes"], what="the burn on its card")
    (proc,) = shown
    assert proc["gpu"] == host.job(job)["gpu_ids"][0] and proc["used_memory"] == 3 * GIB
    assert "gq.sim.burn --mem 3G" in proc["command"]
    shown_text = host.gq("show", str(job)).stdout
    assert f"  pid {proc['pid']}  GPU {proc['gpu']}  3G  " in shown_text
    host.gq("cancel", str(job))
    host.wait_ended(job)
    assert host.job(job)["processes"] == []
