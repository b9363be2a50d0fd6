"""Preemption on a real daemon: the checkpoint signal, grace, requeue and resume, exempt time,
the requeue cap, `gq requeue`, and a daemon killed while a job is being preempted."""

from __future__ import annotations

import re
import shlex
import signal
import sys

import psutil

from tests.support.hosts import wait_for
from tests.support.jobs import gated

from tests.support.paths import ROOT

TRAINER = ROOT / "docs" / "examples" / "train_minimal.py"
PY = shlex.quote(sys.executable)
# A child of the trainer that says which signals reach it (a data-loader worker, say).
WORKER = ("import signal, time\n"
          "signal.signal(signal.SIGUSR1, lambda s, f: print('worker got', s, flush=True))\n"
          "while True: time.sleep(1)")
# A job that will not stop on SIGTERM: only SIGKILL ends it.
STUBBORN = ["--", sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
            "signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"]


def trainer(steps: int, step_time: float = 0.02, every: int = 25, worker: bool = False):
    cmd = f"{PY} {TRAINER} --steps {steps} --step-time {step_time} --every {every}"
    if worker:  # exec: the trainer stays the job's main process, the worker its child
        return ["--", "sh", "-c", f"{PY} -c {shlex.quote(WORKER)} & exec {cmd}"]
    return ["--", *shlex.split(cmd)]


def host_with(make_host, sim_gpus: str = "4x80G", extra: str = "", **preemption):
    host = make_host(sim_gpus, start=False)
    with open(host.home / "config.toml", "a") as config:
        config.write("\n[preemption]\n")
        for key, value in preemption.items():
            config.write(f"{key} = {value!r}\n")  # 'literal' strings are TOML too
        config.write(extra)
    host.start()
    return host


def events(host, job_id: int) -> list[dict]:
    return host.job(job_id)["events"]


def entered(host, job_id: int, state: str) -> list[float]:
    """When the job went into `state`, each time."""
    return [e["at"] for e in events(host, job_id)
            if e["new_state"] == state and e["old_state"] != state]


def requeue_event(host, job_id: int) -> dict:
    return next(e for e in events(host, job_id) if e["old_state"] == "preempting")


def saved_step(log: str, signal_name: str = "SIGUSR1") -> int:
    m = re.search(rf"checkpoint at step (\d+) on {signal_name}; exiting", log)
    assert m, log
    return int(m[1])


def test_a_high_job_preempts_a_low_one_which_checkpoints_and_resumes(make_host):
    host = host_with(make_host, exempt="0s")
    # A grace far longer than the wait below: the high job starts because the low one saved
    # and exited on its signal (the requeue's detail says so), not because the grace ran out.
    low = host.submit("-p", "low", "-g", "4", "--signal", "USR1", "--grace", "10m",
                      *trainer(400, worker=True))
    host.wait_state(low, "running")
    wait_for(lambda: "checkpoint at step 50\n" in host.log(low), what="the trainer's progress")
    gate = host.work / "gate"
    high = host.submit("-p", "high", *gated(gate))
    host.wait_state(high, "running", timeout=60)

    job = host.job(low)
    assert (job["state"], job["restarts"], job["preemptions"]) == ("pending", 1, 1)
    preempting = next(e for e in job["events"] if e["new_state"] == "preempting")
    assert preempting["reason"] == f"preempted for job {high} (high)"
    requeued = requeue_event(host, low)
    assert requeued["new_state"] == "pending"
    assert requeued["detail"] == "requeued: it exited (exit code 138) after SIGUSR1"
    log = host.log(low)
    step = saved_step(log)
    assert "worker got" not in log  # the main process only

    gate.touch()
    assert host.wait_ended(high)["state"] == "completed"
    ended = host.wait_ended(low, timeout=60)
    assert (ended["state"], ended["restarts"]) == ("completed", 1)
    log = host.log(low)
    assert f"resumed from step {step} (restart 1)" in log
    assert log.count("starting at step 0") == 1
    assert f"done at step 400, total {sum(range(401))}" in log


