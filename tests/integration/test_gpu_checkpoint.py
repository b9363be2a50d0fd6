"""The checkpointers behind freezing: the simulated one with real burn processes, the driver
binding against a stand-in libcuda compiled from tests/support/fakes/fake_libcuda.c (declared as cuda.h
declares the calls), and the cuda-checkpoint utility path against a stand-in script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from gq.gpu.checkpoint import CHECKPOINTED, FAILED, LOCKED, RUNNING, CheckpointError
from gq.gpu.cuda_checkpoint import CudaCheckpointer, cu_uuid
from gq.gpu.sim import SimBackend, parse_sim_spec, sim_uuid
from gq.gpu.sim_checkpoint import SimCheckpointer, write_control
from gq.model import Gpu

FAKES = Path(__file__).resolve().parents[1] / "support" / "fakes"
G = 1 << 30


@pytest.fixture
def cards(tmp_path):
    backend = SimBackend(parse_sim_spec("2x80G"), tmp_path / "sim")
    procs = []

    def burn(card: int, mem: str = "30G") -> subprocess.Popen:
        env = {**os.environ, "GQ_SIM_DIR": str(backend.state_dir),
               "CUDA_VISIBLE_DEVICES": str(card)}
        proc = subprocess.Popen([sys.executable, "-m", "gq.sim.burn", "--mem", mem], env=env,
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert "holding" in proc.stdout.readline()
        return proc

    yield SimpleNamespace(backend=backend, burn=burn, ckpt=SimCheckpointer(backend.state_dir))
    for proc in procs:
        proc.kill()
        proc.wait()


def used(backend, index: int) -> int:
    return backend.read()[index].memory_used


def test_a_simulated_freeze_moves_the_memory_to_the_host_and_back_onto_another_card(cards):
    job = cards.burn(0)
    ckpt, pid = cards.ckpt, job.pid
    write_control(cards.backend.state_dir, {"host_ram": 100 * G})
    assert ckpt.state(pid) == RUNNING and ckpt.host_memory_free() == 100 * G
    ckpt.lock(pid, timeout=5)
    assert ckpt.state(pid) == LOCKED and used(cards.backend, 0) == 30 * G  # still on the card
    ckpt.checkpoint(pid)
    assert ckpt.state(pid) == CHECKPOINTED
    assert used(cards.backend, 0) == 0 and ckpt.host_memory_free() == 70 * G
    ckpt.restore(pid, {sim_uuid(0): sim_uuid(1)})
    assert (used(cards.backend, 0), used(cards.backend, 1)) == (0, 30 * G)
    assert ckpt.host_memory_free() == 100 * G and ckpt.state(pid) == LOCKED
    ckpt.unlock(pid)
    assert ckpt.state(pid) == RUNNING
    assert ckpt.support(cards.backend.read()).json() == {"driver": "simulated", "why": None,
                                                        "remap": True}


def test_a_simulated_training_run_takes_no_step_while_the_driver_holds_it(cards):
    """As a real job stalls at its next CUDA call once locked: burn --steps waits while its
    record says locked or checkpointed (gq/sim/burn.py), and goes on once unlocked."""
    from gq.gpu.sim import proc_path
    from gq.sim.burn import _held

    job = cards.burn(0)
    ckpt, pid = cards.ckpt, job.pid
    write_control(cards.backend.state_dir, {"host_ram": 100 * G})
    registered = proc_path(cards.backend.state_dir, pid)
    created = json.loads(registered.read_text())["create_time"]
    frozen = registered.parent.parent / "frozen" / registered.name  # where burn looks
    assert not _held(frozen, created)
    ckpt.lock(pid, timeout=5)
    assert _held(frozen, created) and not _held(frozen, created + 1)  # not an earlier pid's
    ckpt.checkpoint(pid)
    assert _held(frozen, created)
    ckpt.restore(pid, {})
    ckpt.unlock(pid)
    assert not _held(frozen, created)


def test_a_held_training_run_waits_before_its_next_step(tmp_path, monkeypatch, capsys):
    """burn's step loop asks _held before each step and waits while it says so: its sleeps
    are counted here, and the record is let go after the third wait."""
    import gq.sim.burn as burn

    frozen = tmp_path / "frozen" / "1.json"
    frozen.parent.mkdir()
    frozen.write_text(json.dumps({"pid": 1, "state": LOCKED, "proc": {"create_time": 5.0}}))
    waits = []

    def sleep(seconds: float) -> None:
        if seconds == 0.01:  # the wait while held, not the step's own time
            waits.append(seconds)
            if len(waits) == 3:
                frozen.unlink()

    monkeypatch.setattr(burn.time, "sleep", sleep)
    burn._train(2, 0.5, frozen, 5.0)
    assert len(waits) == 3
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == ["1", "2"]


def test_each_simulated_step_fails_as_the_control_file_says(cards):
    state_dir, ckpt = cards.backend.state_dir, cards.ckpt
    pid = cards.burn(0).pid
    write_control(state_dir, {"fail": {"lock": "timeout"}})
    with pytest.raises(CheckpointError) as e:
        ckpt.lock(pid, timeout=0.2)
    assert e.value.timed_out and e.value.step == "lock" and ckpt.state(pid) == RUNNING
    write_control(state_dir, {"fail": {"checkpoint": "CUDA_ERROR_ILLEGAL_STATE"}})
    ckpt.lock(pid, timeout=1)
    with pytest.raises(CheckpointError, match="checkpoint: CUDA_ERROR_ILLEGAL_STATE"):
        ckpt.checkpoint(pid)
    assert ckpt.state(pid) == LOCKED and used(cards.backend, 0) == 30 * G
    write_control(state_dir, {"fail": {"restore": "CUDA_ERROR_UNKNOWN"}})
    ckpt.checkpoint(pid)
    with pytest.raises(CheckpointError, match="restore: CUDA_ERROR_UNKNOWN"):
        ckpt.restore(pid, {})
    assert ckpt.state(pid) == FAILED and used(cards.backend, 0) == 0
    with pytest.raises(ValueError, match="unknown step"):
        write_control(state_dir, {"fail": {"thaw": "x"}})


def test_a_simulated_restore_onto_a_card_without_room_fails_and_keeps_the_state(cards):
    pid = cards.burn(0, "50G").pid
    cards.ckpt.lock(pid, 1)
    cards.ckpt.checkpoint(pid)
    cards.burn(0, "40G")  # takes the card meanwhile
    with pytest.raises(CheckpointError, match="OUT_OF_MEMORY"):
        cards.ckpt.restore(pid, {})
    assert cards.ckpt.state(pid) == CHECKPOINTED
    cards.ckpt.restore(pid, {sim_uuid(0): sim_uuid(1)})
    assert used(cards.backend, 1) == 50 * G


def test_the_state_of_a_simulated_process_that_died_is_forgotten(cards):
    job = cards.burn(1)
    cards.ckpt.lock(job.pid, 1)
    cards.ckpt.checkpoint(job.pid)
    assert cards.ckpt.frozen_bytes() == 30 * G
    job.kill()
    job.wait()
    assert cards.ckpt.frozen_bytes() == 0
    with pytest.raises(CheckpointError, match="no process"):
        cards.ckpt.state(job.pid)


def test_the_simulated_probe_says_what_the_control_file_says(cards):
    write_control(cards.backend.state_dir, {"cards": {"1": "persistence mode is off"},
                                            "remap": False})
    support = cards.ckpt.support(cards.backend.read())
    assert (support.card_problem(0), support.card_problem(1)) == (None,
                                                                  "persistence mode is off")
    assert not support.remap
    write_control(cards.backend.state_dir, {"unsupported": "no driver"})
    assert cards.ckpt.support(cards.backend.read()).card_problem(0) == "no driver"


# ---- the driver binding ----------------------------------------------------------------------

@pytest.fixture
def fake_libcuda(tmp_path, monkeypatch):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for the stand-in libcuda")
    lib = tmp_path / "libcuda.so.1"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(FAKES / "fake_libcuda.c")],
                   check=True)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_CUDA_LOG", str(log))
    return SimpleNamespace(path=str(lib), calls=lambda: log.read_text().splitlines())


def test_the_driver_calls_get_what_cuda_h_declares(fake_libcuda):
    ckpt = CudaCheckpointer(library=fake_libcuda.path)
    assert ckpt.state(41) == RUNNING
    ckpt.lock(41, timeout=1.5)
    ckpt.checkpoint(41)
    assert ckpt.state(41) == CHECKPOINTED
    old, new = sim_uuid(0), sim_uuid(3)
    ckpt.restore(41, {old: new})
    ckpt.unlock(41)
    assert ckpt.state(41) == RUNNING
    old_hex, new_hex = (uuid.UUID(u.removeprefix("GPU-")).hex for u in (old, new))
    assert fake_libcuda.calls() == [
        "init 0", "lock 41 timeoutMs 1500 reserved_zero 1", "checkpoint 41 reserved_zero 1",
        f"restore 41 pairs 1 old {old_hex} new {new_hex} reserved_zero 1",
        "unlock 41 reserved_zero 1"]
    assert CudaCheckpointer(library=fake_libcuda.path).support([]).remap  # CUDA 12.8


def test_a_driver_call_that_fails_names_the_error_and_a_lock_timeout_is_told_apart(
        fake_libcuda):
    ckpt = CudaCheckpointer(library=fake_libcuda.path)
    with pytest.raises(CheckpointError, match=r"checkpoint: CUDA_ERROR_ILLEGAL_STATE \(401\)"):
        ckpt.checkpoint(42)  # not locked
    with pytest.raises(CheckpointError) as e:
        ckpt.lock(999, timeout=0.1)
    assert e.value.timed_out and "CUDA_ERROR_TIMEOUT" in str(e.value)


def test_without_the_driver_or_its_calls_the_probe_says_why(tmp_path):
    missing = CudaCheckpointer(library=str(tmp_path / "nope.so"), utility=None)
    assert "no NVIDIA driver" in missing.support([]).why
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    src = tmp_path / "old.c"
    src.write_text("int cuInit(unsigned f){return 0;}\n"
                   "int cuDriverGetVersion(int *v){*v=12040;return 0;}\n")
    old = tmp_path / "libold.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(old), str(src)], check=True)
    why = CudaCheckpointer(library=str(old), utility="").support([]).why
    assert why == (f"{old} (CUDA 12.4) does not export cuCheckpointProcessLock: freezing needs "
                   "NVIDIA driver 570 or later")


def test_the_probe_wants_persistence_mode_and_a_whole_gpu(fake_libcuda):
    modes = {"GPU-a": 1, "GPU-b": 0}
    nvml = SimpleNamespace(nvmlSystemGetDriverVersion=lambda: b"570.124.06",
                           nvmlDeviceGetHandleByUUID=lambda u: u,
                           nvmlDeviceGetPersistenceMode=lambda h: modes[h])
    cards = [Gpu(0, "GPU-a", "H100", 80 * G, "0"), Gpu(1, "GPU-b", "H100", 80 * G, "1"),
             Gpu(2, "MIG-c", "H100 1g.10gb", 10 * G, "MIG-c", parent_uuid="GPU-a")]
    support = CudaCheckpointer(nvml=nvml, library=fake_libcuda.path).support(cards)
    assert support.driver == "570.124.06" and support.card_problem(0) is None
    assert "persistence mode is off" in support.card_problem(1)
    assert "MIG" in support.card_problem(2)


def test_the_cuda_checkpoint_utility_is_run_as_criu_runs_it(tmp_path):
    log = tmp_path / "args"
    utility = tmp_path / "cuda-checkpoint"
    utility.write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                       'case "$*" in *--help*) echo "--action --pid --timeout";; '
                       '*--get-state*) echo checkpointed;; esac\n')
    utility.chmod(0o755)
    ckpt = CudaCheckpointer(library=str(tmp_path / "none.so"), utility=str(utility))
    assert ckpt.support([Gpu(0, "GPU-a", "H100", G, "0")]).why is None
    ckpt.lock(7, timeout=2)
    ckpt.checkpoint(7)
    assert ckpt.state(7) == CHECKPOINTED
    ckpt.restore(7, {"GPU-a": "GPU-a"})
    with pytest.raises(CheckpointError, match="cannot restore onto another card"):
        ckpt.restore(7, {"GPU-a": "GPU-b"})
    assert log.read_text().splitlines() == [
        "--help", "--action lock --pid 7 --timeout 2000", "--action checkpoint --pid 7",
        "--get-state --pid 7", "--action restore --pid 7"]


def test_uuids_become_the_drivers_sixteen_bytes():
    assert bytes(cu_uuid("GPU-5117e000-0000-4000-8000-000000000001").bytes) == bytes.fromhex(
        "5117e000000040008000000000000001")
