"""The NVML backend against a fake pynvml, and how open_backend picks a backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fakes.fake_pynvml import (
    GIB,
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_UNKNOWN,
    FakeDevice,
    FakeNvml,
    FakeProcess,
    NVMLLibraryMismatchError,
    mig_instance,
)
from hypothesis import given
from hypothesis import strategies as st

import gq
from gq.gpu import NoCards, open_backend
from gq.gpu.nvml import NvmlBackend, NvmlUnavailable
from gq.gpu.sim import SimBackend

REPO = Path(gq.__file__).resolve().parent.parent
UUID_A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
UUID_B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"
UUID_C = "GPU-cccccccc-1111-2222-3333-444444444444"
MEASURED = ("nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates",
            "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
            "nvmlDeviceGetComputeRunningProcesses")


def two_cards() -> list[FakeDevice]:
    return [
        FakeDevice(UUID_A, used=12 * GIB, util=87, temperature=64, power_mw=412_345,
                   processes=[FakeProcess(4242, 12 * GIB)]),
        FakeDevice(UUID_B, name="NVIDIA A100-SXM4-40GB", total=40 * GIB),
    ]


def identity(cards):
    return [(g.index, g.uuid, g.name, g.memory_total, g.visible_id, g.parent_uuid) for g in cards]


def test_whole_cards_are_read_with_every_measurement():
    nvml = FakeNvml(two_cards())
    backend = NvmlBackend(nvml)
    a, b = backend.read()
    assert backend.kind == "nvml"
    assert identity([a, b]) == [
        (0, UUID_A, "NVIDIA H100 80GB HBM3", 80 * GIB, "0", None),
        (1, UUID_B, "NVIDIA A100-SXM4-40GB", 40 * GIB, "1", None),
    ]
    assert (a.memory_used, a.utilization, a.temperature, a.power_w) == (12 * GIB, 87, 64, 412.345)
    assert [(p.pid, p.used_memory) for p in a.processes] == [(4242, 12 * GIB)]
    assert (b.memory_used, b.utilization, b.processes) == (0, 0, [])
    assert not a.simulated


def test_close_shuts_nvml_down_once():
    nvml = FakeNvml(two_cards())
    backend = NvmlBackend(nvml)
    assert nvml.initialised == 1
    backend.close()
    backend.close()
    assert (nvml.initialised, nvml.shutdowns) == (0, 1)


def test_names_and_uuids_given_as_bytes_are_decoded():
    card = FakeDevice(UUID_A, as_bytes=True)
    [gpu] = NvmlBackend(FakeNvml([card])).read()
    assert (gpu.uuid, gpu.name) == (UUID_A, "NVIDIA H100 80GB HBM3")


def test_process_memory_that_the_driver_cannot_give_is_unknown():
    card = FakeDevice(UUID_A, processes=[FakeProcess(1, None), FakeProcess(2, (1 << 64) - 1),
                                         FakeProcess(3, 0)])
    [gpu] = NvmlBackend(FakeNvml([card])).read()
    assert [(p.pid, p.used_memory) for p in gpu.processes] == [(1, None), (2, None), (3, 0)]


@pytest.mark.parametrize("function,field", [
    ("nvmlDeviceGetUtilizationRates", "utilization"),
    ("nvmlDeviceGetTemperature", "temperature"),
    ("nvmlDeviceGetPowerUsage", "power_w"),
])
def test_a_field_the_card_does_not_support_is_unknown_not_zero(function, field):
    cards = two_cards()
    cards[0].unsupported = {function}
    a, b = NvmlBackend(FakeNvml(cards)).read()
    assert getattr(a, field) is None
    assert getattr(b, field) is not None
    assert a.memory_used == 12 * GIB


def test_memory_that_stops_answering_keeps_the_known_capacity():
    cards = two_cards()
    backend = NvmlBackend(FakeNvml(cards))
    backend.read()
    cards[0].unsupported = {"nvmlDeviceGetMemoryInfo"}
    a, _ = backend.read()
    assert (a.memory_total, a.memory_used) == (80 * GIB, None)


def test_a_card_without_a_readable_capacity_is_not_offered():
    cards = two_cards()
    cards[0].unsupported = {"nvmlDeviceGetMemoryInfo"}
    [only] = NvmlBackend(FakeNvml(cards)).read()
    assert (only.index, only.uuid, only.visible_id) == (0, UUID_B, "1")


def test_a_vanished_process_is_gone_on_the_next_read():
    cards = two_cards()
    backend = NvmlBackend(FakeNvml(cards))
    assert [p.pid for p in backend.read()[0].processes] == [4242]
    cards[0].processes = []
    cards[0].used = 0
    a, _ = backend.read()
    assert (a.processes, a.memory_used) == ([], 0)


def test_a_process_list_the_library_cannot_read_does_not_hide_the_card():
    class OldDriver(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, handle):
            raise NVMLLibraryMismatchError("Unversioned function called")

    a, b = NvmlBackend(OldDriver(two_cards())).read()
    assert (a.processes, a.memory_used, b.uuid) == ([], 12 * GIB, UUID_B)


# --- lost cards -------------------------------------------------------------------------------


def test_a_lost_card_stays_listed_with_nothing_measured():
    cards = two_cards()
    backend = NvmlBackend(FakeNvml(cards))
    before = backend.read()
    cards[0].lost = True
    a, b = backend.read()
    assert identity([a, b]) == identity(before)
    assert (a.memory_used, a.utilization, a.temperature, a.power_w, a.processes) == (
        None, None, None, None, [])
    assert b.memory_used == 0
    cards[0].lost = False
    assert backend.read()[0].memory_used == 12 * GIB


def test_a_card_lost_before_it_was_ever_seen_is_left_out():
    cards = two_cards()
    cards[0].lost = True
    [b] = NvmlBackend(FakeNvml(cards)).read()
    assert (b.index, b.uuid, b.visible_id) == (0, UUID_B, "1")


@pytest.mark.parametrize("code", [NVML_ERROR_GPU_IS_LOST, NVML_ERROR_UNKNOWN])
def test_a_handle_that_fails_lists_the_card_as_last_seen(code):
    nvml = FakeNvml(two_cards())
    backend = NvmlBackend(nvml)
    before = backend.read()
    nvml.handle_errors[1] = code
    after = backend.read()
    assert identity(after) == identity(before)
    assert after[1].memory_used is None and after[0].memory_used == 12 * GIB


def test_when_nvml_cannot_count_the_known_cards_are_unmeasured():
    nvml = FakeNvml(two_cards())
    backend = NvmlBackend(nvml)
    before = backend.read()
    nvml.count_error = NVML_ERROR_UNKNOWN
    after = backend.read()
    assert identity(after) == identity(before)
    assert all(g.memory_used is None for g in after)


def test_a_card_that_falls_off_the_bus_is_still_listed():
    nvml = FakeNvml(two_cards())
    backend = NvmlBackend(nvml)
    backend.read()
    nvml.devices.pop()
    a, b = backend.read()
    assert (b.uuid, b.memory_used) == (UUID_B, None)


# --- MIG --------------------------------------------------------------------------------------


def mig_host() -> list[FakeDevice]:
    mig_parent = FakeDevice(UUID_B, mig_capable=True, mig_enabled=True, mig=[
        mig_instance("MIG-11111111-0000-0000-0000-000000000000",
                     "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 40 * GIB, used=GIB,
                     processes=[FakeProcess(77, None)]),
        None,  # an empty slot between instances
        mig_instance("MIG-22222222-0000-0000-0000-000000000000",
                     "NVIDIA H100 80GB HBM3 MIG 2g.20gb", 20 * GIB),
    ])
    return [FakeDevice(UUID_A, mig_capable=True), mig_parent, FakeDevice(UUID_C)]


def test_a_gpu_in_mig_mode_offers_its_instances():
    cards = NvmlBackend(FakeNvml(mig_host())).read()
    mig1 = "MIG-11111111-0000-0000-0000-000000000000"
    mig2 = "MIG-22222222-0000-0000-0000-000000000000"
    assert identity(cards) == [
        (0, UUID_A, "NVIDIA H100 80GB HBM3", 80 * GIB, "0", None),
        (1, mig1, "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 40 * GIB, mig1, UUID_B),
        (2, mig2, "NVIDIA H100 80GB HBM3 MIG 2g.20gb", 20 * GIB, mig2, UUID_B),
        (3, UUID_C, "NVIDIA H100 80GB HBM3", 80 * GIB, "2", None),
    ]
    first = cards[1]
    assert first.memory_used == GIB
    assert [(p.pid, p.used_memory) for p in first.processes] == [(77, None)]
    # MIG instances have no sensors of their own: unknown, not idle.
    assert (first.utilization, first.temperature, first.power_w) == (None, None, None)


def test_lost_mig_gpu_keeps_its_instances_listed():
    devices = mig_host()
    backend = NvmlBackend(FakeNvml(devices))
    before = backend.read()
    devices[1].lost = True
    after = backend.read()
    assert identity(after) == identity(before)
    assert [g.memory_used is None for g in after] == [False, True, True, False]


def test_a_mig_instance_that_stops_answering_stays_listed():
    devices = mig_host()
    backend = NvmlBackend(FakeNvml(devices))
    before = backend.read()
    devices[1].mig_errors[2] = NVML_ERROR_UNKNOWN
    after = backend.read()
    assert identity(after) == identity(before)
    assert [g.memory_used is None for g in after] == [False, False, True, False]


def test_switching_mig_off_gives_the_whole_card_back():
    devices = mig_host()
    backend = NvmlBackend(FakeNvml(devices))
    backend.read()
    devices[1].mig_enabled = False
    assert [g.uuid for g in backend.read()] == [UUID_A, UUID_B, UUID_C]


# --- whatever the fields do, read() answers with stable identities ------------------------


@given(
    unsupported=st.lists(st.sets(st.sampled_from(MEASURED)), min_size=3, max_size=3),
    lost=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_read_never_raises_and_never_invents_zeros(unsupported, lost):
    devices = [FakeDevice(u, used=GIB, util=50, processes=[FakeProcess(9, GIB)])
               for u in (UUID_A, UUID_B, UUID_C)]
    backend = NvmlBackend(FakeNvml(devices))
    before = backend.read()
    for device, fields, is_lost in zip(devices, unsupported, lost):
        device.unsupported, device.lost = fields, is_lost
    after = backend.read()
    assert identity(after) == identity(before)
    for gpu, fields, is_lost in zip(after, unsupported, lost):
        broken = lambda fn: is_lost or fn in fields  # noqa: E731
        assert (gpu.memory_used is None) == broken("nvmlDeviceGetMemoryInfo")
        assert (gpu.utilization is None) == broken("nvmlDeviceGetUtilizationRates")
        assert (gpu.temperature is None) == broken("nvmlDeviceGetTemperature")
        assert (gpu.power_w is None) == broken("nvmlDeviceGetPowerUsage")
        assert (gpu.processes == []) == broken("nvmlDeviceGetComputeRunningProcesses")


# --- choosing a backend -----------------------------------------------------------------------


@pytest.mark.parametrize("code", [NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED])
def test_no_driver_means_no_cards(tmp_path, monkeypatch, code):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(two_cards(), init_error=code))
    backend = open_backend(tmp_path, env={})
    assert isinstance(backend, NoCards)
    assert (backend.kind, backend.read()) == ("none", [])
    assert "NVML" in backend.reason


def test_without_pynvml_there_are_no_cards(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    backend = open_backend(tmp_path, env={})
    assert backend.kind == "none"
    assert "pynvml" in backend.reason


def test_nvml_is_used_when_it_starts(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(two_cards()))
    backend = open_backend(tmp_path, env={})
    assert backend.kind == "nvml"
    assert [g.uuid for g in backend.read()] == [UUID_A, UUID_B]


def test_the_constructor_reports_why_nvml_cannot_start():
    with pytest.raises(NvmlUnavailable, match="Driver Not Loaded"):
        NvmlBackend(FakeNvml([], init_error=NVML_ERROR_DRIVER_NOT_LOADED))


def test_simulated_cards_win_over_nvml(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(two_cards()))
    backend = open_backend(tmp_path, env={"GQ_SIM_GPUS": "2xH100,1x24G"})
    assert isinstance(backend, SimBackend)
    assert backend.state_dir == tmp_path / "sim"
    assert (tmp_path / "sim" / "cards.json").exists()
    assert [g.memory_total // GIB for g in backend.read()] == [80, 80, 24]


def test_a_bad_sim_spec_is_one_line_naming_the_variable(tmp_path):
    with pytest.raises(ValueError) as e:
        open_backend(tmp_path, env={"GQ_SIM_GPUS": "4y80G"})
    assert str(e.value) == ("GQ_SIM_GPUS='4y80G': expected COUNTxSIZE or COUNTxMODEL, "
                            "e.g. 4x80G or 2xH100,2xA100-40G")


def test_importing_the_backends_package_stays_light():
    code = "import sys, gq.gpu; print(sorted(m for m in ('pynvml', 'psutil') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env={"PYTHONPATH": str(REPO)}, check=True).stdout
    assert out.strip() == "[]"