def test_a_job_that_ignores_the_signal_is_killed_at_grace(make_host):
    host = host_with(make_host, "1x80G", exempt="0s")
    low = host.submit("-p", "low", "--grace", "2s", *STUBBORN)
    wait_for(lambda: "ready" in host.log(low), what="the job to ignore SIGTERM")
    high = host.submit("-p", "high", "--", "true")
    host.wait_state(high, "running", "completed")
    (asked,) = entered(host, low, "preempting")
    requeued = requeue_event(host, low)
    assert requeued["at"] - asked >= 2.0  # the grace, SIGTERM, a second, SIGKILL
    assert re.fullmatch(r"requeued: killed: SIGTERM at \d\d:\d\d:\d\d UTC, still running, "
                        r"SIGKILL \d\.\ds later", requeued["detail"]), requeued["detail"]


# A job that ignores SIGTERM and says when each came, and beats until it is killed.
HEARTBEAT = ["--", sys.executable, "-c", "import signal, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: print('term', time.time(), flush=True))\n"
             "while True: print('beat', time.time(), flush=True); time.sleep(0.05)"]


def _times(host, job_id: int, word: str) -> list[float]:
    """The times of the lines the job has written whole (the last may be half written)."""
    whole = host.log(job_id).rpartition("\n")[0]
    return [float(line.split()[1]) for line in whole.splitlines()
            if line.startswith(word + " ")]


def test_the_kill_comes_no_earlier_than_the_grace_however_long_the_job_ran(make_host):
    """The shim counted the grace from its last wake-up before the request, not from the
    request: a job that had run quietly for a while was killed that much early (issue #34)."""
    host = host_with(make_host, "1x80G")
    job = host.submit("--grace", "2s", *HEARTBEAT)
    # The shim sleeps while the job runs: the longer before the request, the earlier the kill.
    wait_for(lambda: (beats := _times(host, job, "beat")) and beats[-1] - beats[0] >= 2.5,
             what="the job to have run a while")
    host.gq("requeue", str(job))
    requeued = wait_for(lambda: next((e for e in events(host, job)
                                      if e["old_state"] == "preempting"), None),
                        what="the requeue")
    first_term = _times(host, job, "term")[0]
    last_beat = max(t for t in _times(host, job, "beat"))
    assert last_beat - first_term >= 2.0 - 0.15, (first_term, last_beat)
    assert "SIGTERM at " in requeued["detail"], requeued["detail"]


def test_a_stopped_job_is_continued_to_checkpoint(make_host):
    host = host_with(make_host, "1x80G", exempt="0s")
    # A grace far longer than the wait below: the job was continued and saved, not killed at
    # the end of it.
    low = host.submit("-p", "low", "--signal", "USR1", "--grace", "10m",
                      *trainer(40123, every=10))
    wait_for(lambda: "checkpoint at step 10\n" in host.log(low), what="the trainer's progress")
    (main,) = [p for p in psutil.process_iter(["cmdline"])
               if "40123" in " ".join(p.info["cmdline"] or []) and str(TRAINER) in
               " ".join(p.info["cmdline"] or [])]
    main.send_signal(signal.SIGSTOP)
    wait_for(lambda: main.status() == psutil.STATUS_STOPPED, what="the job to stop")
    high = host.submit("-p", "high", "--", "true")
    host.wait_state(high, "running", "completed", timeout=60)
    assert saved_step(host.log(low)) >= 10


def test_exempt_time_holds_then_ends(make_host):
    host = host_with(make_host, "1x80G", exempt="4s")
    low = host.submit("-p", "low", "--grace", "5s", *gated(host.work / "never"))
    host.wait_state(low, "running")
    high = host.submit("-p", "high", "--", "true")
    why = host.wait_reason(high, "Resources")["why"]
    assert f"job(s) {low} may be preempted for it once past their exempt first minutes" in why
    assert host.job(low)["state"] == "running"
    host.wait_state(high, "running", "completed")
    (started,) = entered(host, low, "running")[:1]
    (preempted,) = entered(host, low, "preempting")
    assert preempted - started >= 4.0


