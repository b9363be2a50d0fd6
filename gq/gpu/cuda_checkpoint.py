"""Checkpointing real CUDA processes: the driver's checkpoint calls through ctypes on
libcuda.so.1, or NVIDIA's `cuda-checkpoint` utility when the library lacks them.

What the calls are, from NVIDIA's CUDA Driver API reference, section "CUDA Checkpointing"
(docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CHECKPOINT.html), and the structures'
pages (structCUcheckpointLockArgs.html and its siblings), all "defined in cuda.h":

    CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
    CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
    CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
    CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
    CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)
    CUresult cuDriverGetVersion(int *driverVersion)       (12080 is CUDA 12.8)

`args` is optional (NULL) for each; every argument structure is 64 bytes, its reserved bytes
"must be zeroed":
  - CUcheckpointLockArgs { unsigned int timeoutMs; unsigned int reserved0;
    cuuint64_t reserved1[7]; }: timeoutMs 0 waits for ever; a lock that times out leaves the
    process RUNNING.
  - CUcheckpointCheckpointArgs: reserved (cuuint64_t reserved[8] in the first headers; newer
    ones put an optional customStorageInfo_out pointer first, NULL meaning "to host memory").
    All zero in both readings.
  - CUcheckpointRestoreArgs { CUcheckpointGpuPair *gpuPairs; unsigned int gpuPairsCount;
    then reserved bytes (later headers name some: padding0, customStorageInfo_out) }: pairs of
    CUuuid (16 bytes each: oldUuid, the card checkpointed on; newUuid, the card to restore
    onto); "the GPU to restore onto needs to have enough memory and be of the same chip type",
    and the array "must contain every checkpointed GPU". Offsets 0 and 8 are the same in every
    version of the header we found.
  - CUcheckpointUnlockArgs { cuuint64_t reserved[8]; }.
  - CUprocessState: RUNNING 0, LOCKED 1, CHECKPOINTED 2, FAILED 3 (cuda-python's ProcessState
    adds CHECKPOINTING 4 and RESTORING 5 for newer drivers, read here as busy).
The calls return CUDA_SUCCESS (0) or an error such as CUDA_ERROR_ILLEGAL_STATE; a lock that
times out returns CUDA_ERROR_TIMEOUT (909). "Restore requires persistence mode to be enabled or
cuInit to have been called": the helper that calls these calls cuInit(0) first.

The calls exist in drivers 570 and later (driver 550 had only the utility's toggle); NVIDIA's
cuda-checkpoint README lists "CUDA Driver interfaces at feature parity with the cuda-checkpoint
utility" and "a separate lock command which can take a timeout" as 570 features. Which driver
first honours gpuPairs we could not find stated: gq asks for a restore onto another card only
from CUDA 12.8 (the 570 drivers) on, and `bench/gpu_check.sh` restores onto the same card.

The utility, when it is used instead, is run as CRIU's CUDA plugin runs it:
`cuda-checkpoint --action lock|checkpoint|restore|unlock --pid PID [--timeout MS]` and
`cuda-checkpoint --get-state --pid PID`; it cannot move a process to another card.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import uuid as uuidlib
from typing import Any

from gq.gpu.checkpoint import (
    CHECKPOINTED, FAILED, LOCKED, RUNNING, CheckpointError, Checkpointer, Support,
)
from gq.model import Gpu

LIBCUDA = "libcuda.so.1"
CALLS = ("cuCheckpointProcessLock", "cuCheckpointProcessCheckpoint",
         "cuCheckpointProcessRestore", "cuCheckpointProcessUnlock",
         "cuCheckpointProcessGetState")
CUDA_SUCCESS = 0
CUDA_ERROR_TIMEOUT = 909
# CUprocessState; 4 and 5 (checkpointing, restoring) are a step still under way.
STATES = {0: RUNNING, 1: LOCKED, 2: CHECKPOINTED, 3: FAILED, 4: LOCKED, 5: CHECKPOINTED}
REMAP_FROM = 12080  # cuDriverGetVersion of CUDA 12.8, the 570 drivers
UTILITY = "cuda-checkpoint"
UTILITY_TIMEOUT = 600.0  # s: a checkpoint of a large card's memory takes seconds, not minutes


class LockArgs(ctypes.Structure):
    _fields_ = [("timeoutMs", ctypes.c_uint), ("reserved0", ctypes.c_uint),
                ("reserved1", ctypes.c_uint64 * 7)]


class CheckpointArgs(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


class UnlockArgs(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


class CUuuid(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * 16)]


class GpuPair(ctypes.Structure):
    _fields_ = [("oldUuid", CUuuid), ("newUuid", CUuuid)]


class RestoreArgs(ctypes.Structure):
    _fields_ = [("gpuPairs", ctypes.POINTER(GpuPair)), ("gpuPairsCount", ctypes.c_uint),
                ("reserved", ctypes.c_char * 52)]


for _struct in (LockArgs, CheckpointArgs, UnlockArgs, RestoreArgs):
    assert ctypes.sizeof(_struct) == 64, _struct  # as cuda.h has them


def cu_uuid(text: str) -> CUuuid:
    """NVML's 'GPU-5117e000-0000-4000-8000-000000000001' as the driver's 16 bytes."""
    raw = uuidlib.UUID(text.removeprefix("GPU-").removeprefix("MIG-")).bytes
    return CUuuid((ctypes.c_ubyte * 16)(*raw))


def load_libcuda(path: str = LIBCUDA) -> tuple[Any | None, str | None]:
    """(the library with the checkpoint calls typed, None), or (None, why not)."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return None, f"{path} cannot be loaded ({e}): no NVIDIA driver"
    missing = [name for name in CALLS if not hasattr(lib, name)]
    if missing:
        version = _driver_version(lib)
        shown = f"CUDA {version // 1000}.{version % 1000 // 10}" if version else "its driver"
        return None, (f"{path} ({shown}) does not export {missing[0]}: freezing needs NVIDIA "
                      "driver 570 or later")
    pid, ptr = ctypes.c_int, ctypes.c_void_p
    for name in CALLS[:4]:
        getattr(lib, name).argtypes = [pid, ptr]
    lib.cuCheckpointProcessGetState.argtypes = [pid, ctypes.POINTER(ctypes.c_int)]
    for name in CALLS + ("cuInit",):
        getattr(lib, name).restype = ctypes.c_int
    lib.cuInit.argtypes = [ctypes.c_uint]
    return lib, None


