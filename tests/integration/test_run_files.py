"""A run's files (gq/daemon/supervisor.py): one lock file a run, the shim's exit record in it,
and lock files kept empty for later runs instead of being deleted and created again. Real
spawner, real shims, real jobs; no daemon."""

from __future__ import annotations

import json
import os
import signal
import time

import psutil
import pytest

from gq.protocol.fdpass import readable
from gq.daemon.shim import EXIT_AT, RUN_FILE_SIZE, parse_exit_record, sweep_spares
from gq.daemon.supervisor import RunStatus, Supervisor
from tests.support import jobs
from tests.support.hosts import wait_for


@pytest.fixture
def supervisor(tmp_path):
    sup = Supervisor(tmp_path / "run")
    shims, spawn = set(), sup.spawn
    sup.spawn = lambda spec: shims.add((shim := spawn(spec)).pid) or shim
    yield sup
    sup.close()
    for pid in shims:  # what a failed test left running: a gated job waits for ever
        try:
            shim = psutil.Process(pid)
            for proc in [*shim.children(recursive=True), shim]:
                proc.kill()
        except psutil.Error:
            pass


def spec(tmp_path, job_id: int, command: list[str], run: int = 0,
         recyclable: bool = False) -> dict:
    return {"job_id": job_id, "run": run, "command": command, "cwd": str(tmp_path),
            "env": {"PATH": os.environ["PATH"]},
            "stdout": str(tmp_path / "logs" / f"{job_id}.out"),
            "stderr": str(tmp_path / "logs" / f"{job_id}.err"),
            "checkpoint_dir": str(tmp_path / "ck" / str(job_id)),
            "run_dir": str(tmp_path / "run"), "kill_wait": 1.0, "grace": 1.0,
            "checkpoint_signal": 10, "signal_group": False, "warn_after": None, "uid": None,
            "gid": None, "groups": None, "umask": None, "token": f"t{job_id}",
            "recyclable": recyclable}


def ended(shim) -> bool:
    return readable(shim.watch_fd)


def run_to_end(supervisor: Supervisor, tmp_path, job_id: int, command: list[str]) -> dict:
    shim = supervisor.spawn(spec(tmp_path, job_id, command))
    wait_for(lambda: supervisor.status(job_id) is not RunStatus.ALIVE,
             what=f"job {job_id}'s shim to end")
    supervisor.release(shim)
    assert supervisor.status(job_id) is RunStatus.EXITED
    return supervisor.exit_record(job_id)


def test_the_exit_record_is_in_the_lock_file_and_no_other_file_is_made(supervisor, tmp_path):
    record = run_to_end(supervisor, tmp_path, 1, ["sh", "-c", "exit 3"])
    assert (record["exit_code"], record["run"], record["stopped"]) == (3, 0, False)
    assert sorted(os.listdir(tmp_path / "run")) == ["1.lock", "spare"]
    data = (tmp_path / "run" / "1.lock").read_bytes()
    assert json.loads(data[:EXIT_AT].rstrip(b"\0"))["token"] == "t1"
    assert json.loads(data[EXIT_AT:])["exit_code"] == 3
    assert supervisor.shim_info(1)["run"] == 0


def test_a_finished_runs_lock_file_is_blanked_and_serves_the_next_run(supervisor, tmp_path):
    run_to_end(supervisor, tmp_path, 1, ["true"])
    inode = os.stat(tmp_path / "run" / "1.lock").st_ino
    supervisor.finished(1)
    supervisor.forget_finished()
    assert not (tmp_path / "run" / "1.lock").exists()
    spare = tmp_path / "run" / "spare" / "1"
    assert spare.read_bytes() == bytes(RUN_FILE_SIZE) and spare.stat().st_ino == inode
    # A daemon that starts anew finds the spare, and the next run gets it: no record of the
    # earlier run in it, until this one writes its own.
    again = Supervisor(tmp_path / "run")
    try:
        record = run_to_end(again, tmp_path, 2, ["sh", "-c", "exit 5"])
    finally:
        again.close()
    assert os.stat(tmp_path / "run" / "2.lock").st_ino == inode
    assert os.listdir(tmp_path / "run" / "spare") == []
    assert (record["exit_code"], supervisor.shim_info(2)["token"]) == (5, "t2")


