"""Out-of-memory deaths on the GPU: recognise them in a run's stderr, and the memory to retry with."""

from __future__ import annotations

import os
import re

from gq.daemon.userfiles import open_owned

# What CUDA programs print when a card runs out of memory (PyTorch, cuBLAS, cuDNN, the CUDA
# runtime and driver, JAX/XLA, TensorFlow, CuPy). Host memory errors (MemoryError, the kernel's
# OOM killer) are not on the list: more GPU memory would not help them.
_CUDA_OOM = re.compile(
    r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED"
    r"|CUDNN_STATUS_ALLOC_FAILED|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation"
    r"|CUDA error: out of memory|RESOURCE_EXHAUSTED: Out of memory"
    r"|OOM when allocating tensor|cupy\.cuda\.memory\.OutOfMemoryError"
)
TAIL = 64 << 10  # an OOM traceback ends the output; no need to read a long log
GROWTH = 1.5


def cuda_oom_line(text: str) -> str | None:
    """The last line of `text` that says a card ran out of memory, or None."""
    found = None
    for line in text.splitlines():
        if _CUDA_OOM.search(line):
            found = line.strip()
    return found


def run_stderr(path: str | os.PathLike, offset: int | None, owner: int | None = None,
               base: str | os.PathLike | None = None) -> str:
    """The end of what one run wrote to its stderr log (earlier runs appended there too).

    The log is in a directory its user controls: read as gq/daemon/userfiles.py reads such
    files (only the owner's regular file, never through a link, never blocking)."""
    fd = open_owned(path, owner, base)
    if fd is None:
        return ""
    try:
        size = os.fstat(fd).st_size
        start = max(offset or 0, size - TAIL)
        return os.pread(fd, max(size - start, 0), start).decode(errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def grown_mem(mem: int | None, gpus: int, card_totals: list[int]) -> int | None:
    """The memory per GPU to retry with: 1.5 times as much, or whole cards (None) once that
    is as much as the cards that could take the job hold."""
    if mem is None or gpus < 1 or len(card_totals) < gpus:
        return None
    largest = sorted(card_totals, reverse=True)[gpus - 1]
    grown = int(mem * GROWTH)
    return None if grown >= largest else grown
