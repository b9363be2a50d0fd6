"""The checks a lab's pools and reservations must pass against the cards they name: one set of
checks for `gq config check`, the daemon (at start, and for each `gq reserve`) and `gq sim
--config`, so that the three accept and refuse the same lab.

Each check raises ValueError with what is wrong, without the prefix naming where it was written
(a file's setting, a command's option): the caller adds that.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gq.config.governance import PoolsConfig


def card_list(indices: Iterable[int]) -> str:
    """0,1,2,3 -> '0-3'; 0,2,3 -> '0,2,3' (how an admin reads a host's cards)."""
    ids = sorted(indices)
    if not ids:
        return "none"
    if ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return f"{ids[0]}-{ids[-1]}"
    return ",".join(map(str, ids))


def check_pool_cards(pools: PoolsConfig, present: Iterable[int], host: str = "this host"
                     ) -> None:
    """Every card a pool names exists on the host (a missing one would be dropped silently,
    and the pool would be smaller than its file says)."""
    have = frozenset(present)
    for pool in pools.pools.values():
        missing = sorted(pool.cards - have)
        if missing:
            plural = "s" * (len(missing) != 1)
            raise ValueError(f"[pools.{pool.name}] cards: card{plural} "
                             f"{','.join(map(str, missing))} not on {host} (its cards: "
                             f"{card_list(have)})")


@dataclass(frozen=True)
class Held:
    """A reservation already made, as far as another may clash with it."""

    id: int
    cards: frozenset[int]
    start: float
    end: float
    host: str = ""  # "": every host (a replay's reservation without host =)

    def clashes(self, cards: Iterable[int], start: float, end: float, host: str = "") -> bool:
        return (start < self.end and end > self.start and bool(self.cards & set(cards))
                and (not self.host or not host or self.host == host))


def check_reservation(cards: Iterable[int], start: float, end: float, present: Iterable[int],
                      others: Iterable[Held], host: str = "", where: str = "this host") -> None:
    """The cards exist on the host and no other reservation holds one of them at that time."""
    have = frozenset(present)
    for i in sorted(set(cards)):
        if i not in have:
            raise ValueError(f"card {i} does not exist on {where} (cards: {card_list(have)})")
    for other in others:
        if other.clashes(cards, start, end, host):
            both = sorted(other.cards & set(cards))
            raise ValueError(f"card {','.join(map(str, both))} is in reservation {other.id} at "
                             "that time (a card is kept for one holder at a time)")


def check_account(name: str, accounts: Iterable[str]) -> None:
    if name not in set(accounts):
        raise ValueError(f"{name}: no such account in [accounts] of config.toml")
