"""Admin reservations: `gq reserve` (admins), `gq reserve ls`, `gq reserve rm`, and the windows
they become for the scheduling pass (gq/policy/windows.py)."""

from __future__ import annotations

import grp
import logging
import pwd
import time
from typing import TYPE_CHECKING, Any

from gq.daemon.admins import group_members, require_admin
from gq.daemon.submission import Caller
from gq.config.lab_rules import Held, check_account, check_reservation
from gq.policy.windows import Window
from gq.protocol import BadInput
from gq.units import format_duration, iso

if TYPE_CHECKING:
    from gq.daemon.context import Context

log = logging.getLogger("gq.daemon")

HOLDER_KINDS = ("user", "group", "account")
MEMBERS_TTL = 30.0  # seconds a group's members are trusted: `usermod -aG` counts this soon
_members: dict[str, tuple[float, frozenset[str]]] = {}


def holders(daemon: Context, kind: str, name: str) -> frozenset[str]:
    """The users whose jobs may use a reservation held by this user, group or account."""
    if kind == "user":
        return frozenset({name})
    if kind == "account":  # one that is no longer configured has no members
        return frozenset(u for u, a in daemon.config.accounts.members.items() if a == name)
    now = time.monotonic()
    cached = _members.get(name)
    if cached is None or now - cached[0] > MEMBERS_TTL:
        cached = _members[name] = (now, group_members(name))
    return cached[1]


def windows(daemon: Context, now: float) -> tuple[Window, ...]:
    """The reservations not over yet, as the policy takes them."""
    return tuple(
        Window(r["id"], frozenset(r["cards"]), r["start"], r["end"],
               holders(daemon, r["holder_kind"], r["holder"]),
               holder=f"{r['holder_kind']} {r['holder']}")
        for r in daemon.store.reservations.ending_after(now))


def reservation_json(row: dict[str, Any], now: float) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "gpu_ids": row["cards"],
            "start": iso(row["start"]), "end": iso(row["end"]),
            "duration": row["end"] - row["start"],
            "holder": {"kind": row["holder_kind"], "name": row["holder"]},
            "state": ("removed" if row.get("removed_at") is not None
                      else "active" if row["start"] <= now < row["end"]
                      else "ended" if row["end"] <= now else "future"),
            "created_by": row["created_by"], "created_at": iso(row["created_at"]),
            "removed_by": row.get("removed_by"), "removed_at": iso(row.get("removed_at"))}


def _number(args: dict, key: str, flag: str) -> float:
    value = args.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{flag}: expected a number of seconds")
    return float(value)


def _holder(daemon: Context, args: dict) -> tuple[str, str]:
    """The one user, group or account the cards are kept for; it must exist, or the cards
    would be held for nobody for the whole window."""
    given = [(k, args[k]) for k in HOLDER_KINDS if args.get(k)]
    if len(given) > 1:
        raise BadInput(f"{' and '.join('--' + k for k, _ in given)}: a reservation has one "
                       "holder; give only one of them")
    if not given:
        raise BadInput("give the reservation's holder: one of --user, --group or --account")
    kind, name = given[0]
    if not isinstance(name, str) or any(c.isspace() for c in name):
        raise BadInput(f"--{kind} {name!r}: expected a name")
    try:
        if kind == "user":
            pwd.getpwnam(name)
        elif kind == "group":
            grp.getgrnam(name)
        else:
            check_account(name, daemon.config.accounts.members.values())
    except KeyError:
        raise BadInput(f"--{kind} {name}: no such {kind} on this host") from None
    except ValueError as e:
        raise BadInput(f"--account {e}") from None
    return kind, name


