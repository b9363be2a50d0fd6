"""A configurable stand-in for the part of pynvml that gq.gpu.nvml calls.

Names, error classes and return shapes follow nvidia-ml-py's pynvml.py: errors are NVMLError
subclasses picked by code, names and UUIDs are str (or bytes, as old versions return), memory and
utilisation come back as objects with .total/.free/.used and .gpu/.memory, processes as objects
with .pid/.usedGpuMemory (None when not available), PCI addresses as objects with .busId (the
domain written with 8 hex digits, as nvmlPciInfo_t's busId is) and .domain/.bus/.device.

Topology: each device sits at a PCIe path (NUMA node, host bridge, then the PCIe switches from
the host bridge down), from which nvmlDeviceGetTopologyCommonAncestor derives NVML's level as
the driver does; and each device lists its NVLinks by the bus id at their far end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

NVML_SUCCESS = 0
NVML_TEMPERATURE_GPU = 0
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_NVLINK_MAX_LINKS = 36
NVML_NVLINK_DEVICE_TYPE_GPU = 0x00
NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01
NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02
NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
NVML_TOPOLOGY_INTERNAL = 0
NVML_TOPOLOGY_SINGLE = 10
NVML_TOPOLOGY_MULTIPLE = 20
NVML_TOPOLOGY_HOSTBRIDGE = 30
NVML_TOPOLOGY_NODE = 40
NVML_TOPOLOGY_SYSTEM = 50

# Codes and messages as in pynvml.
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    """NVMLError(code) builds the subclass for that code, as pynvml's does."""

    _by_code: dict[int, type[NVMLError]] = {}

    def __new__(cls, value: int):
        if cls is NVMLError:
            cls = NVMLError._by_code.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


class NVMLLibraryMismatchError(Exception):
    pass


def _error_class(name: str, code: int) -> type[NVMLError]:
    def new(cls, *args):
        return NVMLError.__new__(cls, code)

    cls = type(name, (NVMLError,), {"__new__": new, "__module__": __name__})
    NVMLError._by_code[code] = cls
    return cls