def test_preemptible_is_per_job_and_by_tier(make_host):
    host = host_with(make_host, exempt="0s", extra="\n[limits]\nhigh_share = 1.0\n")
    keep = host.submit("-p", "low", "--no-preemptible", "-g", "2", *gated(host.work / "g"))
    other = host.submit(*gated(host.work / "g"))  # normal: not preemptible by default
    opted_in = host.submit("--preemptible", *gated(host.work / "g"))
    for job in (keep, other, opted_in):
        host.wait_state(job, "running")
    assert [host.job(j)["preemptible"] for j in (keep, other, opted_in)] == [False, False, True]
    assert host.job(host.submit("-p", "low", "--hold", "--", "true"))["preemptible"] is True

    first = host.submit("-p", "high", *gated(host.work / "g"))
    host.wait_state(first, "running")
    assert host.job(opted_in)["preemptions"] == 1
    second = host.submit("-p", "high", "--", "true")
    assert "preempt" not in host.wait_reason(second, "Resources")["why"]
    for job in (keep, other):
        assert (host.job(job)["state"], host.job(job)["restarts"]) == ("running", 0)


def test_the_requeue_cap_holds_the_job(make_host):
    host = host_with(make_host, "1x80G", exempt="0s", max_requeues=1)
    low = host.submit("-p", "low", "--grace", "5s", *gated(host.work / "never"))
    for round_ in (1, 2):
        host.wait_state(low, "running")
        high = host.submit("-p", "high", "--", "true")
        assert host.wait_ended(high)["state"] == "completed"
        assert host.job(low)["preemptions"] == round_
    held = host.wait_state(low, "held")
    assert held["reason"] == "Held"
    assert "preempted 2 times, more than [preemption] max_requeues = 1" in held["why"]
    assert "more than [preemption] max_requeues = 1" in events(host, low)[-1]["detail"]
    host.gq("release", str(low))
    host.wait_state(low, "running")


def test_gq_requeue_takes_the_checkpoint_path_and_signal_group(make_host):
    host = host_with(make_host, "1x80G")
    job = host.submit("--signal", "USR1", "--signal-group", "--grace", "30s",
                      *trainer(200, worker=True))
    wait_for(lambda: "checkpoint at step 25\n" in host.log(job), what="the trainer's progress")
    out = host.gq("requeue", str(job)).stdout
    assert out.strip() == (f"job {job}: sent SIGUSR1; requeued once it exits (SIGKILL if it "
                           "still runs after 30s)")
    ended = host.wait_ended(job, timeout=60)
    assert (ended["state"], ended["restarts"], ended["preemptions"]) == ("completed", 1, 0)
    log = host.log(job)
    step = saved_step(log)
    assert f"worker got {int(signal.SIGUSR1)}" in log  # the whole group
    assert f"resumed from step {step} (restart 1)" in log and "done at step 200" in log


def test_kill_9_while_preempting_loses_no_requeue(make_host):
    """Killed while the victim is in its grace: once with the victim ending while no daemon
    runs, once with the victim still stopping when the next daemon adopts it."""
    host = host_with(make_host, "2x80G", exempt="0s",
                     extra="\n[limits]\nhigh_share = 1.0\n")
    ends_unwatched = host.submit("-p", "low", "--grace", "3s", *STUBBORN)
    still_stopping = host.submit("-p", "low", "--grace", "10s", *STUBBORN)
    for job in (ends_unwatched, still_stopping):
        wait_for(lambda job=job: "ready" in host.log(job), what=f"job {job} to start")
    gate = host.work / "gate"
    high = host.submit("-p", "high", "-g", "2", *gated(gate))
    for job in (ends_unwatched, still_stopping):
        host.wait_state(job, "preempting")
    host.kill_daemon(signal.SIGKILL)
    wait_for(lambda: host.exit_record(ends_unwatched) is not None,
             what="the first victim's shim to record its exit")
    assert host.exit_record(still_stopping) is None
    host.start()
    host.wait_state(high, "running", timeout=30)
    for job in (ends_unwatched, still_stopping):
        again = host.job(job)
        assert (again["state"], again["restarts"], again["preemptions"]) == ("pending", 1, 1)
        assert [e["new_state"] for e in again["events"]].count("preempting") == 1
        assert "still running, SIGKILL" in requeue_event(host, job)["detail"]
    gate.touch()
    assert host.wait_ended(high)["state"] == "completed"
    host.wait_state(still_stopping, "running")


