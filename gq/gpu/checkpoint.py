"""Checkpointing a CUDA process's GPU state into host memory and back: the one interface that
the driver binding (gq/gpu/cuda_checkpoint.py) and the simulated cards (gq/gpu/sim_checkpoint.py)
implement, so that the daemon and its freeze helper are the same code for both.

Both follow the driver's state machine (CUDA driver API, "CUDA Checkpointing", driver 570+):

    running --lock--> locked --checkpoint--> checkpointed --restore--> locked --unlock--> running

A lock waits for the work the process submitted and blocks its further CUDA calls (with a
timeout, after which the process is left running); a checkpoint copies its device memory into
host memory and releases the card; a restore brings the memory back, onto other cards of the
same model if given pairs of uuids; an unlock lets the process go on. A process the driver
could not checkpoint or restore is left `failed`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from gq.model import Gpu

RUNNING, LOCKED, CHECKPOINTED, FAILED = "running", "locked", "checkpointed", "failed"
STEPS = ("lock", "checkpoint", "restore", "unlock")


class CheckpointError(Exception):
    """A step failed. `step` names it (lock, checkpoint, restore, unlock, state);
    `timed_out`: a lock that gave up, leaving the process running."""

    def __init__(self, step: str, message: str, timed_out: bool = False):
        super().__init__(f"{step}: {message}")
        self.step, self.message, self.timed_out = step, message, timed_out


@dataclass(frozen=True)
class Support:
    """What this host offers: `why` nothing can be frozen here (None: it can, card by card),
    the driver's version, whether a restore may move a process to another card of the same
    model, and per card index why a process on it cannot be frozen (None: it can)."""

    driver: str | None = None  # "570.124.06", or "simulated"; None: unknown
    why: str | None = None
    remap: bool = False
    cards: dict[int, str | None] = field(default_factory=dict)

    def card_problem(self, index: int) -> str | None:
        """Why a process on card `index` cannot be frozen; None: it can."""
        if self.why:
            return self.why
        return self.cards.get(index, f"GPU {index} was not probed")

    def json(self) -> dict:
        return {"driver": self.driver, "why": self.why, "remap": self.remap}


class Checkpointer(ABC):
    """Checkpoints processes by pid. Each step raises CheckpointError when it fails; each is
    refused by the driver in a state it does not start from, so a caller that does not know
    where a process is (a helper killed halfway) asks state() first."""

    kind: str = "none"

    @abstractmethod
    def support(self, cards: list[Gpu]) -> Support: ...

    @abstractmethod
    def state(self, pid: int) -> str:
        """RUNNING, LOCKED, CHECKPOINTED or FAILED."""

    @abstractmethod
    def lock(self, pid: int, timeout: float) -> None: ...

    @abstractmethod
    def checkpoint(self, pid: int) -> None: ...

    @abstractmethod
    def restore(self, pid: int, remap: dict[str, str]) -> None:
        """`remap`: old card uuid -> new card uuid, for every card of the process, or {} to
        restore it where it was."""

    @abstractmethod
    def unlock(self, pid: int) -> None: ...

    def free_memory(self, uuid: str) -> int | None:
        """Bytes free on a card now, read afresh just before a restore; None: not known (the
        restore is tried, with the card's memory reserved in gq's own accounting)."""
        return None

    def host_memory_free(self) -> int | None:
        """Host memory available for new frozen state, bytes; None: unknown."""
        try:
            import psutil

            return int(psutil.virtual_memory().available)
        except (ImportError, OSError):
            return None

    def spec(self) -> dict:
        """How a freeze helper (another process) opens the same checkpointer: open_checkpointer."""
        return {"kind": self.kind}

    def close(self) -> None:
        """Release the driver. Safe to call twice."""


class Unsupported(Checkpointer):
    """No way to checkpoint on this host; `why` says which is missing."""

    kind = "none"

    def __init__(self, why: str):
        self.why = why

    def support(self, cards: list[Gpu]) -> Support:
        return Support(why=self.why)

    def state(self, pid: int) -> str:
        raise CheckpointError("state", self.why)

    def lock(self, pid: int, timeout: float) -> None:
        raise CheckpointError("lock", self.why)

    def checkpoint(self, pid: int) -> None:
        raise CheckpointError("checkpoint", self.why)

    def restore(self, pid: int, remap: dict[str, str]) -> None:
        raise CheckpointError("restore", self.why)

    def unlock(self, pid: int) -> None:
        raise CheckpointError("unlock", self.why)

    def spec(self) -> dict:
        return {"kind": self.kind, "why": self.why}


def open_checkpointer(spec: dict) -> Checkpointer:
    """The checkpointer a spec (Checkpointer.spec) names, in this process."""
    kind = spec.get("kind")
    if kind == "sim":
        from gq.gpu.sim_checkpoint import SimCheckpointer

        return SimCheckpointer(spec["dir"])
    if kind == "cuda":
        from gq.gpu.cuda_checkpoint import CudaCheckpointer

        return CudaCheckpointer()
    return Unsupported(spec.get("why") or "no GPU backend")
