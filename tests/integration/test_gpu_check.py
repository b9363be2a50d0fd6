"""bench/gpu_check.sh, as far as it runs without a card: part 1's comparison of gq's NVML
reading with nvidia-smi's (against the fake pynvml), part 2's verdict, and the script itself
failing clearly where there is no driver."""

from __future__ import annotations

import importlib.util
import os
import subprocess

from tests.support.fakes.fake_pynvml import GIB, FakeDevice, FakeNvml, FakeProcess, bus_id

from gq.gpu.nvml import NvmlBackend

from tests.support.paths import ROOT
spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)

UUIDS = ["GPU-11111111-1111-1111-1111-111111111111", "GPU-22222222-2222-2222-2222-222222222222"]
TOPO = """\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV18\t0-15\t0
GPU1\tNV18\t X \t0-15\t0
"""


def cards():
    devices = [FakeDevice(uuid=UUIDS[0], name="NVIDIA H200", total=141 * GIB, used=41 * GIB,
                          util=97, processes=[FakeProcess(4242, 40 * GIB, sm_util=97)],
                          bus_id=bus_id(0x18), nvlinks=[bus_id(0x2a)] * 2),
               FakeDevice(uuid=UUIDS[1], name="NVIDIA H200", total=141 * GIB, used=GIB // 2,
                          util=0, bus_id=bus_id(0x2a), nvlinks=[bus_id(0x18)] * 2)]
    backend = NvmlBackend(FakeNvml(devices))
    backend.read()
    return backend.read()


def smi_csv(used0="41984", util0="95", pid_mem="40960", name="NVIDIA H200", mig="Disabled"):
    gpus = (f"0, {UUIDS[0]}, {name}, 144384, {used0}, {util0}, {mig}\n"
            f"1, {UUIDS[1]}, NVIDIA H200, 144384, 512, 0, Disabled\n")
    return gpu_check.parse_smi(gpus, f"{UUIDS[0]}, 4242, {pid_mem}\n", TOPO)


def test_what_gq_reads_agrees_with_nvidia_smi():
    results = gpu_check.compare(cards(), smi_csv())
    assert [c for c, ok, _ in results if not ok] == []
    assert len(results) == 1 + 2 * 7 + 1  # the cards; seven per card; the links


def test_a_disagreement_is_named():
    results = dict((c, ok) for c, ok, _ in gpu_check.compare(
        cards(), smi_csv(used0="30000", util0="10", pid_mem="1024", name="NVIDIA H100")))
    failed = {c for c, ok in results.items() if not ok}
    tag = f"GPU 0 ({UUIDS[0]})"
    assert failed == {f"{tag}: name", f"{tag}: used memory (within 256 MiB)",
                      f"{tag}: utilisation (within 25 points)",
                      f"{tag}: each process's memory (within 256 MiB)"}


def test_the_topology_of_nvidia_smi_is_read_as_gq_reads_islands():
    assert gpu_check.topo_links(TOPO) == {(0, 1)}
    assert gpu_check.topo_links(TOPO.replace("NV18", "SYS")) == set()
    assert gpu_check.topo_links(TOPO.replace("NV18", "PXB")) == {(0, 1)}


def test_part_two_passes_only_on_the_same_losses_and_a_frozen_unrestarted_run():
    ref = "".join(f"step {i} loss {i / 7!r}\n" for i in range(1, gpu_check.STEPS + 1))
    ref += "ballast checksum 123.0\n"
    ran = {"state_while_preemptor_ran": "frozen", "final_state": "completed", "restarts": 0,
           "freeze_s": 3.2, "thaw_s": 2.9, "preemptor_start_s": 5.0}
    assert all(ok for _, ok, _ in gpu_check._judge(ref, ref, ran))
    off_by_one = ref.replace(f"step 200 loss {200 / 7!r}", "step 200 loss 0.1")
    assert [c for c, ok, _ in gpu_check._judge(ref, off_by_one, ran) if not ok] == [
        f"the loss at every step equals the uninterrupted run's (step {gpu_check.STEPS}: "
        f"{gpu_check.STEPS / 7!r})"]
    slow = {**ran, "freeze_s": 16.0, "restarts": 1}
    assert {c for c, ok, _ in gpu_check._judge(ref, ref, slow) if not ok} == {
        "it ended completed, never restarted", "freeze within 15s"}


def test_the_script_fails_clearly_without_a_driver(tmp_path):
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin", "GQ_CHECK_OUT": str(tmp_path)}
    out = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        "gpu_check: FAIL: no nvidia-smi: this machine has no NVIDIA driver",
        "SUMMARY: FAIL (nothing was checked)"]
