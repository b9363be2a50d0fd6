"""Real cards through NVML (the pynvml module of nvidia-ml-py), MIG instances included."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

from gq.gpu.base import CardBackend
from gq.gpu.topology import read_islands
from gq.model import Gpu, GpuProcess

log = logging.getLogger(__name__)

# NVML's "not available" for 64-bit counters; pynvml turns it into None, older versions do not.
_NOT_AVAILABLE_U64 = (1 << 64) - 1
_MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE

# A card's place in the machine: (NVML index, MIG slot or None for the whole card).
CardKey = tuple[int, int | None]


class NvmlUnavailable(Exception):
    """NVML cannot start here: no library, no driver, or pynvml missing. The message says which."""


class NvmlBackend(CardBackend):
    """Reads every schedulable card: whole GPUs, or the MIG instances of a GPU with MIG on."""

    kind = "nvml"

    def __init__(self, nvml: Any = None):
        """`nvml` is the pynvml module (imported when None), or a stand-in with its functions."""
        self._nvml = nvml if nvml is not None else _import_pynvml()
        self._errors = _error_types(self._nvml)
        try:
            self._nvml.nvmlInit()
        except Exception as e:  # pynvml raises NVMLError, or its own mismatch error, or OSError
            raise NvmlUnavailable(f"NVML cannot start: {e}") from e
        self._open = True
        # Identity seen on earlier reads, so that a card that stops answering is still listed.
        self._known: dict[CardKey, Gpu] = {}
        # The newest per-process utilisation sample seen per card (NVML's microsecond clock).
        self._util_seen: dict[CardKey, int] = {}
        # NVML index -> island; {} when the topology is unknown. Read once: links do not change.
        self._islands: dict[int, int] = read_islands(self._nvml, self._errors)

    def checkpointer(self):
        from gq.gpu.cuda_checkpoint import CudaCheckpointer

        return CudaCheckpointer(nvml=self._nvml)

    def close(self) -> None:
        if self._open:
            self._open = False
            self._call(self._nvml.nvmlShutdown)

    def read(self) -> list[Gpu]:
        n = self._nvml
        count = self._call(n.nvmlDeviceGetCount)
        seen: dict[CardKey, Gpu] = {}
        for phys in range(count or 0):
            try:
                seen.update(self._read_physical(phys))
            except Exception:  # one bad card must not hide the others
                log.exception("reading GPU %d failed", phys)
                seen.update(self._lost(phys))
        # Known cards that NVML no longer counts (fallen off the bus, or count failed) are lost.
        for key in self._known:
            if key[0] >= (count or 0):
                seen.setdefault(key, _unmeasured(self._known[key]))
        self._known = {key: _unmeasured(g) for key, g in seen.items()}
        return _numbered([seen[key] for key in sorted(seen, key=_physical_order)])

    # --- one physical GPU ---------------------------------------------------------------------

    def _read_physical(self, phys: int) -> dict[CardKey, Gpu]:
        n = self._nvml
        handle = self._call(n.nvmlDeviceGetHandleByIndex, phys)
        uuid = None if handle is None else self._text(n.nvmlDeviceGetUUID, handle)
        if uuid is None:
            return self._lost(phys)
        mig = self._mig_enabled(handle)
        if mig is None:  # cannot tell which cards it offers
            return self._lost(phys)
        if not mig:
            card = self._read_card((phys, None), handle, visible_id=str(phys))
            return {} if card is None else {(phys, None): card}
        return self._read_mig(phys, handle, uuid)

    def _mig_enabled(self, handle: Any) -> bool | None:
        n = self._nvml
        try:
            return n.nvmlDeviceGetMigMode(handle)[0] == _MIG_ENABLED
        except n.NVMLError_NotSupported:
            return False  # a GPU without MIG
        except self._errors:
            return None

    def _read_mig(self, phys: int, handle: Any, parent_uuid: str) -> dict[CardKey, Gpu]:
        n = self._nvml
        slots = self._call(n.nvmlDeviceGetMaxMigDeviceCount, handle)
        if slots is None:
            return self._lost(phys)
        cards: dict[CardKey, Gpu] = {}
        for slot in range(slots):
            key = (phys, slot)
            try:
                mig_handle = n.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except n.NVMLError_NotFound:
                continue  # an empty slot: no instance was created there
            except self._errors:
                if key in self._known:
                    cards[key] = _unmeasured(self._known[key])
                continue
            card = self._read_card(key, mig_handle, visible_id=None, parent_uuid=parent_uuid)
            if card is not None:
                cards[key] = card
        return cards

    def _lost(self, phys: int) -> dict[CardKey, Gpu]:
        """The cards of GPU `phys` as last seen, with nothing measured; none if never seen."""
        return {k: _unmeasured(g) for k, g in self._known.items() if k[0] == phys}

    # --- one schedulable card -----------------------------------------------------------------

    def _read_card(self, key: CardKey, handle: Any, visible_id: str | None,
                   parent_uuid: str | None = None) -> Gpu | None:
        """A card with whatever could be measured. None if it was never identified."""
        n = self._nvml
        known = self._known.get(key)
        uuid = self._text(n.nvmlDeviceGetUUID, handle)
        if known is not None and uuid not in (None, known.uuid):
            known = None  # another card now sits at this place (MIG reconfigured, or reboot)
        memory = self._call(n.nvmlDeviceGetMemoryInfo, handle)
        name = self._text(n.nvmlDeviceGetName, handle)
        if known is None:
            if uuid is None or memory is None:
                return None  # without an identity and a capacity it cannot be scheduled
            known = Gpu(index=-1, uuid=uuid, name=name or "Unknown GPU",
                        memory_total=int(memory.total), visible_id=visible_id or uuid,
                        parent_uuid=parent_uuid, island=self._islands.get(key[0]))
        util = self._call(n.nvmlDeviceGetUtilizationRates, handle)
        power_mw = self._call(n.nvmlDeviceGetPowerUsage, handle)
        card = _unmeasured(known)
        card.memory_used = None if memory is None else _available(memory.used)
        card.utilization = None if util is None else _available(util.gpu)
        card.temperature = self._temperature(handle)
        card.power_w = None if power_mw is None else power_mw / 1000
        card.processes = self._processes(key, handle)
        return card

    def _temperature(self, handle: Any) -> int | None:
        n = self._nvml
        try:
            return int(n.nvmlDeviceGetTemperature(handle, n.NVML_TEMPERATURE_GPU))
        except self._errors as e:
            # The unversioned call is deprecated; a future driver may only have the V form.
            missing = getattr(n, "NVMLError_FunctionNotFound", ())
            if missing and isinstance(e, missing) and hasattr(n, "nvmlDeviceGetTemperatureV"):
                value = self._call(n.nvmlDeviceGetTemperatureV, handle, n.NVML_TEMPERATURE_GPU)
                return None if value is None else int(value)
            return None

    def _processes(self, key: CardKey, handle: Any) -> list[GpuProcess] | None:
        """The compute processes on the card, or None when NVML cannot list them."""
        procs = self._call(self._nvml.nvmlDeviceGetComputeRunningProcesses, handle)
        if procs is None:
            return None
        util = self._process_utilization(key, handle) if procs else {}
        return [GpuProcess(pid=int(p.pid), used_memory=_available(p.usedGpuMemory),
                           utilization=util.get(int(p.pid))) for p in procs]

    def _process_utilization(self, key: CardKey, handle: Any) -> dict[int, int]:
        """Each process's mean SM utilisation since the last read, by pid. A process with no
        sample (NVML keeps none for one that launched no kernel, or one that has just gone)
        is left out: unknown, not idle. Cards without per-process accounting give {}."""
        since = self._util_seen.get(key, 0)
        samples = self._call(self._nvml.nvmlDeviceGetProcessUtilization, handle, since)
        if not samples:
            return {}
        by_pid: dict[int, list[int]] = {}
        for sample in samples:
            by_pid.setdefault(int(sample.pid), []).append(int(sample.smUtil))
            since = max(since, int(sample.timeStamp))
        self._util_seen[key] = since
        return {pid: min(100, round(sum(v) / len(v))) for pid, v in by_pid.items()}

    # --- calling NVML -------------------------------------------------------------------------

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args), or None when NVML cannot say (not supported, GPU lost, any NVML error)."""
        try:
            return fn(*args)
        except self._errors:
            return None

    def _text(self, fn: Callable[..., Any], *args: Any) -> str | None:
        value = self._call(fn, *args)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return value or None


def _import_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError as e:
        raise NvmlUnavailable(f"pynvml cannot be imported ({e}); install nvidia-ml-py") from e
    return pynvml


def _error_types(nvml: ModuleType) -> tuple[type[BaseException], ...]:
    # pynvml raises NVMLLibraryMismatchError (not an NVMLError) when the driver lacks a function.
    mismatch = getattr(nvml, "NVMLLibraryMismatchError", None)
    return (nvml.NVMLError,) + ((mismatch,) if mismatch else ())


def _available(value: int | None) -> int | None:
    if value is None or value >= _NOT_AVAILABLE_U64:
        return None
    return int(value)


def _unmeasured(card: Gpu) -> Gpu:
    """A copy holding only what does not change: every measurement unknown."""
    return Gpu(index=card.index, uuid=card.uuid, name=card.name, memory_total=card.memory_total,
               visible_id=card.visible_id, parent_uuid=card.parent_uuid, island=card.island,
               processes=None)



def _physical_order(key: CardKey) -> tuple[int, int]:
    return (key[0], -1 if key[1] is None else key[1])


def _numbered(cards: list[Gpu]) -> list[Gpu]:
    for index, card in enumerate(cards):
        card.index = index
    return cards
