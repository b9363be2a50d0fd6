"""What a failed job's log says killed it: the rules, as data (pattern, class, priority)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The failure classes (the JSON field `failure` of an ended job, docs/triage.md).
GPU_OOM = "gpu_oom"
HOST_OOM = "host_oom"
NCCL = "nccl"
CUDA_ERROR = "cuda_error"
IMPORT_ENV = "import_env"
DISK_FULL = "disk_full"
SEGFAULT = "segfault"
DATA_ERROR = "data_error"
TIMEOUT_SIGNAL = "timeout_signal"
UNKNOWN = "unknown"
CLASSES = (GPU_OOM, HOST_OOM, NCCL, CUDA_ERROR, IMPORT_ENV, DISK_FULL, SEGFAULT, DATA_ERROR,
           TIMEOUT_SIGNAL, UNKNOWN)
# Classes whose fix is a resource request, for the "fails for resource reasons" indicator.
RESOURCE_CLASSES = frozenset({GPU_OOM, HOST_OOM, DISK_FULL, TIMEOUT_SIGNAL})


@dataclass(frozen=True)
class Rule:
    """A line matching `pattern` is evidence of `failure`. When lines of several classes are
    in a log, the highest `priority` is what killed the process: a rank that ran out of card
    memory makes the others time out in NCCL, and the OOM is the cause; a C++ abort after an
    NCCL watchdog dumps core, and the watchdog is the cause. `in_warning`: whether a line that
    is only a warning still counts (an OOM warning that a library recovered from does not)."""

    failure: str
    priority: int
    pattern: re.Pattern
    in_warning: bool = False


def _rule(failure: str, priority: int, pattern: str, flags: int = 0, in_warning: bool = False
          ) -> Rule:
    return Rule(failure, priority, re.compile(pattern, flags), in_warning)


RULES: tuple[Rule, ...] = (
    # A batch system's time limit, said by the batch system itself: nothing outranks it.
    _rule(TIMEOUT_SIGNAL, 95, r"DUE TO TIME LIMIT|CANCELLED AT \S+ DUE TO|TIME LIMIT EXCEEDED"),
    # Out of GPU memory: PyTorch, cuBLAS/cuDNN, the CUDA runtime and driver, JAX/XLA, TF, CuPy.
    _rule(GPU_OOM, 92, r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError"
          r"|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUDA_ERROR_OUT_OF_MEMORY"
          r"|cudaErrorMemoryAllocation|CUDA error: out of memory"
          r"|RESOURCE_EXHAUSTED: (?:Out of memory|Failed to allocate)"
          r"|OOM when allocating tensor|cupy\.cuda\.memory\.OutOfMemoryError"),
    # The kernel's OOM killer, in the kernel log or as the shell and launchers report it.
    _rule(HOST_OOM, 90, r"Out of memory: Kill(?:ed)? process|invoked oom-killer|oom-kill:"
          r"|oom_kill_process|Memory cgroup out of memory"),
    _rule(HOST_OOM, 90, r"is killed by signal: Killed|(?:exitcode\s*:|return code =)\s*-9\b|signal 9\b"
          r"|Killed(?:\s*$|\s+\S)|已杀死|MemoryError\b|std::bad_alloc"
          r"|Unable to allocate [\d.]+ \w+ for an array"),
    _rule(HOST_OOM, 90, r"(?:exit code|EXIT CODE|Exit code):? (?:137|9)\b"),
    _rule(DISK_FULL, 85, r"No space left on device|\[Errno 28\]|Disk quota exceeded"
          r"|\[Errno 122\]|StorageFull|ENOSPC|EDQUOT"
          r"|PytorchStreamWriter failed writing file|unable to write to file </torch_"),
    # Crashes of native code. A bus error in a DataLoader worker is also how a full /dev/shm
    # shows; the suggestion says so.
    _rule(SEGFAULT, 80, r"Segmentation fault|SIGSEGV|signal 11\b|(?:exitcode\s*:|return code =)\s*-(?:11|7)\b"
          r"|exit code:? 139\b|Bus error|bus error|BUS error|SIGBUS|Fatal Python error"),
    # The environment: modules, shared libraries, symbols, the command itself.
    _rule(IMPORT_ENV, 75, r"ModuleNotFoundError|No module named|ImportError"
          r"|undefined symbol|cannot open shared object file|command not found"
          r"|execve\(\): .*No such file or directory|(?:sh|bash): (?:line )?\d+: .*not found"
          r"|GLIBC\S* not found|version `\S+' not found"),
    # CUDA faults that more memory would not cure: bad accesses, device asserts, Xid-like
    # faults, a driver or kernel image that does not match.
    _rule(CUDA_ERROR, 70, r"CUDA error: |cuda runtime error \(|CUDA failure \d+"
          r"|illegal memory access|device-side assert|no kernel image is available"
          r"|CUDA driver version is insufficient|unspecified launch failure"
          r"|misaligned address|CUBLAS_STATUS_EXECUTION_FAILED|CUDNN_STATUS_EXECUTION_FAILED"
          r"|CUDA-capable device\(s\) is/are busy|Xid \d+"
          r"|cudaErrorIllegalAddress|cudaErrorLaunchFailure|CUDA_ERROR_ILLEGAL_ADDRESS"),
    # Collective communication: errors and watchdog timeouts. Often the echo of a rank that
    # died of something else, hence below the classes above.
    _rule(NCCL, 50, r"Watchdog caught collective operation timeout|NCCL error"
          r"|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError"
          r"|ncclInvalidUsage|ncclInvalidArgument|DistBackendError|NCCL WARN"
          r"|Some NCCL operations have failed or timed out|watchdog got stuck"
          r"|ProcessGroupNCCL.*(?:[Tt]imeout|[Ww]atchdog)|NCCL communicator was aborted",
          in_warning=True),
    # A signal from outside: a launcher or a batch system said it received one.
    _rule(TIMEOUT_SIGNAL, 45, r"got signal: (?:1|2|15)\b|Received (?:1|2|15) death signal"
          r"|received signal SIGTERM|Terminated by signal 15|SIGTERM received"
          r"|JOB \d+ ON \S+ CANCELLED AT", in_warning=True),
    # A core dump with nothing better said: often the abort after another error.
    _rule(SEGFAULT, 30, r"core dumped|Aborted \(core"),
    # An ordinary exception in the user's code: the last line of a Python traceback.
    _rule(DATA_ERROR, 20, r"^\s*(?:\[rank\d+\]:\s*)?(?:[A-Za-z_][\w.]*\.)?"
          r"(?!ChildFailedError|SignalException)(?:[A-Z]\w*)?(?:Error|Exception)(?::|\s*$)"),
    _rule(DATA_ERROR, 20, r"Caught \w+(?:Error|Exception) in DataLoader worker"),
)

# A line that only warns: its evidence does not count unless the rule says it does.
WARNING = re.compile(r"[Ww]arn|WARN|^\[W |^W\d{4} |\[W\d{4} ")

