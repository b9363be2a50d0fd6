"""[pools.NAME] and [accounts.NAME] of config.toml: named sets of cards, and teams with their
fair share and limits (docs/governance.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gq.policy.accounts import AccountLimits, Accounts
from gq.policy.pools import Pools
from gq.units import parse_duration

POOL_KEYS = {"cards", "max_time", "default", "interactive", "past_limit"}
ACCOUNT_KEYS = {"users", "share", "max_running_gpus", "max_share"}
PAST_LIMIT = ("stop", "requeue")
IMPLICIT_DEFAULT = "default"  # the cards in no pool, when no pool says default = true


@dataclass(frozen=True)
class Pool:
    name: str
    cards: frozenset[int]
    max_time: float | None = None  # longer --time is refused; without --time, the limit
    default: bool = False  # jobs without --pool go here
    interactive: bool = False  # --interactive jobs go here unless they name a pool
    # What happens to an interactive job at its time limit: stopped (timeout), or requeued as
    # batch work in the default pool (it gets its checkpoint signal and grace first).
    past_limit: str = "stop"


@dataclass(frozen=True)
class PoolsConfig:
    pools: dict[str, Pool] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool(self.pools)

    def default_name(self) -> str | None:
        if not self.pools:
            return None
        marked = [p.name for p in self.pools.values() if p.default]
        return marked[0] if marked else IMPLICIT_DEFAULT

    def interactive_name(self) -> str | None:
        marked = [p.name for p in self.pools.values() if p.interactive]
        return marked[0] if marked else None

    def get(self, name: str | None) -> Pool | None:
        return self.pools.get(name or "") if name else self.pools.get(self.default_name() or "")

    def for_cards(self, indices: list[int]) -> Pools:
        """The policy's view on a host with these cards: the implicit default pool, if used,
        is every card in no pool."""
        if not self.pools:
            return Pools()
        present = set(indices)
        cards = {name: frozenset(p.cards & present) for name, p in self.pools.items()}
        default = self.default_name()
        if default not in cards:
            cards[default] = frozenset(present - set().union(*cards.values()))
        interactive = frozenset(p.name for p in self.pools.values() if p.interactive)
        return Pools(cards, default, interactive)


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where} = {value!r}: expected true or false")
    return value


def _whole(where: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where} = {value!r}: expected a whole number, {minimum} or more")
    return value


def _name(where: str, name: str) -> str:
    if not name or any(c.isspace() or c in ",/:" for c in name):
        raise ValueError(f"{where}: {name!r} is not a usable name (no spaces, commas, '/' or ':')")
    return name


def _named_tables(section: str, table: Any, keys: set[str], example: str):
    """(name, where, entry) of each [section.NAME] table, its name and keys checked."""
    if not isinstance(table, dict):
        raise ValueError(f"[{section}]: expected tables, e.g. [{section}.{example}]")
    for name, entry in table.items():
        where = f"[{section}.{name}]"
        _name(where, name)
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a table, e.g. [{section}.{example}]")
        unknown = set(entry) - keys
        if unknown:
            raise ValueError(f"unknown setting {', '.join(f'{where} {k}' for k in sorted(unknown))}")
        yield name, where, entry


def parse_pools(table: Any) -> PoolsConfig:
    pools = {}
    for name, where, entry in _named_tables("pools", table, POOL_KEYS,
                                            "interactive] cards = [0"):
        cards = entry.get("cards")
        if not isinstance(cards, list) or not cards:
            raise ValueError(f"{where} cards: expected a list of card indices, e.g. [0, 1]")
        indices = frozenset(_whole(f"{where} cards", c, 0) for c in cards)
        max_time = None
        if "max_time" in entry:
            try:
                max_time = parse_duration(str(entry["max_time"]))
            except ValueError as e:
                raise ValueError(f"{where} max_time = {e}") from None
        past = entry.get("past_limit", "stop")
        if past not in PAST_LIMIT:
            raise ValueError(f"{where} past_limit = {past!r}: expected \"stop\" or \"requeue\"")
        pools[name] = Pool(name, indices, max_time, _bool(f"{where} default",
                                                          entry.get("default", False)),
                           _bool(f"{where} interactive", entry.get("interactive", False)), past)
    for flag in ("default", "interactive"):
        marked = [p.name for p in pools.values() if getattr(p, flag)]
        if len(marked) > 1:
            raise ValueError(f"[pools] {flag} = true in {' and '.join(marked)}: at most one "
                             "pool may say so")
    return PoolsConfig(pools)


def parse_accounts(table: Any) -> Accounts:
    members, shares, limits = {}, {}, {}
    for name, where, entry in _named_tables("accounts", table, ACCOUNT_KEYS,
                                            'vision] users = ["ann"'):
        users = entry.get("users")
        if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users):
            raise ValueError(f"{where} users: expected a list of user names")
        for user in users:
            if user in members:
                raise ValueError(f"{where} users: {user} is in account {members[user]} already; "
                                 "a user belongs to one account")
            members[user] = name
        if "share" in entry:
            share = entry["share"]
            if isinstance(share, bool) or not isinstance(share, (int, float)) or share <= 0:
                raise ValueError(f"{where} share = {share!r}: expected a positive number")
            shares[name] = float(share)
        lim = AccountLimits(
            max_running_gpus=(_whole(f"{where} max_running_gpus", entry["max_running_gpus"], 0)
                              if "max_running_gpus" in entry else None),
            max_share=_fraction(f"{where} max_share", entry["max_share"])
            if "max_share" in entry else None)
        if lim != AccountLimits():
            limits[name] = lim
    return Accounts(members, shares, limits)


def _fraction(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"{where} = {value!r}: expected a part of the cards, more than 0 and at "
                         "most 1 (0.5 is half)")
    return float(value)
