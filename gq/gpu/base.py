"""The one interface every card backend implements, and the backend for a host without cards."""

from __future__ import annotations

from abc import ABC, abstractmethod

from gq.gpu.checkpoint import Checkpointer, Unsupported
from gq.model import Gpu


class CardBackend(ABC):
    """Reads the schedulable cards of this host.

    read() lists every card gq may place work on, with its current measurements. The identity
    fields (index, uuid, name, memory_total, visible_id) stay the same from one call to the next;
    a measurement that could not be taken is None, never 0, because 0 would read as "idle".
    read() never raises for a single bad card: a broken card is reported with unknown values.
    """

    kind: str = "none"

    @abstractmethod
    def read(self) -> list[Gpu]: ...

    def job_env(self) -> dict[str, str]:
        """Extra environment a job needs to reach these cards (the simulator's state directory)."""
        return {}

    def checkpointer(self) -> Checkpointer:
        """What freezes processes on these cards (gq/gpu/checkpoint.py)."""
        return Unsupported(f"the {self.kind} card backend cannot checkpoint processes")

    def close(self) -> None:
        """Release the driver. Safe to call twice."""

    def __enter__(self) -> CardBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NoCards(CardBackend):
    """A host with no usable GPU: no driver, no library, or no cards."""

    kind = "none"

    def __init__(self, reason: str = "no GPU backend"):
        self.reason = reason  # why there are no cards, for `gq gpus` and the daemon log

    def read(self) -> list[Gpu]:
        return []

    def checkpointer(self) -> Checkpointer:
        return Unsupported(self.reason)
