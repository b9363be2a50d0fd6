"""Freezing on a real daemon with simulated cards: a preempted job's GPU state goes to host
memory and comes back, its process never restarted; each failed step, the probe and host memory
send it down the signal path instead, saying why; a daemon killed meanwhile loses nothing."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys

import psutil
import pytest

from tests.support.hosts import wait_for
from gq.gpu.sim_checkpoint import frozen_pids, write_control
from gq.sim.burn import loss_at
from tests.support.jobs import gated

G = 1 << 30
STEPS = 150


def host_with(make_host, sim_gpus="1x80G", freeze_ram="100G", mode="freeze", **control):
    host = make_host(sim_gpus, start=False)
    with open(host.home / "config.toml", "a") as config:
        config.write(f'\n[preemption]\nexempt = "0s"\ngrace = "5s"\nlock_timeout = "1s"\n'
                     f'freeze_ram = "{freeze_ram}"\nmode = {{low = "{mode}"}}\n')
    host.start()
    write_control(host.home / "sim", {"host_ram": 200 * G, **control})
    return host


def trainer(mem="30G", steps=STEPS, *opts):
    """A low-tier job on one card that prints its loss each step (gq.sim.burn --steps)."""
    return ("-p", "low", *opts, "--", sys.executable, "-m", "gq.sim.burn", "--mem", mem,
            "--steps", str(steps), "--step-time", "0.03")


def losses(log: str) -> list[tuple[int, str]]:
    return [(int(m[1]), m[2]) for m in re.finditer(r"^step (\d+) loss (\S+)$", log, re.M)]


def past_step(host, job_id: int, n: int) -> None:
    """Until the job has printed step n, and the daemon's card reading shows its process."""
    wait_for(lambda: any(s >= n for s, _ in losses(host.log(job_id))),
             what=f"job {job_id} past step {n}")
    seen_on_card(host, job_id)


NOT_SEEN = ("its processes on its card are not known yet",
            "no process of it holds memory on its card: nothing to freeze")


def why_not_frozen(host, job_id: int) -> str | None:
    return (host.job(job_id).get("freeze") or {}).get("why")


def seen_on_card(host, job_id: int, why: str | None = None) -> None:
    """Until the daemon has read the job's memory on its card: it reads the cards once a tick,
    and a preemption decided on an older reading finds nothing to freeze."""
    if why is None:
        wait_for(lambda: why_not_frozen(host, job_id) not in NOT_SEEN,
                 what=f"the daemon to read job {job_id} on its card")
    else:
        wait_for(lambda: why_not_frozen(host, job_id) == why,
                 what=f"the daemon to say of job {job_id}: {why}")


def assert_ran_through_once(host, job_id: int) -> None:
    """Every step once, in order, and the last loss that of a run never interrupted."""
    steps = losses(host.log(job_id))
    assert [s for s, _ in steps] == list(range(1, STEPS + 1))
    assert float(steps[-1][1]) == pytest.approx(loss_at(STEPS), abs=1e-9)


def requeued(host, job_id: int) -> dict:
    """The job once its preempted run ended and it was queued again (it may run again at once)."""
    wait_for(lambda: any(e["old_state"] == "preempting" and e["new_state"] == "pending"
                         for e in host.job(job_id)["events"]), timeout=30,
             what=f"job {job_id} to be requeued")
    return host.job(job_id)


def processes_of(host, job_id: int) -> list[psutil.Process]:
    """The job's processes: its shim's descendants (the shim wrote its pid in the run's lock)."""
    shim = host.shim_pid(job_id)
    return psutil.Process(shim).children(recursive=True)


def event_details(host, job_id: int) -> list[str]:
    """Each event's reason and detail, as `gq show` prints them."""
    return ["; ".join(filter(None, (e["reason"], e["detail"])))
            for e in host.job(job_id)["events"]]