def _driver_version(lib: Any) -> int | None:
    version = ctypes.c_int(0)
    try:
        if lib.cuDriverGetVersion(ctypes.byref(version)) == CUDA_SUCCESS:
            return version.value
    except AttributeError:
        pass
    return None


class CudaCheckpointer(Checkpointer):
    """The driver's calls (ctypes), else the cuda-checkpoint utility, else nothing: support()
    says which is missing. `nvml`: pynvml, for the driver's version and the cards'
    persistence mode (None: not asked)."""

    kind = "cuda"

    def __init__(self, nvml: Any = None, library: str = LIBCUDA, utility: str | None = None):
        self._nvml = nvml
        self._lib, self._why = load_libcuda(library)
        self._utility = (shutil.which(UTILITY) if utility is None else utility) \
            if self._lib is None else None
        self._initialised = False

    # ---- the probe -------------------------------------------------------------------------

    def support(self, cards: list[Gpu]) -> Support:
        driver = self._driver_text()
        if self._lib is None and not self._utility_works():
            return Support(driver=driver, why=self._why)
        version = _driver_version(self._lib) if self._lib is not None else None
        remap = version is not None and version >= REMAP_FROM
        return Support(driver=driver, remap=remap, cards={c.index: self._card_problem(c)
                                                          for c in cards})

    def _driver_text(self) -> str | None:
        if self._nvml is not None:
            try:
                text = self._nvml.nvmlSystemGetDriverVersion()
                return text.decode() if isinstance(text, bytes) else str(text)
            except Exception:  # pynvml's NVMLError, or a stand-in without the call
                pass
        version = _driver_version(self._lib) if self._lib is not None else None
        return None if version is None else f"CUDA {version // 1000}.{version % 1000 // 10}"

    def _card_problem(self, card: Gpu) -> str | None:
        if card.parent_uuid is not None:
            return "a MIG instance: gq freezes only processes on whole GPUs"
        if self._nvml is None:
            return None
        try:
            handle = self._nvml.nvmlDeviceGetHandleByUUID(card.uuid)
            enabled = self._nvml.nvmlDeviceGetPersistenceMode(handle)
        except Exception:
            return "its persistence mode cannot be read"
        if enabled != 1:  # NVML_FEATURE_ENABLED
            return ("persistence mode is off, so the driver may let go of the card while its "
                    "job is frozen (`nvidia-smi -pm 1`, or nvidia-persistenced, turns it on)")
        return None

    def _utility_works(self) -> bool:
        """Whether cuda-checkpoint is there and has --action (driver 570+), as CRIU checks."""
        if self._utility is None:
            return False
        try:
            out = subprocess.run([self._utility, "--help"], capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if "--action" not in out.stdout + out.stderr:
            self._why = f"{self._utility} has no --action: freezing needs driver 570 or later"
            return False
        return True

    def free_memory(self, uuid: str) -> int | None:
        """From NVML, which the helper opens for this if the daemon did not give it."""
        nvml = self._nvml
        try:
            if nvml is None:
                import pynvml as nvml

                nvml.nvmlInit()
                self._nvml = nvml
            return int(nvml.nvmlDeviceGetMemoryInfo(nvml.nvmlDeviceGetHandleByUUID(uuid)).free)
        except Exception:  # no pynvml, no NVML, an unknown card: the restore is tried anyway
            return None

    # ---- the steps -------------------------------------------------------------------------

    def state(self, pid: int) -> str:
        if self._lib is None:
            word = self._run_utility("state", ["--get-state", "--pid", str(pid)]).strip()
            state = word.split()[-1].lower() if word else ""
            if state not in (RUNNING, LOCKED, CHECKPOINTED, FAILED):
                raise CheckpointError("state", f"cuda-checkpoint said {word!r}")
            return state
        value = ctypes.c_int(-1)
        self._call("state", self._lib.cuCheckpointProcessGetState, pid, ctypes.byref(value))
        return STATES.get(value.value, FAILED)

    def lock(self, pid: int, timeout: float) -> None:
        ms = max(1, int(timeout * 1000))  # 0 would wait for ever
        if self._lib is None:
            self._run_utility("lock", ["--action", "lock", "--pid", str(pid), "--timeout",
                                       str(ms)], timeout=timeout + 30)
            return
        self._call("lock", self._lib.cuCheckpointProcessLock, pid,
                   ctypes.byref(LockArgs(timeoutMs=ms)))

    def checkpoint(self, pid: int) -> None:
        if self._lib is None:
            self._run_utility("checkpoint", ["--action", "checkpoint", "--pid", str(pid)])
            return
        self._call("checkpoint", self._lib.cuCheckpointProcessCheckpoint, pid,
                   ctypes.byref(CheckpointArgs()))

    def restore(self, pid: int, remap: dict[str, str]) -> None:
        moves = {old: new for old, new in remap.items() if old != new}
        if self._lib is None:
            if moves:
                raise CheckpointError("restore", "cuda-checkpoint cannot restore onto another "
                                      "card")
            self._run_utility("restore", ["--action", "restore", "--pid", str(pid)])
            return
        args = RestoreArgs()
        if moves:
            pairs = (GpuPair * len(remap))(*(GpuPair(cu_uuid(old), cu_uuid(new))
                                             for old, new in remap.items()))
            args.gpuPairs = ctypes.cast(pairs, ctypes.POINTER(GpuPair))
            args.gpuPairsCount = len(remap)
        self._call("restore", self._lib.cuCheckpointProcessRestore, pid, ctypes.byref(args))

    def unlock(self, pid: int) -> None:
        if self._lib is None:
            self._run_utility("unlock", ["--action", "unlock", "--pid", str(pid)])
            return
        self._call("unlock", self._lib.cuCheckpointProcessUnlock, pid,
                   ctypes.byref(UnlockArgs()))

    # ---- calling ---------------------------------------------------------------------------

    def _call(self, step: str, fn, *args) -> None:
        if not self._initialised:
            result = self._lib.cuInit(0)
            if result != CUDA_SUCCESS:
                raise CheckpointError(step, f"cuInit failed: {self._error(result)}")
            self._initialised = True
        result = fn(*args)
        if result != CUDA_SUCCESS:
            raise CheckpointError(step, self._error(result),
                                  timed_out=result == CUDA_ERROR_TIMEOUT)

    def _error(self, result: int) -> str:
        name = ctypes.c_char_p()
        try:
            if self._lib.cuGetErrorName(result, ctypes.byref(name)) == CUDA_SUCCESS and name.value:
                return f"{name.value.decode()} ({result})"
        except AttributeError:
            pass
        return f"CUresult {result}"

    def _run_utility(self, step: str, args: list[str], timeout: float = UTILITY_TIMEOUT) -> str:
        if self._utility is None:
            raise CheckpointError(step, self._why or "no libcuda and no cuda-checkpoint")
        try:
            out = subprocess.run([self._utility, *args], capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CheckpointError(step, f"cuda-checkpoint took over {timeout:g}s",
                                  timed_out=step == "lock") from None
        except OSError as e:
            raise CheckpointError(step, f"cannot run {self._utility}: {e}") from None
        if out.returncode != 0:
            said = " ".join((out.stdout + out.stderr).split())[:300]
            raise CheckpointError(step, f"cuda-checkpoint failed ({out.returncode}): {said}",
                                  timed_out="timeout" in said.lower() and step == "lock")
        return out.stdout