def test_a_run_that_starts_with_no_spare_takes_a_finished_ones_file(supervisor, tmp_path):
    """Spares are made at the tick; a run that starts before it takes a finished run's file
    at once rather than create one."""
    run_to_end(supervisor, tmp_path, 1, ["true"])
    inode = os.stat(tmp_path / "run" / "1.lock").st_ino
    supervisor.finished(1)
    record = run_to_end(supervisor, tmp_path, 2, ["true"])
    assert os.stat(tmp_path / "run" / "2.lock").st_ino == inode
    assert record["exit_code"] == 0 and not (tmp_path / "run" / "1.lock").exists()


def test_a_lock_file_still_held_is_removed_not_kept(supervisor, tmp_path):
    gate = tmp_path / "gate"
    shim = supervisor.spawn(spec(tmp_path, 1, gated(gate, 0)))
    wait_for(lambda: supervisor.shim_info(1).get("pid"), what="the shim's pid")
    supervisor.forget(1)  # recorded while its shim lived on (it should not be, but may)
    assert os.listdir(tmp_path / "run" / "spare") == []
    gate.touch()
    wait_for(lambda: ended(shim), what="the run to end")
    supervisor.release(shim)


def test_an_exit_record_cut_short_reads_as_none(supervisor, tmp_path):
    run_to_end(supervisor, tmp_path, 1, ["true"])
    lock = tmp_path / "run" / "1.lock"
    data = lock.read_bytes()
    lock.write_bytes(data[:EXIT_AT + 10])  # a power cut in the middle of the write
    assert supervisor.exit_record(1) is None
    assert supervisor.status(1) is RunStatus.VANISHED


def test_an_exit_record_of_an_older_gq_is_read(supervisor, tmp_path):
    """A shim of an older gq, running across the upgrade, wrote run/ID.exit."""
    run = tmp_path / "run"
    (run / "7.lock").write_text(json.dumps({"pid": 1234, "run": 0}))
    (run / "7.exit").write_text(json.dumps({"exit_code": 4, "run": 0}))
    assert supervisor.status(7) is RunStatus.EXITED
    assert supervisor.exit_record(7)["exit_code"] == 4
    supervisor.forget(7, looked=True)  # as after a run's end: it looked, and found the file
    assert sorted(os.listdir(run)) == ["spare"] and os.listdir(run / "spare") == ["7"]


def test_a_jobs_next_run_does_not_inherit_its_previous_runs_record(supervisor, tmp_path):
    """Requeued before the tick let its files go: the same lock file, blanked at the start."""
    assert run_to_end(supervisor, tmp_path, 1, ["sh", "-c", "exit 3"])["exit_code"] == 3
    gate = tmp_path / "gate"
    shim = supervisor.spawn(spec(tmp_path, 1, gated(gate, 4), run=1))
    assert supervisor.exit_record(1) is None
    wait_for(lambda: supervisor.shim_info(1).get("run") == 1, what="the new shim's pid")
    assert supervisor.status(1) is RunStatus.ALIVE
    gate.touch()
    wait_for(lambda: supervisor.status(1) is RunStatus.EXITED, what="the second run to end")
    supervisor.release(shim)
    assert (supervisor.exit_record(1)["exit_code"], supervisor.exit_record(1)["run"]) == (4, 1)


# ---- a shim serves one run after another (gq/daemon/spawner.py) ----------------------------