def test_a_low_job_is_frozen_for_a_high_one_and_continues_exactly_where_it_was(make_host):
    host = host_with(make_host)
    low = host.submit(*trainer())
    past_step(host, low, 10)
    gate = host.work / "gate"
    high = host.submit("-p", "high", *gated(gate))
    host.wait_state(high, "running")
    job = host.wait_state(low, "frozen")
    assert (job["host_mem"], job["gpu_ids"], job["restarts"]) == (30 * G, [], 0)
    assert job["reason"] == f"preempted for job {high} (high): frozen, 30G in host memory"
    assert job["frozen_cards"][0]["index"] == 0 and job["freeze_op"] is None
    assert all(p.status() == psutil.STATUS_STOPPED for p in processes_of(host, low))
    # The card is free once the daemon reads it again (once a tick).
    card = wait_for(lambda: next((c for c in host.call("gpus") if c["memory_used"] == 0), None),
                    what="the card read free")
    assert card["jobs"][0]["id"] == high
    assert "frozen" in host.gq("why", str(low)).stdout
    assert "; frozen since " in host.gq("show", str(low)).stdout

    gate.touch()
    host.wait_state(low, "running")
    ended = host.wait_ended(low, timeout=60)
    assert (ended["state"], ended["restarts"], ended["preemptions"]) == ("completed", 0, 0)
    assert_ran_through_once(host, low)
    details = event_details(host, low)
    assert any(re.fullmatch(r".*: frozen, 30G in host memory; frozen in \d+\.\ds \(lock "
                            r"\d+\.\ds, checkpoint \d+\.\ds, stop \d+\.\ds\)", d)
               for d in details), details
    assert any(re.fullmatch(r"thawed on GPU 0 in \d+\.\ds \(restore \d+\.\ds, unlock "
                            r"\d+\.\ds\)", d) for d in details), details


def test_gq_logs_f_keeps_following_a_job_while_it_is_frozen(make_host):
    """#34 item 9: `gq logs -f` took `frozen` for an end and exited while the job waited to be
    thawed; it follows until the job ends, and prints every step once."""
    host = host_with(make_host)
    low = host.submit(*trainer(steps=40))
    past_step(host, low, 5)
    seen = host.work / "followed.out"
    with open(seen, "wb") as out:
        follower = subprocess.Popen([sys.executable, "-m", "gq", "logs", "-f", str(low)],
                                    env=host.env, stdout=out, stderr=subprocess.PIPE)
    try:
        gate = host.work / "gate"
        host.submit("-p", "high", *gated(gate))
        host.wait_state(low, "frozen")
        # Caught up with a log that no longer grows: its next looks find the job frozen.
        wait_for(lambda: seen.read_text() == host.log(low), what="the follower to catch up")
        wait_for(lambda: any(c["memory_used"] == 0 for c in host.call("gpus")),
                 what="the card read free")
        assert follower.poll() is None, follower.stderr.read()
        gate.touch()
        assert host.wait_ended(low, timeout=60)["state"] == "completed"
        assert follower.wait(timeout=30) == 0
    finally:
        follower.kill()
    assert seen.read_text() == host.log(low)
    assert [step for step, _ in losses(host.log(low))] == list(range(1, 41))


def test_a_frozen_job_is_thawed_on_another_card_of_its_model(make_host):
    host = host_with(make_host, "2x80G")
    low = host.submit(*trainer())
    gate_other, gate_high = host.work / "other", host.work / "high"
    other = host.submit("-p", "normal", *gated(gate_other))  # the other card, not preemptible
    host.wait_state(other, "running")
    past_step(host, low, 5)
    high = host.submit("-p", "high", *gated(gate_high))
    host.wait_state(low, "frozen")
    host.wait_state(high, "running")
    gate_other.touch()  # card 1 frees while the high job keeps card 0
    job = host.wait_state(low, "running")
    assert job["gpu_ids"] == [1]
    wait_for(lambda: host.call("gpus")[1]["jobs"][0].get("used") == 30 * G,
             what="the thawed job's memory on card 1")
    gate_high.touch()
    assert host.wait_ended(low, timeout=60)["state"] == "completed"
    assert_ran_through_once(host, low)


@pytest.mark.parametrize("control, why", [
    ({"fail": {"lock": "timeout"}}, "not frozen: lock: timed out after 1s"),
    ({"fail": {"checkpoint": "CUDA_ERROR_ILLEGAL_STATE"}},
     "not frozen: checkpoint: CUDA_ERROR_ILLEGAL_STATE"),
    ({"unsupported": "libcuda.so.1 does not export cuCheckpointProcessLock"},
     "not frozen: GPU 0: libcuda.so.1 does not export cuCheckpointProcessLock"),
])
def test_a_freeze_that_cannot_be_done_takes_the_signal_path_and_says_why(make_host, control,
                                                                         why):
    host = host_with(make_host, **control)
    low = host.submit(*trainer(steps=100000))
    past_step(host, low, 3)
    high = host.submit("-p", "high", "--", "true")
    host.wait_state(high, "running", "completed", timeout=30)
    job = requeued(host, low)
    assert (job["restarts"], job["preemptions"]) == (1, 1)
    assert job["freeze_note"] == why
    assert any(why in d and "signal path" in d for d in event_details(host, low))
    assert why in host.gq("show", str(low)).stdout
    assert frozen_pids(host.home / "sim") == {}  # nothing left locked


