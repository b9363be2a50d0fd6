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

# Causes within a class, for advice that fits (gq/triage/advice.py): the class stays what the
# contract names; the cause picks the words. A rule without one gives its class's advice.
TIME_LIMIT = "time_limit"  # a batch system's (or gq's) time limit
OOM_KILLER = "oom_killer"  # the kernel's OOM killer, or a cgroup's
PROCESS_MEMORY = "process_memory"  # the process's own allocation failed (MemoryError)
QUOTA = "quota"  # a disk quota, not a full disk
SHM = "shm"  # /dev/shm, shared memory between DataLoader workers
LOST_CWD = "lost_cwd"  # its working directory was gone when it started
DRIVER = "driver"  # the host's NVIDIA driver missing, not loaded or too old
COLLECTIVE_TIMEOUT = "collective_timeout"  # a collective or rendezvous timed out


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
    cause: str | None = None


def _rule(failure: str, priority: int, pattern: str, flags: int = 0, in_warning: bool = False,
          cause: str | None = None) -> Rule:
    return Rule(failure, priority, re.compile(pattern, flags), in_warning, cause)


RULES: tuple[Rule, ...] = (
    # A batch system's time limit, said by the batch system itself: nothing outranks it.
    _rule(TIMEOUT_SIGNAL, 95, r"DUE TO TIME LIMIT|CANCELLED AT \S+ DUE TO|TIME LIMIT EXCEEDED"
          r"|^gq: time limit (?:\S+ )?reached|TERM_RUNLIMIT|walltime \d+ exceeded limit"
          r"|job killed: walltime|(?:exceeded|due to) (?:its |the )?(?:wall ?clock|run ?time|wall ?time)"
          r"(?: time)? limit|not requeued because: timed-out|JobState=TIMEOUT",
          re.I, cause=TIME_LIMIT),
    # Out of GPU memory: PyTorch, cuBLAS/cuDNN, the CUDA runtime and driver, JAX/XLA, TF, CuPy.
    _rule(GPU_OOM, 92, r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError"
          r"|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUDA_ERROR_OUT_OF_MEMORY"
          r"|cudaErrorMemoryAllocation|CUDA error: out of memory"
          r"|(?i:resource[_ ]exhausted): (?:Out of memory|Failed to allocate)"
          r"|OOM when allocating tensor|cupy\.cuda\.memory\.OutOfMemoryError"
          r"|(?:error=2|cuda runtime error \(2\)) : out of memory|cudaSuccess \(2 vs\. 0\)"
          r"|(?:not|n't) have enough (?:GPU|video|device) memory"),
    # The kernel's OOM killer, in the kernel log, a cgroup's or a batch system's words.
    _rule(HOST_OOM, 90, r"Out of memory: Kill(?:ed)? process|invoked oom-killer|oom-kill[: ]"
          r"|oom_kill_process|Memory cgroup out of memory|Killed process \d+ \("
          r"|out-of-memory handler|oom[-_]kill event|OOM ?Killed|OOM[ -]killer|task \d+: Out Of Memory"
          r"|exceeded (?:job )?memory limit|Exceeded job memory limit"
          r"|signal terminated program (?:cc1|cc1plus|lto1|ld)\b", cause=OOM_KILLER),
    # The process's own words: an allocation of host memory failed.
    _rule(HOST_OOM, 90, r"DefaultCPUAllocator: (?:not enough memory|can't allocate memory)"
          r"|MemoryError\b|std::bad_alloc|Unable to allocate [\d.]+ \w+ for an array"
          r"|\[Errno 12\] Cannot allocate memory|fork: Cannot allocate memory"
          r"|[Oo]ut of memory allocating|Cannot allocate memory \(12\)",
          cause=PROCESS_MEMORY),
    # A SIGKILL as the shell and launchers report it: almost always the OOM killer.
    _rule(HOST_OOM, 90, r"is killed by signal: Killed|terminated with signal SIGKILL|(?:exitcode\s*:|return code =)\s*-9\b"
          r"|[Ss]ignal 9\b|Signals\.SIGKILL"
          r"|Killed(?:\s*$|\s+\S)|(?:^|: )killed(?:\s*$|\s+\S)|已杀死"
          r"|(?:exit(?:ed)?(?: with)? (?:code|status)|exitcode|return ?code|exit_code)"
          r"\s*[:=]?\s*(?:137|-9)\b"),
    _rule(HOST_OOM, 90, r"(?:exit code|EXIT CODE|Exit code):? (?:137|9)\b"),
    # Full disks: a quota, /dev/shm (where DataLoader workers hand over tensors), any other.
    _rule(DISK_FULL, 85, r"Disk quota exceeded|\[Errno 122\]|EDQUOT", re.I,
          cause=QUOTA),
    _rule(DISK_FULL, 85, r"unable to write to file </torch_|/dev/shm.*No space left"
          r"|No space left.*/dev/shm", cause=SHM),
    _rule(DISK_FULL, 85, r"No space left on device|\[Errno 28\]|StorageFull|ENOSPC"
          r"|PytorchStreamWriter failed writing file|unexpected pos \d+ vs \d+"
          r"|not enough (?:free )?disk space|not enough space on the disk|database or disk is full",
          re.I),
    # Crashes of native code. A bus error in a DataLoader worker is also how a full /dev/shm
    # shows; the suggestion says so.
    _rule(SEGFAULT, 80, r"[Ss]egmentation fault|SIGSEGV|signal 11\b|(?:exitcode\s*:|return code =)\s*-(?:11|7)\b"
          r"|exit code:? 139\b|Bus error|bus error|BUS error|SIGBUS"
          r"|Fatal Python error: (?:Segmentation fault|Bus error|Illegal instruction)"
          r"|Illegal instruction|\bSIGILL\b"),
    # A working directory gone before the start (deleted, or a mount gone): the shell, Python
    # and gq's own shim say so in their own words.
    _rule(IMPORT_ENV, 78, r"^gq: cannot enter \S.*: No such file|getcwd(?:\(\))?(?: failed|: cannot access)"
          r"|error retrieving current directory|(?:couldn't|can't|cannot|could not) chdir to"
          r"|failed changing into working directory"
          r"|current (?:working )?directory: No such file|Unable to read current working|uv_cwd"
          r"|^(?:FileNotFoundError|OSError): \[Errno 2\] No such file or directory\s*$",
          cause=LOST_CWD),
    # The host's NVIDIA driver: missing, not loaded, or older than the job's CUDA needs. Not
    # the job's code; torch says the first as a warning, then fails on it.
    _rule(CUDA_ERROR, 77, r"Found no NVIDIA driver|NVIDIA-SMI has failed|couldn't communicate "
          r"with the NVIDIA driver|CUDA driver version is insufficient|NVIDIA driver on your "
          r"system is too old|Driver/library version mismatch|libcuda\.so\S*: cannot open"
          r"|libnvidia-ml\.so\S*: cannot open|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice"
          r"|no CUDA-capable device is detected|No CUDA GPUs are available"
          r"|cudaErrorInsufficientDriver|NVIDIA kernel module|CUDA driver initialization failed"
          r"|unsupported display driver / cuda driver combination", in_warning=True, cause=DRIVER),
    # The environment: modules, shared libraries, symbols, the command itself.
    _rule(IMPORT_ENV, 75, r"ModuleNotFoundError|No module named|ImportError"
          r"|undefined symbol|cannot open shared object file|command not found"
          r"|execve\(\): .*No such file or directory|(?:sh|bash): (?:line )?\d+: .*not found"
          r"|GLIBC\S* not found|version `\S+' not found|^gq: cannot run "
          r"|not compiled with CUDA enabled|doesn't have NCCL built in"),
    # CUDA faults that more memory would not cure: bad accesses, device asserts, Xid-like
    # faults, a kernel image that does not match.
    _rule(CUDA_ERROR, 70, r"CUDA error: |cuda runtime error \(|CUDA failure \d+"
          r"|illegal memory access|device-side assert|no kernel image is available"
          r"|unspecified launch failure"
          r"|misaligned address|CUBLAS_STATUS_EXECUTION_FAILED|CUDNN_STATUS_EXECUTION_FAILED"
          r"|CUDA-capable device\(s\) is/are busy|Xid \d+"
          r"|cudaErrorIllegalAddress|cudaErrorLaunchFailure|CUDA_ERROR_ILLEGAL_ADDRESS"
          r"|CUDNN_STATUS_(?:INTERNAL_ERROR|NOT_INITIALIZED|MAPPING_ERROR|NOT_SUPPORTED|BAD_PARAM"
          r"|ARCH_MISMATCH)|[Cc]u[Dd][Nn][Nn] error: |invalid device function|::cuda_error\b"
          r"|CU(?:RAND|BLAS|SPARSE|FFT|SOLVER)_STATUS_(?!SUCCESS\b|ALLOC_FAILED\b)[A-Z_]+"),
    # Collective communication: a watchdog's or a rendezvous's timeout, then errors. Often the
    # echo of a rank that died of something else, hence below the classes above.
    _rule(NCCL, 50, r"Watchdog caught collective operation timeout|watchdog got stuck"
          r"|Some NCCL operations have failed or timed out|ProcessGroupNCCL.*(?:[Tt]imeout|"
          r"[Ww]atchdog|[Tt]imed out)|DistStoreError|RendezvousTimeoutError"
          r"|Timed out (?:after \d+ seconds )?waiting for (?:clients|workers|the store)"
          r"|is setting up NCCL communicator|Timeout waiting for key",
          in_warning=True, cause=COLLECTIVE_TIMEOUT),
    _rule(NCCL, 50, r"NCCL error"
          r"|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError"
          r"|ncclInvalidUsage|ncclInvalidArgument|DistBackendError|NCCL WARN"
          r"|NCCL communicator was aborted", in_warning=True),
    # A signal from outside: a launcher or a batch system said it received one.
    _rule(TIMEOUT_SIGNAL, 45, r"got signal: (?:1|2|15)\b|Received (?:1|2|15) death signal"
          r"|received signal SIGTERM|Terminated by signal 15|SIGTERM received"
          r"|JOB \d+ ON \S+ CANCELLED AT|Signals\.SIGTERM|(?<![A-Za-z])Terminated\s*$"
          r"|Job step aborted|forcing job termination|^KeyboardInterrupt\s*$"
          r"|[Rr]eceived (?:a )?(?:cancellation|termination) signal"
          r"|[Cc]aught signal SIG(?:TERM|HUP|INT|USR[12])\b|job (?:is|was) preempted"
          r"|^job preempted|Job deleted at request of|RaisedSignal:(?:1|2|15)\b",
          in_warning=True),
    # A core dump with nothing better said: often the abort after another error.
    _rule(SEGFAULT, 30, r"core dumped|Aborted \(core|dumped core|Fatal Python error"),
    # An ordinary exception in the user's code: the last line of a Python traceback.
    _rule(DATA_ERROR, 20, r"^\s*[`'\"]?(?:\[(?:rank)?\d+\]:?\s*)?(?:[A-Za-z_][\w.]*\.)?"
          r"(?!ChildFailedError|SignalException)(?:[A-Z]\w*)?(?:Error|Exception)(?::|\s*$)"),
    _rule(DATA_ERROR, 20, r"Caught \w+(?:Error|Exception) in DataLoader worker"
          r"|^!!! Exception during processing|Expected all tensors to be on the same device"
          r"|Traceback \(most recent call last\):.* (?:[A-Z]\w*)?(?:Error|Exception): "
          r"|^(?:[A-Z]\w*)?(?:Error|Exception)\s{2,}Traceback \(most recent call last\)"),
)

# A line that only warns: its evidence does not count unless the rule says it does.
WARNING = re.compile(r"[Ww]arn|WARN|^\[W |^W\d{4} |\[W\d{4} ")



def cause_of(failure: str, evidence: list[str]) -> str | None:
    """The cause within `failure` that its evidence shows (the last line that shows one), as
    the classifier would have read those lines; None: the class's own advice."""
    for line in reversed(evidence):
        stripped = line.strip()
        for rule in RULES:
            if rule.pattern.search(stripped):
                if rule.failure == failure and rule.cause is not None:
                    return rule.cause
                break
    return None
