"""Which physical GPUs are linked (NVLink, or one PCIe switch), read from NVML as islands."""

from __future__ import annotations

import logging
import re
from collections.abc import Hashable, Iterable
from typing import Any

log = logging.getLogger(__name__)

# Fallbacks for pynvml versions that lack a constant; the values are NVML's.
_TOPOLOGY_MULTIPLE = 20  # NVML_TOPOLOGY_MULTIPLE: behind PCIe switches, below the host bridge
_NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS of older drivers; newer pynvml says 36
_FEATURE_ENABLED = 1  # NVML_FEATURE_ENABLED: the link is up
_NVLINK_TO_CPU = 1  # NVML_NVLINK_DEVICE_TYPE_IBMNPU: a link to the CPU links no GPUs
_BUS_ID = re.compile(r"([0-9a-f]+):([0-9a-f]+):([0-9a-f]+)(?:\.[0-7])?")

PciAddress = tuple[int, int, int]  # PCI domain, bus, device


class TopologyUnknown(Exception):
    """NVML would not say how some GPUs are connected."""


def number_islands(gpus: Iterable[int],
                   links: Iterable[tuple[Hashable, Hashable]]) -> dict[int, int]:
    """GPU -> island: the connected components of `links`, numbered 0, 1, ... in the order of
    their lowest GPU. A link may pass through a node that is not a GPU (an NVSwitch)."""
    parent: dict[Hashable, Hashable] = {}

    def root(node: Hashable) -> Hashable:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in links:
        parent[root(a)] = root(b)
    numbers: dict[Hashable, int] = {}
    return {gpu: numbers.setdefault(root(gpu), len(numbers)) for gpu in sorted(gpus)}


def read_islands(nvml: Any, errors: tuple[type[BaseException], ...]) -> dict[int, int]:
    """NVML index -> island for every GPU, or {} when NVML cannot tell how they are connected.

    Two GPUs are linked when NVLink joins them, directly or through an NVSwitch, or when PCIe
    traffic between them stays behind PCIe switches (nvidia-smi's PIX and PXB; NVML's levels
    up to MULTIPLE). Topology does not change while the machine runs: read it once.
    """
    try:
        return _read_islands(nvml, errors)
    except (*errors, TopologyUnknown) as e:
        log.warning("GPU topology unknown, multi-card jobs get no link preference: %s", e)
    except Exception:  # a surprise in the topology must not stop the daemon from starting
        log.exception("reading the GPU topology failed")
    return {}


def _read_islands(nvml: Any, errors: tuple[type[BaseException], ...]) -> dict[int, int]:
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    gpu_at = {_pci_address(nvml.nvmlDeviceGetPciInfo(h)): i for i, h in enumerate(handles)}
    links: list[tuple[Hashable, Hashable]] = []
    for i, handle in enumerate(handles):
        links += _nvlinks(nvml, i, handle, gpu_at, errors)
    unread = []
    level_limit = getattr(nvml, "NVML_TOPOLOGY_MULTIPLE", _TOPOLOGY_MULTIPLE)
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            try:
                level = nvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
            except errors as e:
                unread.append((i, j, e))
                continue
            if level <= level_limit:
                links.append((i, j))
    islands = number_islands(range(len(handles)), links)
    # A pair NVML would not place matters only if nothing else joins it.
    for i, j, e in unread:
        if islands[i] != islands[j]:
            raise TopologyUnknown(f"how GPUs {i} and {j} connect: {e}")
    return islands


def _nvlinks(nvml: Any, gpu: int, handle: Any, gpu_at: dict[PciAddress, int],
             errors: tuple[type[BaseException], ...]) -> list[tuple[Hashable, Hashable]]:
    """The NVLinks that are up on one GPU, as (gpu, other gpu) or (gpu, ("nvswitch", address))."""
    # NotSupported: the GPU has no NVLink; InvalidArgument: it has fewer links than the most.
    no_link = (nvml.NVMLError_NotSupported, nvml.NVMLError_InvalidArgument)
    enabled = getattr(nvml, "NVML_FEATURE_ENABLED", _FEATURE_ENABLED)
    links: list[tuple[Hashable, Hashable]] = []
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", _NVLINK_MAX_LINKS)):
        try:
            if nvml.nvmlDeviceGetNvLinkState(handle, link) != enabled:
                continue
        except no_link:
            continue
        remote = _pci_address(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link))
        if remote in gpu_at:
            links.append((gpu, gpu_at[remote]))
        elif _remote_type(nvml, handle, link, errors) != _NVLINK_TO_CPU:
            # An NVSwitch, or a device NVML will not name: the GPUs that reach it are linked.
            links.append((gpu, ("nvswitch", remote)))
    return links


def _remote_type(nvml: Any, handle: Any, link: int,
                 errors: tuple[type[BaseException], ...]) -> int | None:
    get = getattr(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", None)  # newer drivers only
    if get is None:
        return None
    try:
        return get(handle, link)
    except errors:
        return None


def _pci_address(info: Any) -> PciAddress:
    """Where a device sits on PCI, from its busId text as NCCL reads it. Compared as numbers,
    because NVML writes the domain with 4 digits in some places and 8 in others."""
    bus_id = info.busId
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    m = _BUS_ID.fullmatch(str(bus_id).strip().lower())
    if not m:
        raise TopologyUnknown(f"unreadable PCI bus id {bus_id!r}")
    domain, bus, device = (int(g, 16) for g in m.groups())
    return (domain, bus, device)