def test_a_job_too_big_for_the_host_memory_left_takes_the_signal_path(make_host):
    host = host_with(make_host, freeze_ram="10G")
    low = host.submit(*trainer(steps=100000))
    past_step(host, low, 3)
    assert "cannot be frozen now: its 30.0 GiB on the card do not fit" in host.gq(
        "show", str(low)).stdout
    high = host.submit("-p", "high", "--", "true")
    job = requeued(host, low)
    assert job["freeze_note"] == ("not frozen: its 30.0 GiB on the card do not fit in the host "
                                  "memory [preemption] freeze_ram leaves (10.0 GiB)")
    host.wait_ended(high)


def test_a_job_of_several_processes_takes_the_signal_path(make_host):
    host = host_with(make_host)
    burn = f"{sys.executable} -m gq.sim.burn --mem 5G"
    low = host.submit("-p", "low", "--", "sh", "-c", f"{burn} & {burn} & wait")
    wait_for(lambda: host.log(low).count("holding") == 2, what="its two processes")
    seen_on_card(host, low, "2 of its processes use its card (multi-process, NCCL): only a "
                            "single process is frozen")
    high = host.submit("-p", "high", "--", "true")
    job = requeued(host, low)
    assert job["freeze_note"] == ("not frozen: 2 of its processes use its card (multi-process, "
                                  "NCCL): only a single process is frozen")
    host.wait_ended(high)


def test_a_thaw_that_fails_takes_the_signal_path(make_host):
    host = host_with(make_host)
    low = host.submit(*trainer(steps=100000))
    past_step(host, low, 3)
    gate = host.work / "gate"
    high = host.submit("-p", "high", *gated(gate))
    host.wait_state(low, "frozen")
    write_control(host.home / "sim", {"fail": {"restore": "CUDA_ERROR_UNKNOWN"}})
    gate.touch()
    host.wait_ended(high)
    job = requeued(host, low)
    assert job["restarts"] == 1 and job["host_mem"] is None
    assert job["freeze_note"] == "thaw failed: restore: CUDA_ERROR_UNKNOWN"


def test_a_frozen_job_survives_a_daemon_killed_with_sigkill(make_host):
    host = host_with(make_host)
    low = host.submit(*trainer())
    past_step(host, low, 10)
    gate = host.work / "gate"
    high = host.submit("-p", "high", *gated(gate))
    host.wait_state(low, "frozen")
    procs = processes_of(host, low)
    host.kill_daemon()
    assert all(p.is_running() and p.status() == psutil.STATUS_STOPPED for p in procs)
    host.start()
    job = host.job(low)
    assert (job["state"], job["host_mem"]) == ("frozen", 30 * G)
    assert host.job(high)["state"] == "running"
    gate.touch()
    assert host.wait_ended(low, timeout=60)["state"] == "completed"
    assert_ran_through_once(host, low)


def test_a_freeze_under_way_when_the_daemon_is_killed_is_finished(make_host):
    host = host_with(make_host, delay={"checkpoint": 2.0})
    low = host.submit(*trainer())
    past_step(host, low, 10)
    gate = host.work / "gate"
    high = host.submit("-p", "high", *gated(gate))
    wait_for(lambda: host.job(low)["freeze_op"] == "freeze", what="the freeze to begin")
    host.kill_daemon()
    host.start()
    host.wait_state(low, "frozen")
    host.wait_state(high, "running")
    gate.touch()
    assert host.wait_ended(low, timeout=60)["state"] == "completed"
    assert_ran_through_once(host, low)


def test_a_frozen_job_can_be_requeued_or_cancelled(make_host):
    host = host_with(make_host, "2x80G")
    first, second = host.submit(*trainer(steps=100000)), host.submit(*trainer(steps=100000))
    for job in (first, second):
        past_step(host, job, 3)
    highs = [host.submit("-p", "normal", *gated(host.work / "gate")) for _ in range(2)]
    for job in (first, second):
        host.wait_state(job, "frozen")
    host.gq("requeue", str(first))
    job = requeued(host, first)
    assert (job["restarts"], job["host_mem"]) == (1, None)
    host.gq("cancel", str(second))
    assert host.wait_ended(second)["state"] == "cancelled"
    assert frozen_pids(host.home / "sim") == {}
    (host.work / "gate").touch()
    for high in highs:
        host.wait_ended(high)


def test_gq_gpus_says_whether_jobs_on_each_card_can_be_frozen(make_host):
    host = host_with(make_host, "2x80G", cards={"1": "persistence mode is off"})
    out = host.gq("gpus").stdout
    assert ("freezing (driver simulated): GPU 0 can (a thaw may move a job to a card of its "
            "model); GPU 1 cannot: persistence mode is off") in out
    low = host.submit(*trainer(steps=100000))
    past_step(host, low, 1)
    assert "freeze (--preempt-mode)" not in host.gq("show", str(low)).stdout
    assert "freeze ([preemption] mode of the low tier); can be frozen now (30G to host memory)" \
        in host.gq("show", str(low)).stdout