def gone(pid: int) -> bool:
    """The process has exited (the spawner's shims are reaped by the kernel)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return "State:\tZ" in f.read()
    except FileNotFoundError:
        return True


def name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def gated(gate, code: int) -> list[str]:
    """tests/support/jobs.py's gated job, as a command (without the CLI's `--`)."""
    return jobs.gated(gate, code)[1:]


def test_a_shim_whose_run_ended_takes_the_next_one(supervisor, tmp_path):
    first = supervisor.spawn(spec(tmp_path, 1, ["true"]))
    wait_for(lambda: ended(first), what="the first run to end")
    supervisor.release(first)
    wait_for(lambda: name(first.pid) == "gq-shim-idle", what="the shim to wait")
    second = supervisor.spawn(spec(tmp_path, 2, ["sh", "-c", "exit 7"]))
    assert second.pid == first.pid  # no fork
    wait_for(lambda: ended(second), what="the second run to end")
    supervisor.release(second)
    assert (supervisor.exit_record(1)["exit_code"], supervisor.exit_record(2)["exit_code"]) \
        == (0, 7)


def test_a_request_for_a_shims_last_run_does_not_reach_its_next(supervisor, tmp_path):
    """The daemon asked a stop of a run that had just ended, before it learned of the end: the
    signal reaches the shim when it runs the next job, which it must not stop."""
    first = supervisor.spawn(spec(tmp_path, 1, ["true"]))
    wait_for(lambda: ended(first), what="the first run to end")
    supervisor.ask(first, signal.SIGTERM)  # a cancel, late
    supervisor.release(first)
    gate = tmp_path / "gate"
    second = supervisor.spawn(spec(tmp_path, 2, gated(gate, 3)))
    assert second.pid == first.pid
    wait_for(lambda: name(second.pid) == "gq-shim-2", what="the second run to begin")
    gate.touch()
    wait_for(lambda: ended(second), what="the second run to end")
    supervisor.release(second)
    record = supervisor.exit_record(2)
    assert (record["exit_code"], record["stopped"]) == (3, False)
    # A request marked for the run it is in is taken.
    third = supervisor.spawn(spec(tmp_path, 3, gated(tmp_path / "never", 0)))
    assert third.pid == first.pid
    wait_for(lambda: supervisor.shim_info(3).get("pid"), what="the third run to begin")
    supervisor.ask(third, signal.SIGTERM)
    wait_for(lambda: ended(third), what="the third run to be cancelled")
    supervisor.release(third)
    assert supervisor.exit_record(3)["stop"] == "cancel"


def test_a_shim_waits_only_so_long(supervisor, tmp_path):
    shim = supervisor.spawn(spec(tmp_path, 1, ["true"]))
    wait_for(lambda: ended(shim), what="the run to end")
    supervisor.release(shim)
    supervisor.retire_idle(older_than=0)
    wait_for(lambda: gone(shim.pid), what="the waiting shim to exit")
    again = supervisor.spawn(spec(tmp_path, 2, ["true"]))
    assert again.pid != shim.pid
    wait_for(lambda: ended(again), what="the run to end")
    supervisor.release(again)


def test_a_waiting_shim_killed_is_replaced_by_a_new_one(supervisor, tmp_path):
    shim = supervisor.spawn(spec(tmp_path, 1, ["true"]))
    wait_for(lambda: ended(shim), what="the run to end")
    supervisor.release(shim)
    os.kill(shim.pid, signal.SIGKILL)
    wait_for(lambda: gone(shim.pid), what="the shim to die")
    again = supervisor.spawn(spec(tmp_path, 2, ["sh", "-c", "exit 4"]))
    assert again.pid != shim.pid
    wait_for(lambda: ended(again), what="the run to end")
    supervisor.release(again)
    assert supervisor.exit_record(2)["exit_code"] == 4


def test_a_shim_whose_spawner_is_gone_exits_after_its_run(supervisor, tmp_path):
    """The daemon (and with it the spawner) died: the run goes on, is recorded, and its shim
    then exits, as the next daemon, watching its pidfd, expects."""
    gate = tmp_path / "gate"
    shim = supervisor.spawn(spec(tmp_path, 1, gated(gate, 6)))
    wait_for(lambda: supervisor.shim_info(1).get("pid"), what="the run to begin")
    supervisor.close()  # the spawner exits
    assert not gone(shim.pid)
    gate.touch()
    wait_for(lambda: gone(shim.pid), what="the shim to exit")
    assert supervisor.exit_record(1)["exit_code"] == 6


# ---- a reused shim keeps its last run's empty files for the next (shim.keep_empty) --------

def files(tmp_path, job_id: int) -> list:
    return [tmp_path / "logs" / f"{job_id}.out", tmp_path / "logs" / f"{job_id}.err",
            tmp_path / "ck" / str(job_id)]


def spares(tmp_path, pid: int) -> list:
    return [tmp_path / "logs" / f".gq-spare-{pid}.out", tmp_path / "logs" / f".gq-spare-{pid}.err",
            tmp_path / "ck" / f".gq-spare-{pid}"]


def run_on(supervisor, tmp_path, job_id: int, command: list[str], recyclable: bool = True,
           reusing=None):
    shim = supervisor.spawn(spec(tmp_path, job_id, command, recyclable=recyclable))
    if reusing is not None:
        assert shim.pid == reusing.pid
    wait_for(lambda: ended(shim), what=f"job {job_id}'s run to end")
    supervisor.release(shim)
    wait_for(lambda: name(shim.pid) == "gq-shim-idle", what="the shim to wait")
    return shim


def test_a_reused_shim_gives_its_last_runs_empty_files_to_the_next_run(supervisor, tmp_path):
    first = run_on(supervisor, tmp_path, 1, ["true"])
    # Kept aside before the daemon could learn of the end, so before any other run of job 1
    # could begin and open them.
    assert not any(p.exists() for p in files(tmp_path, 1))
    inodes = [os.lstat(p).st_ino for p in spares(tmp_path, first.pid)]
    os.utime(spares(tmp_path, first.pid)[2], (1, 1))  # dated long ago: the next run's is new
    run_on(supervisor, tmp_path, 2, ["sh", "-c", "echo out; touch ck/2/x"], reusing=first)
    assert files(tmp_path, 2)[2].stat().st_mtime > 1e9
    assert files(tmp_path, 2)[0].read_text() == "out\n"
    assert (files(tmp_path, 2)[2] / "x").exists()  # what holds anything stays its job's
    assert not files(tmp_path, 2)[1].exists()  # its empty error log was kept again
    # The third run gets job 2's empty error log (the first run's file) and a new output log.
    seen = tmp_path / "inodes"
    run_on(supervisor, tmp_path, 3,
           ["sh", "-c", f"stat -L -c %i /proc/self/fd/1 /proc/self/fd/2 > {seen}"],
           reusing=first)
    out, err = map(int, seen.read_text().split())
    assert err == inodes[1] and out not in inodes
    assert supervisor.exit_record(3)["exit_code"] == 0


def test_a_shim_never_gives_away_files_a_run_must_keep_nor_replaces_a_jobs_own(supervisor,
                                                                                tmp_path):
    first = run_on(supervisor, tmp_path, 1, ["true"], recyclable=False)  # --notify reads them
    assert all(p.exists() for p in files(tmp_path, 1))
    run_on(supervisor, tmp_path, 2, ["true"], reusing=first)
    assert all(p.exists() for p in files(tmp_path, 1))
    # A job's log from an earlier run of its own is never replaced by an empty one.
    files(tmp_path, 3)[0].write_text("earlier run\n")
    run_on(supervisor, tmp_path, 3, ["sh", "-c", "echo again"], reusing=first)
    assert files(tmp_path, 3)[0].read_text() == "earlier run\nagain\n"
    assert spares(tmp_path, first.pid)[0].exists()  # still kept for a later run


def test_a_shim_that_takes_no_more_runs_removes_what_it_kept(supervisor, tmp_path):
    shim = run_on(supervisor, tmp_path, 1, ["true"])
    assert all(p.exists() for p in spares(tmp_path, shim.pid))
    supervisor.retire_idle(older_than=0)
    wait_for(lambda: gone(shim.pid), what="the waiting shim to exit")
    assert not any(p.exists() for p in spares(tmp_path, shim.pid))
    # What a killed shim could not remove, a starting daemon does (sweep_spares).
    (tmp_path / "logs" / ".gq-spare-1.out").touch()
    (tmp_path / "ck" / ".gq-spare-1").mkdir()
    (tmp_path / "logs" / "7.out").write_text("kept\n")
    sweep_spares([str(tmp_path / "logs"), str(tmp_path / "ck")])
    assert sorted(os.listdir(tmp_path / "logs")) == ["7.out"]
    assert os.listdir(tmp_path / "ck") == []


# ---- a stopped (frozen) job's warning waits for it to go on -----------------------------------

def pending(pid: int) -> int:
    """The signals pending for the process as a whole, as a mask (bit n-1: signal n)."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("ShdPnd:")).split()[1], 16)


