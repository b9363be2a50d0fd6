"""`gq sim --config FILE`, `gq sim --lab`: the daemon's whole config.toml for a replay.

The file is read by the daemon's own parser (gq/config/settings.py: apply_file), so what the
daemon refuses is refused, and the replay's policy input is assembled from it as the daemon's
(gq/config/scheduling.py): [scheduler], [limits] (with the daemon's default high_share when the
file has none), [pools.NAME], [accounts.NAME], and [preemption] (exempt, grace, max_requeues,
preemptible). What does not apply to a replay ([daemon], [notify], [telemetry], [offenders],
[peers], [access], [backup], [metrics], and a few keys) is named once (Lab.ignored), never
refused.
Admin reservations, which the daemon keeps in its database, are written as [[reservations]],
with times counted from the start of the trace:

    [[reservations]]
    cards = [0, 1]
    host = "host0"      # default: every host
    start = "2h"        # from the start of the trace
    duration = "8h"
    user = "ann"        # or users = ["ann", "bob"], or account = "vision"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gq.config import Config
from gq.config.settings import apply_file
from gq.config.governance import PoolsConfig
from gq.config.lab_rules import Held, check_account, check_pool_cards, check_reservation
from gq.protocol import GqError
from gq.policy.accounts import Accounts
from gq.policy.pools import Pools
from gq.policy.types import Host
from gq.policy.windows import Window
from gq.units import parse_duration

# What a replay has no use for: the daemon's serving, telling, watching and keeping.
NOT_REPLAYED = ("daemon", "notify", "telemetry", "offenders", "peers", "access", "backup",
                "metrics")
NOT_REPLAYED_KEYS = (("scheduler", "learn_mem"), ("preemption", "lock_timeout"),
                     ("preemption", "mode"), ("preemption", "freeze_ram"))
RESERVATION_KEYS = {"cards", "host", "start", "duration", "user", "users", "account", "name"}


@dataclass(frozen=True)
class Lab:
    pools: PoolsConfig = field(default_factory=PoolsConfig)
    accounts: Accounts = field(default_factory=Accounts)
    windows: tuple[Window, ...] = ()
    # The daemon's settings of the file (None: no file, the replay's own defaults), and what
    # of the file a replay does not use, in words ("[daemon], [notify]").
    config: Config | None = None
    ignored: tuple[str, ...] = ()

    def pools_on(self, hosts: tuple[Host, ...]) -> Pools:
        """The pools as the policy takes them (pool cards are the same indices on each host)."""
        return self.pools.for_cards([c.index for c in hosts[0].cards]) if hosts else Pools()


def read_lab(path: str | Path, hosts: tuple[Host, ...]) -> Lab:
    """The rules of a lab file; ValueError naming the file and the setting if it is wrong."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"--config {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"--config {path}: {e}") from None
    try:
        entries = data.pop("reservations", [])
        config = Config(host_cpus=max((h.cpus for h in hosts), default=1), host_ram=None)
        apply_file(config, data)
        pools, accounts = config.pools, config.accounts
        for host in hosts:  # the daemon of each host checks its pools so (gq/config/lab_rules.py)
            check_pool_cards(pools, [c.index for c in host.cards], host.name)
        if not isinstance(entries, list):
            raise ValueError("[[reservations]]: expected tables, each [[reservations]]")
        windows: list[Window] = []
        for n, entry in enumerate(entries, start=1):
            windows.append(_window(n, entry, accounts, hosts, windows))
    except (ValueError, TypeError, AttributeError, GqError) as e:
        raise ValueError(f"--config {path}: {getattr(e, 'message', e)}") from None
    ignored = [f"[{s}]" for s in NOT_REPLAYED if s in data]
    ignored += [f"[{s}] {k}" for s, k in NOT_REPLAYED_KEYS if k in data.get(s, {})]
    return Lab(pools, accounts, tuple(windows), config, tuple(ignored))


def _window(n: int, entry: Any, accounts: Accounts, hosts: tuple[Host, ...],
            before: list[Window]) -> Window:
    """One [[reservations]] table, checked as the daemon checks `gq reserve`."""
    where = f"[[reservations]] {n}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a table")
    unknown = set(entry) - RESERVATION_KEYS
    if unknown:
        raise ValueError(f"unknown setting {', '.join(f'{where} {k}' for k in sorted(unknown))}")
    cards = entry.get("cards")
    if not isinstance(cards, list) or not cards or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cards):
        raise ValueError(f"{where} cards: expected a list of card indices, e.g. [0, 1]")
    host = entry.get("host", "")
    if host and host not in {h.name for h in hosts}:
        raise ValueError(f"{where} host = {host!r}: the cluster's hosts are host0, host1, ...")
    times = {}
    for key in ("start", "duration"):
        if key not in entry:
            raise ValueError(f"{where}: {key} is required, e.g. {key} = \"2h\"")
        try:
            times[key] = parse_duration(str(entry[key]), allow_zero=key == "start")
        except ValueError as e:
            raise ValueError(f"{where} {key} = {e}") from None
    holders = [k for k in ("user", "users", "account") if k in entry]
    if len(holders) != 1:
        raise ValueError(f"{where}: give its holder: one of user, users or account")
    kind = holders[0]
    start, end = times["start"], times["start"] + times["duration"]
    held = [Held(w.id, w.cards, w.start, w.end, w.host) for w in before]
    for h in hosts:
        if not host or h.name == host:
            try:
                check_reservation(cards, start, end, [c.index for c in h.cards], held, h.name,
                                  h.name)
            except ValueError as e:
                raise ValueError(f"{where} cards: {e}") from None
    if kind == "account":
        try:
            check_account(str(entry["account"]), accounts.members.values())
        except ValueError as e:
            raise ValueError(f"{where} account = {e}") from None
    if kind == "user":
        users = frozenset({str(entry["user"])})
    elif kind == "users":
        users = frozenset(str(u) for u in entry["users"])
    else:
        users = frozenset(u for u, a in accounts.members.items() if a == entry["account"])
    holder = f"{'user' if kind != 'account' else 'account'} {entry[kind]}"
    return Window(n, frozenset(cards), start, end, users, host=host, holder=holder)