def test_a_bogus_preempt_mode_is_one_line_exit_2_and_nothing_queued(make_host):
    host = make_host()
    out = host.gq("submit", "--preempt-mode", "bogus", "--", "true", check=False)
    assert (out.returncode, out.stderr) == (
        2, "gq: --preempt-mode 'bogus': expected freeze, signal or auto\n")
    with pytest.raises(Exception, match="expected freeze, signal or auto"):
        host.call("submit", command=["true"], cwd=str(host.work), preempt_mode="thaw")
    assert host.count_jobs() == 0
    job = host.job(host.submit("--preempt-mode", "AUTO", "--hold", "--", "true"))
    assert job["preempt_mode"] == "auto"


@pytest.mark.parametrize("text, error", [
    ('mode = "thaw"', "[preemption] mode = 'thaw': expected freeze | signal | auto, or a table "
                      'of tiers such as {low = "auto"}'),
    ('mode = {top = "auto"}', "[preemption] mode: top: expected high, normal or low"),
    ('mode = {low = "cold"}', "[preemption] mode: low = 'cold': expected freeze | signal | auto"),
    ('freeze_ram = "12XB"', "[preemption] freeze_ram = '12XB': expected a size like 20G, 512M or "
                            "1.5T; or a share like 25%"),
    ('freeze_ram = "150%"', "[preemption] freeze_ram = '150%': expected a size like 64G or a "
                            "share of the host's memory like 25%"),
    ('lock_timeout = "soon"', "[preemption] lock_timeout = "),
])
def test_the_freeze_settings_are_checked_naming_the_line(tmp_path, text, error):
    from gq.config import load_config
    from gq.protocol import GqError

    path = tmp_path / "config.toml"
    path.write_text(f"[host]\nram = \"128G\"\n\n[preemption]\n{text}\n")
    with pytest.raises(GqError) as e:
        load_config(path)
    assert str(e.value).startswith(f"{path} line 5: {error}")


def test_the_freeze_settings_and_their_defaults(tmp_path):
    from gq.config import load_config

    path = tmp_path / "config.toml"
    path.write_text('[host]\nram = "128G"\n')
    cfg = load_config(path)
    assert cfg.preemption.modes == {"high": "signal", "normal": "signal", "low": "signal"}
    assert cfg.preemption.freeze_ram_bytes(cfg.host_ram) == 32 * G  # a quarter of [host] ram
    path.write_text('[host]\nram = "128G"\n[preemption]\nmode = "auto"\nfreeze_ram = "50%"\n'
                    'lock_timeout = "30s"\n')
    cfg = load_config(path).preemption
    assert cfg.modes == {"high": "auto", "normal": "auto", "low": "auto"}
    assert (cfg.freeze_ram_bytes(128 * G), cfg.lock_timeout) == (64 * G, 30.0)
    path.write_text('[preemption]\nmode = {low = "freeze"}\nfreeze_ram = "64G"\n')
    cfg = load_config(path).preemption
    assert cfg.modes["low"] == "freeze" and cfg.modes["normal"] == "signal"
    assert cfg.freeze_ram_bytes(None) == 64 * G


def test_a_second_helper_for_the_same_freeze_ends_with_the_first(tmp_path):
    """A daemon killed just after it started a helper, before the helper took its lock: the
    next daemon finds no helper and starts another. That one must end when the first does,
    whose record tells how it went, and not at once, which read as a helper that died
    without saying (the job then took the signal path while the first froze it)."""
    lock, record = tmp_path / "1.freeze.lock", tmp_path / "1.freeze"
    first = os.open(lock, os.O_RDWR | os.O_CREAT)  # the first helper, at work
    fcntl.flock(first, fcntl.LOCK_EX)
    spec = {"op": "freeze", "job_id": 1, "pid": 0, "shim": 0, "record": str(record),
            "lock": str(lock), "checkpointer": {}, "timeout": 1.0, "remap": {}, "need": {}}
    second = subprocess.Popen([sys.executable, "-m", "gq.daemon.freezer", json.dumps(spec)])
    try:
        waiting = f"-> FLOCK  ADVISORY  WRITE {second.pid} "  # /proc/locks: a blocked flock
        wait_for(lambda: second.poll() is not None or any(
            waiting in line for line in open("/proc/locks")), what="the second helper to wait")
        assert second.poll() is None  # waiting for the first, not ended
        record.write_text(json.dumps({"op": "freeze", "done": True, "ok": True}))
        fcntl.flock(first, fcntl.LOCK_UN)
        assert second.wait(timeout=20) == 0
        assert json.loads(record.read_text())["ok"] is True  # the first's record, untouched
    finally:
        os.close(first)
        if second.poll() is None:
            second.kill()
