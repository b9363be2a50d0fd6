"""Advice checked against what the job tried and the host, before it is printed: a GPU OOM
that asked for more than the largest card gets the truth, not a --mem that cannot help."""

from __future__ import annotations

import re

from gq.units import format_size

# torch's "Tried to allocate 90.00 GiB" (also MiB, GiB, KiB), as its OOM message words it.
_TRIED = re.compile(r"Tried to allocate (\d+(?:\.\d+)?) ?([KMGT]i?B)", re.I)
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def tried_bytes(lines: list[str]) -> int | None:
    """The largest allocation the evidence says the job tried, in bytes; None if none says."""
    sizes = [int(float(m[1]) * _UNITS[m[2][0].lower()])
             for line in lines for m in _TRIED.finditer(line)]
    return max(sizes, default=None)


def needs_larger_card(tried: int | None, largest_card: int | None) -> str | None:
    """The truth for a job whose one allocation is more than the largest card; else None."""
    if tried is None or largest_card is None or tried <= largest_card:
        return None
    return (f"it tried to allocate {format_size(tried)} at once, more than the largest card "
            f"here ({format_size(largest_card)}): no --mem or --retry-oom can make that fit; "
            "it needs a larger card, model sharding (FSDP, DeepSpeed ZeRO, tensor "
            "parallelism) or smaller batches, or a peer with larger cards (--host).")


def mem_hint(known: int, tried: int | None, largest_card: int | None) -> int | None:
    """A --mem worth suggesting: 1.5 times what it held, at least what it held plus what it
    tried, at most a card (when the card is known); None when nothing is known."""
    if not known and tried is None:
        return None
    hint = max(int(known * 1.5), known + (tried or 0))
    return hint if largest_card is None else min(hint, largest_card)