def test_a_preemption_recorded_but_not_yet_sent_is_sent_by_the_next_daemon(make_host):
    """The daemon records `preempting` before it asks the shim; one that dies in between
    leaves the asking to the next."""
    import sqlite3

    host = host_with(make_host, "1x80G")
    job = host.submit("-p", "low", "--grace", "1s", *STUBBORN)
    wait_for(lambda: "ready" in host.log(job), what="the job to start")
    host.kill_daemon(signal.SIGKILL)
    with sqlite3.connect(host.home / "gq.db") as db:  # the decision, as the dead daemon made it
        db.execute("UPDATE jobs SET state = 'preempting', reason = 'preempted for job 99 "
                   "(high)', preemptions = 1 WHERE id = ?", (job,))
    host.start()
    host.wait_state(job, "running")  # requeued after its grace, and started again
    again = host.job(job)
    assert (again["restarts"], again["preemptions"]) == (1, 1)
    assert re.fullmatch(r"requeued: killed: SIGTERM at \S+ UTC, still running, SIGKILL "
                        r"\d\.\ds later", requeue_event(host, job)["detail"])


def test_a_shim_of_an_older_gq_is_asked_with_sigterm(tmp_path):
    """A shim started before preemption existed ignores SIGUSR1 and SIGUSR2: re-adopted, it is
    asked to stop the one way it understands, so a time limit or preemption still stops it."""
    import subprocess

    from gq.daemon import shim as requests
    from gq.daemon.supervisor import Supervisor

    supervisor = Supervisor(tmp_path)
    old_shim = subprocess.Popen([sys.executable, "-c", f"""
import fcntl, json, os, signal, sys, time
fd = os.open({str(supervisor.lock_path(7))!r}, os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGUSR2, signal.SIG_IGN)
signal.signal(signal.SIGTERM, lambda *a: (open({str(tmp_path / 'term')!r}, 'w'), sys.exit(0)))
os.pwrite(fd, json.dumps({{"pid": os.getpid(), "run": 0}}).encode(), 0)
time.sleep(60)
"""])
    wait_for(lambda: supervisor.lock_path(7).exists() and supervisor.lock_path(7).read_text(),
             what="the old shim's pid")
    shim = supervisor.adopt(7)
    assert shim is not None and shim.takes_requests is False
    supervisor.ask(shim, requests.PREEMPT)
    assert old_shim.wait(timeout=10) == 0 and (tmp_path / "term").exists()
    supervisor.release(shim)


def test_cancel_during_the_grace_stops_the_job_at_once(make_host):
    host = host_with(make_host, "1x80G", exempt="0s")  # kill_wait: 2s
    # The grace outlasts the wait below: the cancel stops the job after the kill wait.
    low = host.submit("-p", "low", "--grace", "10m", *STUBBORN)
    wait_for(lambda: "ready" in host.log(low), what="the job to ignore SIGTERM")
    high = host.submit("-p", "high", "--", "true")
    host.wait_state(low, "preempting")
    host.gq("cancel", str(low))
    ended = host.wait_ended(low, timeout=60)
    assert (ended["state"], ended["exit_code"]) == ("cancelled", 137)
    assert host.wait_ended(high)["state"] == "completed"


def test_why_of_a_job_a_preemption_will_start_names_the_stopping_jobs_not_a_reservation(
        make_host):
    host = host_with(make_host, "1x80G", exempt="0s")
    low = host.submit("-p", "low", "--grace", "60s", *STUBBORN)
    wait_for(lambda: "ready" in host.log(low), what="the job to ignore SIGTERM")
    high = host.submit("-p", "high", "--", "true")
    host.wait_state(low, "preempting")
    host.wait_reason(high, "Resources")
    why = host.gq("why", str(high)).stdout
    assert (f"job(s) {low}, preempted for it, are stopping on GPU 0: it starts once they have "
            "(SIGKILL after at most 1m00s, their grace)") in why, why
    assert "Expected to start" not in why