def pick_cards(daemon: Context, count: int | None, ids: list[int] | None, pool: str | None,
               start: float, end: float) -> list[int]:
    """The cards to reserve: those named, or `count` cards of the pool (default: any card)
    that no other reservation holds over [start, end), lowest index first."""
    present = sorted(g.index for g in daemon.cards)
    held = [Held(r["id"], frozenset(r["cards"]), r["start"], r["end"])
            for r in daemon.store.reservations.ending_after(start)]
    taken = {c for h in held if h.clashes(h.cards, start, end) for c in h.cards}
    if ids is not None:
        try:
            check_reservation(ids, start, end, present, held)
        except ValueError as e:
            raise BadInput(f"--ids: {e}") from None
        if count is not None and count != len(ids):
            raise BadInput(f"--cards {count} and --ids name {len(ids)} cards: give one of them")
        return sorted(ids)
    if pool is not None:
        pools = daemon.config.pools.for_cards(present)
        if pool not in pools.cards:
            raise BadInput(f"--pool {pool}: no such pool (configured: "
                           f"{', '.join(sorted(pools.cards)) or 'none'})")
        present = sorted(pools.cards[pool])
    free = [i for i in present if i not in taken]
    if count is None or count < 1:
        raise BadInput("--cards: how many cards to reserve (1 or more), or --ids to name them")
    if len(free) < count:
        raise BadInput(f"--cards {count}: only {len(free)} card(s) "
                       f"{'of pool ' + pool + ' ' if pool else ''}are not reserved at that time")
    return free[:count]


def op_reserve(daemon: Context, caller: Caller, args: dict) -> dict:
    require_admin(daemon, caller, "reserve cards")
    now = daemon.clock()
    start = _number(args, "start", "--start")
    duration = _number(args, "duration", "--duration")
    if duration <= 0:
        raise BadInput("--duration: must be positive")
    end = start + duration
    if end <= now:
        raise BadInput(f"--start {iso(start)} --duration {format_duration(duration)}: that "
                       "window is already over")
    kind, name = _holder(daemon, args)
    count, ids = args.get("cards"), args.get("ids")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        raise BadInput("--cards: expected a whole number")
    if ids is not None and (not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids) or not ids):
        raise BadInput("--ids: expected card indices, e.g. 0,1")
    label = str(args.get("name") or "")
    if len(label) > 64 or any(ord(c) < 32 for c in label):
        raise BadInput("--name: at most 64 printable characters")
    cards = pick_cards(daemon, count, ids, args.get("pool"), start, end)
    rid = daemon.store.reservations.add(cards, start, end, kind, name, label, caller.user, now)
    log.info("reservation %s made by %s: GPU %s for %s %s, %s to %s%s", rid, caller.user,
             ",".join(map(str, cards)), kind, name, iso(start), iso(end),
             f" ({label})" if label else "")
    daemon.passes.request_pass()
    return reservation_json(daemon.store.reservations.get(rid), now)


def op_reservations(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    now = daemon.clock()
    rows = (daemon.store.reservations.record() if args.get("all")
            else daemon.store.reservations.ending_after(now))
    return [reservation_json(r, now) for r in rows]


def op_unreserve(daemon: Context, caller: Caller, args: dict) -> dict:
    require_admin(daemon, caller, "remove reservations")
    rid = args.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int) or not 0 <= rid < 1 << 63:
        raise BadInput(f"reservation id {rid!r}: expected a number (see gq reserve ls)")
    row = daemon.store.reservations.get(rid)
    if row is not None and row["removed_at"] is not None:
        raise BadInput(f"reservation {rid}: removed already, by {row['removed_by']}")
    if row is None or not daemon.store.reservations.remove(rid, caller.user, daemon.clock()):
        raise BadInput(f"reservation {rid}: no such reservation (see gq reserve ls --all)")
    log.info("reservation %s removed by %s: GPU %s for %s %s, %s to %s", rid, caller.user,
             ",".join(map(str, row["cards"])), row["holder_kind"], row["holder"],
             iso(row["start"]), iso(row["end"]))
    daemon.passes.request_pass()
    return reservation_json(daemon.store.reservations.get(rid), daemon.clock())