NVMLError_Uninitialized = _error_class("NVMLError_Uninitialized", NVML_ERROR_UNINITIALIZED)
NVMLError_InvalidArgument = _error_class("NVMLError_InvalidArgument", NVML_ERROR_INVALID_ARGUMENT)
NVMLError_NotSupported = _error_class("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NotFound = _error_class("NVMLError_NotFound", NVML_ERROR_NOT_FOUND)
NVMLError_DriverNotLoaded = _error_class("NVMLError_DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_LibraryNotFound = _error_class("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_FunctionNotFound = _error_class(
    "NVMLError_FunctionNotFound", NVML_ERROR_FUNCTION_NOT_FOUND
)
NVMLError_GpuIsLost = _error_class("NVMLError_GpuIsLost", NVML_ERROR_GPU_IS_LOST)
NVMLError_Unknown = _error_class("NVMLError_Unknown", NVML_ERROR_UNKNOWN)

GIB = 1 << 30
# What MIG instances cannot report on real hardware: they share the parent's sensors.
MIG_UNSUPPORTED = frozenset(
    {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage"}
)


@dataclass
class FakeProcess:
    pid: int
    usedGpuMemory: int | None
    sm_util: int | None = None  # its utilisation samples; None: NVML keeps none for it


@dataclass
class FakeDevice:
    """One GPU, or one MIG instance inside `mig` of its parent. Mutate it between reads."""

    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    total: int = 80 * GIB
    used: int = 0
    util: int = 0
    temperature: int = 35
    power_mw: int = 70_000
    processes: list[FakeProcess] = field(default_factory=list)
    mig_capable: bool = False
    mig_enabled: bool = False
    mig: list[FakeDevice | None] = field(default_factory=list)  # None = empty slot
    mig_errors: dict[int, int] = field(default_factory=dict)  # slot -> code its handle raises
    lost: bool = False  # every call on it raises GpuIsLost
    unsupported: set[str] = field(default_factory=set)  # function names raising NotSupported
    as_bytes: bool = False  # name and UUID returned as bytes, as old pynvml did
    # Where it sits: "" = a bus id of its own, given by FakeNvml from its position.
    bus_id: str = ""
    # (NUMA node, host bridge, PCIe switches from the top down). Same board = NVML "INTERNAL".
    pcie: tuple[str, ...] = ("node0", "bridge0")
    board: str | None = None
    # One entry per NVLink: the bus id at the far end (a GPU, an NVSwitch), or None if down.
    # Empty: the GPU has no NVLink, and every NVLink call says NotSupported.
    nvlinks: list[str | None] = field(default_factory=list)


def mig_instance(uuid: str, name: str, total: int, **kw) -> FakeDevice:
    return FakeDevice(uuid=uuid, name=name, total=total, unsupported=set(MIG_UNSUPPORTED), **kw)


class FakeNvml:
    """Pass an instance where pynvml is expected. Counts init/shutdown calls for the tests."""

    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_DEVICE_MIG_ENABLE = NVML_DEVICE_MIG_ENABLE
    NVMLError = NVMLError
    NVMLLibraryMismatchError = NVMLLibraryMismatchError

    def __init__(self, devices: list[FakeDevice], init_error: int | None = None):
        self.devices = devices
        self.init_error = init_error  # an NVML_ERROR_* code nvmlInit raises
        self.count_error: int | None = None  # an NVML_ERROR_* code nvmlDeviceGetCount raises
        self.handle_errors: dict[int, int] = {}  # NVML index -> code GetHandleByIndex raises
        self.ancestor_error: int | None = None  # a code TopologyCommonAncestor raises for any pair
        # Bus ids of NVLink peers that are not GPUs: NVSwitches, IBM CPUs -> NVLINK_DEVICE_TYPE_*.
        self.nvlink_endpoints: dict[str, int] = {}
        for i, device in enumerate(devices):
            device.bus_id = device.bus_id or bus_id(0x10 + i)
        self.initialised = 0
        self.shutdowns = 0
        self.clock_us = 1_700_000_000_000_000  # NVML's timestamps, advanced by each sample call
        self.util_samples: dict[int, list] = {}  # id(device) -> the samples it has kept

    def __getattr__(self, name: str):
        # The error classes and constants, reachable as pynvml's module attributes are.
        if name.startswith(("NVMLError_", "NVML_")) and name in globals():
            return globals()[name]
        raise AttributeError(name)

    # --- library -----------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self._check_init()
        self.initialised -= 1
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        self._check_init()
        if self.count_error is not None:
            raise NVMLError(self.count_error)
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeDevice:
        self._check_init()
        if index in self.handle_errors:
            raise NVMLError(self.handle_errors[index])
        if not 0 <= index < len(self.devices):
            raise NVMLError_InvalidArgument()
        return self.devices[index]

    # --- per device --------------------------------------------------------------------------

    def nvmlDeviceGetName(self, handle: FakeDevice):
        self._check(handle, "nvmlDeviceGetName")
        return handle.name.encode() if handle.as_bytes else handle.name

    def nvmlDeviceGetUUID(self, handle: FakeDevice):
        self._check(handle, "nvmlDeviceGetUUID")
        return handle.uuid.encode() if handle.as_bytes else handle.uuid

    def nvmlDeviceGetMemoryInfo(self, handle: FakeDevice, version=None):
        self._check(handle, "nvmlDeviceGetMemoryInfo")
        free = handle.total - handle.used
        return SimpleNamespace(total=handle.total, free=free, used=handle.used)

    def nvmlDeviceGetUtilizationRates(self, handle: FakeDevice):
        self._check(handle, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=handle.util, memory=0)

    def nvmlDeviceGetTemperature(self, handle: FakeDevice, sensor: int) -> int:
        self._check(handle, "nvmlDeviceGetTemperature")
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError_InvalidArgument()
        return handle.temperature

    def nvmlDeviceGetPowerUsage(self, handle: FakeDevice) -> int:
        self._check(handle, "nvmlDeviceGetPowerUsage")
        return handle.power_mw

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeDevice):
        self._check(handle, "nvmlDeviceGetComputeRunningProcesses")
        return [SimpleNamespace(pid=p.pid, usedGpuMemory=p.usedGpuMemory,
                                gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
                for p in handle.processes]

    def nvmlDeviceGetProcessUtilization(self, handle: FakeDevice, timeStamp: int):
        """Every sample newer than timeStamp (microseconds), as the driver keeps a buffer of
        them: two per process and second, a second passing at each call. Like pynvml, an
        empty answer raises (NotFound: no sample in the period)."""
        self._check(handle, "nvmlDeviceGetProcessUtilization")
        self.clock_us += 1_000_000
        kept = self.util_samples.setdefault(id(handle), [])
        kept += [SimpleNamespace(pid=p.pid, timeStamp=self.clock_us - half, smUtil=p.sm_util,
                                 memUtil=0, encUtil=0, decUtil=0)
                 for p in handle.processes if p.sm_util is not None for half in (500_000, 0)]
        samples = [s for s in kept if s.timeStamp > timeStamp]
        if not samples:
            raise NVMLError_NotFound()
        return samples

    # --- MIG ---------------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, handle: FakeDevice) -> list[int]:
        self._check(handle, "nvmlDeviceGetMigMode")
        if not handle.mig_capable:
            raise NVMLError_NotSupported()
        mode = NVML_DEVICE_MIG_ENABLE if handle.mig_enabled else NVML_DEVICE_MIG_DISABLE
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeDevice) -> int:
        self._check(handle, "nvmlDeviceGetMaxMigDeviceCount")
        if not handle.mig_capable:
            raise NVMLError_NotSupported()
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeDevice, index: int) -> FakeDevice:
        self._check(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        if not handle.mig_enabled:
            raise NVMLError_InvalidArgument()
        if index >= 7:
            raise NVMLError_InvalidArgument()
        if index in handle.mig_errors:
            raise NVMLError(handle.mig_errors[index])
        if index >= len(handle.mig) or handle.mig[index] is None:
            raise NVMLError_NotFound()
        return handle.mig[index]

    # --- topology ----------------------------------------------------------------------------

    def nvmlDeviceGetPciInfo(self, handle: FakeDevice):
        self._check(handle, "nvmlDeviceGetPciInfo")
        return pci_info(handle.bus_id)

    def nvmlDeviceGetTopologyCommonAncestor(self, a: FakeDevice, b: FakeDevice) -> int:
        self._check(a, "nvmlDeviceGetTopologyCommonAncestor")
        self._check(b, "nvmlDeviceGetTopologyCommonAncestor")
        if self.ancestor_error is not None:
            raise NVMLError(self.ancestor_error)
        if a.board is not None and a.board == b.board:
            return NVML_TOPOLOGY_INTERNAL
        if a.pcie[0] != b.pcie[0]:
            return NVML_TOPOLOGY_SYSTEM
        if a.pcie[1] != b.pcie[1]:
            return NVML_TOPOLOGY_NODE
        shared = 0
        while shared < min(len(a.pcie), len(b.pcie)) and a.pcie[shared] == b.pcie[shared]:
            shared += 1
        if shared == 2:
            return NVML_TOPOLOGY_HOSTBRIDGE
        # Both right below the same switch cross one switch; any other path crosses several.
        if shared == len(a.pcie) == len(b.pcie):
            return NVML_TOPOLOGY_SINGLE
        return NVML_TOPOLOGY_MULTIPLE

    def nvmlDeviceGetNvLinkState(self, handle: FakeDevice, link: int) -> int:
        self._nvlink(handle, link, "nvmlDeviceGetNvLinkState")
        return NVML_FEATURE_DISABLED if handle.nvlinks[link] is None else NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: FakeDevice, link: int):
        remote = self._nvlink(handle, link, "nvmlDeviceGetNvLinkRemotePciInfo")
        if remote is None:
            raise NVMLError_NotSupported()  # nothing at the end of a link that is down
        return pci_info(remote)

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: FakeDevice, link: int) -> int:
        remote = self._nvlink(handle, link, "nvmlDeviceGetNvLinkRemoteDeviceType")
        if remote is None:
            raise NVMLError_NotSupported()
        if any(d.bus_id == remote for d in self.devices):
            return NVML_NVLINK_DEVICE_TYPE_GPU
        return self.nvlink_endpoints.get(remote, NVML_NVLINK_DEVICE_TYPE_UNKNOWN)

    def _nvlink(self, handle: FakeDevice, link: int, function: str) -> str | None:
        self._check(handle, function)
        if not handle.nvlinks:
            raise NVMLError_NotSupported()
        if not 0 <= link < len(handle.nvlinks):
            raise NVMLError_InvalidArgument()
        return handle.nvlinks[link]

    # --- checks ------------------------------------------------------------------------------

    def _check_init(self) -> None:
        if self.initialised <= 0:
            raise NVMLError_Uninitialized()

    def _check(self, handle: FakeDevice, function: str) -> None:
        self._check_init()
        if handle.lost:
            raise NVMLError_GpuIsLost()
        if function in handle.unsupported:
            raise NVMLError_NotSupported()



def bus_id(bus: int, domain: int = 0) -> str:
    """A PCI bus id as nvmlPciInfo_t.busId writes it: 8 hex digits of domain."""
    return f"{domain:08X}:{bus:02X}:00.0"


def pci_info(bus_id_text: str) -> SimpleNamespace:
    """An nvmlPciInfo_t; a bus id that is not one (to test garbage) gives zeros for the numbers."""
    try:
        domain, bus, rest = bus_id_text.split(":")
        numbers = int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)
    except ValueError:
        numbers = 0, 0, 0
    return SimpleNamespace(busId=bus_id_text, domain=numbers[0], bus=numbers[1],
                           device=numbers[2])