def test_the_warning_of_a_stopped_job_waits_for_it_to_go_on(supervisor, tmp_path):
    """A freeze stops the job's processes (gq/daemon/freezer.py), and the shim's warning before
    the time limit counts running time: none is sent while the job is stopped, even once the
    running time it is due at has passed on the clock, and it comes once the job goes on."""
    warned = tmp_path / "warned"
    command = ["sh", "-c", f'trap "echo x > {warned}; exit 0" USR1; while :; do sleep 0.05; done']
    job_spec = {**spec(tmp_path, 1, command), "warn_after": 1.0}
    began = time.monotonic()
    shim = supervisor.spawn(job_spec)
    pid = wait_for(lambda: next((p.pid for p in psutil.Process(shim.pid).children()), None),
                   what="the job to start")
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: psutil.Process(pid).status() == psutil.STATUS_STOPPED, what="it to stop")
    wait_for(lambda: time.monotonic() > began + 1.5, what="the warning to be due")
    assert not pending(pid) & (1 << (signal.SIGUSR1 - 1)) and not warned.exists()
    os.kill(pid, signal.SIGCONT)
    wait_for(warned.exists, what="the warning, once the job went on")
    wait_for(lambda: ended(shim), what="the run to end")
    supervisor.release(shim)
    record = supervisor.exit_record(1)
    assert (record["exit_code"], record["warned"]) == (0, True)


