"""The NVML backend against a fake pynvml, and how open_backend picks a backend."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gq.gpu import NoCards, open_backend
from gq.gpu.nvml import NvmlBackend, NvmlUnavailable
from gq.gpu.sim import SimBackend
from gq.gpu.topology import number_islands
from tests.support.fakes.fake_pynvml import (
    GIB,
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNKNOWN,
    NVML_NVLINK_DEVICE_TYPE_IBMNPU,
    NVML_NVLINK_DEVICE_TYPE_SWITCH,
    FakeDevice,
    FakeNvml,
    FakeProcess,
    NVMLLibraryMismatchError,
    bus_id,
    mig_instance,
)

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
    # Unknown, not "nothing runs there": 12G are held by someone.
    assert (a.processes, a.memory_used, b.uuid) == (None, 12 * GIB, UUID_B)


def test_each_process_gets_its_own_utilisation_when_the_driver_keeps_samples():
    cards = two_cards()
    cards[0].processes = [FakeProcess(4242, 12 * GIB, sm_util=60), FakeProcess(77, GIB)]
    nvml = FakeNvml(cards)
    backend = NvmlBackend(nvml)
    # 77 launched nothing, or is gone: no sample, so unknown rather than idle.
    assert [(p.pid, p.utilization) for p in backend.read()[0].processes] == [(4242, 60),
                                                                             (77, None)]
    cards[0].processes[0].sm_util = 20  # the samples since the last read, not the older ones
    assert backend.read()[0].processes[0].utilization == 20
    cards[0].unsupported.add("nvmlDeviceGetProcessUtilization")
    assert [p.utilization for p in backend.read()[0].processes] == [None, None]


# --- lost cards -------------------------------------------------------------------------------


def test_a_lost_card_stays_listed_with_nothing_measured():
    cards = two_cards()
    backend = NvmlBackend(FakeNvml(cards))
    before = backend.read()
    cards[0].lost = True
    a, b = backend.read()
    assert identity([a, b]) == identity(before)
    assert (a.memory_used, a.utilization, a.temperature, a.power_w, a.processes) == (
        None, None, None, None, None)
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


# --- topology: which cards are linked --------------------------------------------------------


def gpus(n: int, **kw) -> list[FakeDevice]:
    return [FakeDevice(f"GPU-{i:08x}-1111-2222-3333-444444444444", bus_id=bus_id(0x10 + i), **kw)
            for i in range(n)]


def nvlinked(devices: list[FakeDevice]) -> list[FakeDevice]:
    """Two cards joined by one NVLink bridge."""
    a, b = devices
    a.bus_id, b.bus_id = bus_id(0x3B), bus_id(0x86)
    a.nvlinks, b.nvlinks = [b.bus_id], [a.bus_id]
    return devices


def islands_of(devices: list[FakeDevice], nvml: FakeNvml | None = None) -> list[int | None]:
    return [g.island for g in NvmlBackend(nvml or FakeNvml(devices)).read()]


def test_cards_behind_one_pcie_switch_form_an_island():
    devices = gpus(6)
    devices[0].pcie = devices[1].pcie = ("node0", "bridge0", "switchA")  # PIX
    devices[2].pcie = ("node0", "bridge0", "switchB")  # PXB with 3: two switches apart
    devices[3].pcie = ("node0", "bridge0", "switchB", "switchC")
    devices[4].pcie = ("node0", "bridge1")  # NODE from the others: through the CPU
    devices[5].pcie = ("node1", "bridge2", "switchD")  # SYS: the other socket
    assert islands_of(devices) == [0, 0, 1, 1, 2, 3]


def test_cards_on_the_cpu_root_ports_are_not_linked():
    # A workstation: every card on its own root port, PHB between any two.
    assert islands_of(gpus(4)) == [0, 1, 2, 3]


def test_two_gpus_on_one_board_are_linked():
    devices = gpus(3)
    devices[1].board = devices[2].board = "K80 #1"
    assert islands_of(devices) == [0, 1, 1]


def test_nvlink_bridges_make_islands_across_sockets():
    devices = gpus(4)
    for device, socket in zip(devices, ["node0", "node1", "node0", "node1"]):
        device.pcie = (socket, f"bridge-{socket}")
    devices[3].bus_id = "00000000:AF:00.0"
    b = [d.bus_id for d in devices]
    # Bridged pairs 0-3 and 1-2, four links each way; one link of 1's bridge is down. Between
    # 0 and 3 the far end is written with a 4-digit domain and in lower case, as NVML does in
    # places: the same bus all the same.
    devices[0].nvlinks = ["0000:af:00.0"] * 4
    devices[3].nvlinks = [b[0][4:]] * 4
    devices[1].nvlinks = [b[2], b[2], None, b[2]]
    devices[2].nvlinks = [b[1]] * 4
    # Numbered by their lowest card: 0 and 3 are island 0.
    assert islands_of(devices) == [0, 1, 1, 0]


def test_a_link_that_is_down_links_nothing():
    devices = gpus(2)
    devices[0].nvlinks = [None, None]
    devices[1].nvlinks = [None, None]
    assert islands_of(devices) == [0, 1]


def test_gpus_on_the_same_nvswitches_are_one_island():
    devices = gpus(8)
    switches = [bus_id(0xA0 + s) for s in range(4)]
    for i, device in enumerate(devices):
        device.pcie = (f"node{i // 4}", f"bridge{i // 2}")  # PCIe alone would link none
        device.nvlinks = [s for s in switches for _ in range(4)] + [None, None]  # 18 links
    nvml = FakeNvml(devices)
    nvml.nvlink_endpoints = {s: NVML_NVLINK_DEVICE_TYPE_SWITCH for s in switches}
    assert islands_of(devices, nvml) == [0] * 8


def test_separate_nvlink_domains_stay_separate():
    devices = gpus(4)
    for device, switch in zip(devices, ["A", "A", "B", "B"]):
        device.nvlinks = [f"0000000{ {'A': 1, 'B': 2}[switch]}:E0:00.0"]
    assert islands_of(devices) == [0, 0, 1, 1]


def test_an_nvlink_to_the_cpu_links_no_gpus():
    # POWER9 hosts link GPUs to the CPU over NVLink; GPUs reaching the same CPU are not peers.
    devices = gpus(2)
    cpu = bus_id(0x04, domain=7)
    devices[0].nvlinks = devices[1].nvlinks = [cpu, cpu]
    nvml = FakeNvml(devices)
    nvml.nvlink_endpoints = {cpu: NVML_NVLINK_DEVICE_TYPE_IBMNPU}
    assert islands_of(devices, nvml) == [0, 1]


def test_a_far_end_of_unknown_kind_counts_as_a_switch():
    class NoDeviceTypes(FakeNvml):  # drivers before the call existed
        def __getattribute__(self, name):
            if name == "nvmlDeviceGetNvLinkRemoteDeviceType":
                raise AttributeError(name)
            return super().__getattribute__(name)

    devices = gpus(3)
    devices[0].nvlinks = devices[2].nvlinks = [bus_id(0xE0)]
    assert islands_of(devices, NoDeviceTypes(devices)) == [0, 1, 0]


def test_mig_instances_share_their_parents_island():
    devices = mig_host()
    devices[1].pcie = devices[2].pcie = ("node0", "bridge0", "switch")
    assert islands_of(devices) == [0, 1, 1, 1]


def test_a_lost_card_keeps_its_island():
    devices = nvlinked(two_cards())
    backend = NvmlBackend(FakeNvml(devices))
    assert [g.island for g in backend.read()] == [0, 0]
    devices[1].lost = True
    lost = backend.read()[1]
    assert (lost.memory_used, lost.island) == (None, 0)


def test_topology_is_read_once_when_the_backend_starts():
    devices = gpus(2)
    backend = NvmlBackend(FakeNvml(devices))
    for device in devices:
        device.pcie = ("node0", "bridge0", "switch")
    assert [g.island for g in backend.read()] == [0, 1]
    devices[0].unsupported.add("nvmlDeviceGetTopologyCommonAncestor")
    assert [g.island for g in backend.read()] == [0, 1]


@pytest.mark.parametrize("code", [NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND,
                                  NVML_ERROR_UNKNOWN])
def test_pcie_topology_nvml_will_not_give_is_unknown(code):
    nvml = FakeNvml(gpus(3))
    nvml.ancestor_error = code
    assert islands_of(nvml.devices, nvml) == [None, None, None]


def test_nvlink_joining_every_card_needs_no_pcie_topology():
    devices = gpus(3)
    for device in devices:
        device.nvlinks = [bus_id(0xE0)]
    nvml = FakeNvml(devices)
    nvml.ancestor_error = NVML_ERROR_NOT_SUPPORTED
    assert islands_of(devices, nvml) == [0, 0, 0]


def test_a_pair_nvml_cannot_place_makes_every_island_unknown():
    devices = gpus(3)
    devices[0].nvlinks, devices[1].nvlinks = [devices[1].bus_id], [devices[0].bus_id]
    devices[2].unsupported = {"nvmlDeviceGetTopologyCommonAncestor"}
    assert islands_of(devices) == [None, None, None]


@pytest.mark.parametrize("function", ["nvmlDeviceGetPciInfo", "nvmlDeviceGetNvLinkState",
                                      "nvmlDeviceGetNvLinkRemotePciInfo"])
def test_a_topology_call_that_fails_leaves_islands_unknown_and_cards_listed(function):
    class Failing(FakeNvml):
        pass

    def fail(self, *args):
        raise NVMLLibraryMismatchError(f"{function} is not in this driver")

    setattr(Failing, function, fail)
    devices = nvlinked(two_cards())
    cards = NvmlBackend(Failing(devices)).read()
    assert [(g.uuid, g.island) for g in cards] == [(UUID_A, None), (UUID_B, None)]


def test_a_bus_id_that_cannot_be_read_leaves_islands_unknown():
    devices = nvlinked(two_cards())
    devices[1].nvlinks = ["n/a"]
    assert islands_of(devices) == [None, None]


def test_a_card_lost_at_start_leaves_islands_unknown_and_the_others_listed():
    devices = gpus(3)
    devices[2].lost = True
    assert islands_of(devices) == [None, None]


def test_a_surprise_in_the_topology_code_does_not_stop_the_backend():
    class Broken(FakeNvml):
        def nvmlDeviceGetNvLinkState(self, handle, link):
            raise RuntimeError("not what NVML raises")

    assert islands_of(two_cards(), Broken(two_cards())) == [None, None]


def test_a_single_card_is_an_island_of_its_own():
    nvml = FakeNvml(gpus(1))
    nvml.ancestor_error = NVML_ERROR_NOT_SUPPORTED  # never asked: there is no pair
    assert islands_of(nvml.devices, nvml) == [0]


def test_the_topology_calls_exist_in_the_real_pynvml():
    pynvml = pytest.importorskip("pynvml")
    for name in ("nvmlDeviceGetPciInfo", "nvmlDeviceGetTopologyCommonAncestor",
                 "nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkRemotePciInfo",
                 "nvmlDeviceGetNvLinkRemoteDeviceType", "NVMLError_NotSupported",
                 "NVMLError_InvalidArgument"):
        assert callable(getattr(pynvml, name)), name
    assert (pynvml.NVML_TOPOLOGY_SINGLE, pynvml.NVML_TOPOLOGY_MULTIPLE) == (10, 20)
    assert (pynvml.NVML_FEATURE_ENABLED, pynvml.NVML_NVLINK_DEVICE_TYPE_IBMNPU) == (1, 1)
    assert pynvml.NVML_NVLINK_MAX_LINKS >= 18
    assert "busId" in dict(pynvml.nvmlPciInfo_t._fields_)


def _components(gpus: list[int], links: list[tuple[object, object]]) -> list[set[object]]:
    """The obvious, slow way: grow each set until no link leaves it."""
    groups: list[set[object]] = []
    for a, b in links:
        touching = [g for g in groups if a in g or b in g]
        merged = {a, b}.union(*touching)
        groups = [g for g in groups if g not in touching] + [merged]
    return [g for g in groups if g & set(gpus)] + [{g} for g in gpus
                                                   if not any(g in s for s in groups)]


nodes = st.integers(0, 7) | st.integers(0, 3).map(lambda s: ("nvswitch", s))


@given(st.lists(st.tuples(nodes, nodes), max_size=12))
def test_islands_are_the_connected_components_numbered_by_lowest_card(links):
    gpus = list(range(8))
    islands = number_islands(gpus, links)
    expected = sorted(sorted(g for g in c if isinstance(g, int)) for c in _components(gpus, links))
    got: dict[int, list[int]] = {}
    for gpu in gpus:
        got.setdefault(islands[gpu], []).append(gpu)
    assert sorted(got.values()) == expected
    assert [islands[min(members)] for members in sorted(got.values())] == list(range(len(got)))


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
        assert (gpu.processes is None) == broken("nvmlDeviceGetComputeRunningProcesses")


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

