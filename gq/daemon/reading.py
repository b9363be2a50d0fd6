"""The last reading of the cards, with whose memory is whose: written by the daemon at each
reading (Daemon.read_cards), read by its services."""

from __future__ import annotations

from dataclasses import dataclass, field

from gq.daemon.attribution import Owner
from gq.model import Gpu


@dataclass
class Reading:
    cards: list[Gpu] = field(default_factory=list)
    owners: dict[int, Owner] = field(default_factory=dict)  # pid -> who holds each process
    # Card -> memory held by processes outside gq (None: not known).
    external: dict[int, int | None] = field(default_factory=dict)
    job_memory: dict[int, dict[int, int]] = field(default_factory=dict)  # card -> job -> bytes