def test_a_thawed_job_is_warned_again_as_a_new_run_is(supervisor, tmp_path):
    """A thaw starts a new run, whose time limit counts from it (docs/preemption.md): the
    daemon marks the run thawed before its processes go on, and the shim warns it again."""
    warnings = tmp_path / "warnings"
    command = ["sh", "-c", f'trap "echo x >> {warnings}" USR1; while :; do sleep 0.05; done']
    shim = supervisor.spawn({**spec(tmp_path, 1, command), "warn_after": 0.3})

    def warned() -> int:
        return len(warnings.read_text().split()) if warnings.exists() else 0

    wait_for(lambda: warned() == 1, what="the warning")
    pid = next(p.pid for p in psutil.Process(shim.pid).children())
    os.kill(pid, signal.SIGSTOP)  # frozen
    wait_for(lambda: psutil.Process(pid).status() == psutil.STATUS_STOPPED, what="it to stop")
    supervisor.mark_thawed(1)
    os.kill(pid, signal.SIGCONT)  # thawed
    wait_for(lambda: warned() == 2, what="the new run's warning")
    supervisor.ask(shim, signal.SIGTERM)
    wait_for(lambda: ended(shim), what="the run to end")
    supervisor.release(shim)


def test_an_exit_record_reads_whatever_follows_it_in_its_room():
    """Spaces (the room the shim took), zeros (a blanked file whose room could not be taken),
    or nothing; a record cut short, or only the room, reads as none."""
    record = json.dumps({"exit_code": 2}).encode()
    for after in (b" " * 100, bytes(100), b""):
        assert parse_exit_record(record + after) == {"exit_code": 2}
    for data in (b" " * 4096, bytes(4096), b"", record[:-3] + bytes(10)):
        assert parse_exit_record(data) is None
