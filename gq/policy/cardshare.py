"""A job's share of a card, in card equivalents: the one function every count of cards uses.

A job that takes a card whole holds one card; a slice (`--mem`) holds its part of the card's
memory, at most one; a card whose size is unknown counts whole. Fair share, the results of a
replay, `gq stats`, preemption's cost of a victim, Tiresias' attained service and the
utilisation rule of shared cards all count through here, so that they agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gq.model import Job


def card_share(mem: int | None, memory_total: int | None) -> float:
    """What a job asking `mem` per card (None: the whole card) holds of one card."""
    if mem is None or not memory_total:
        return 1.0
    return min(1.0, mem / memory_total)


def cards_held(job: Job, totals: Mapping[int, int], gpu_ids: Iterable[int] | None = None
               ) -> float:
    """The card equivalents the job holds on `gpu_ids` (default: its own cards); `totals`:
    each card's memory by index."""
    ids = job.gpu_ids if gpu_ids is None else gpu_ids
    return sum(card_share(job.mem, totals.get(i)) for i in ids)


def cards_asked(job: Job, memory_total: int | None) -> float:
    """The card equivalents a waiting job asks for, on cards of `memory_total` bytes."""
    return job.gpus * card_share(job.mem, memory_total)
