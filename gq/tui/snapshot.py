"""TopSnapshot: one frozen picture of every host that `gq top` draws, built from protocol replies.

Pure: no socket, no clock. The poller fetches the replies and stamps the time; the widgets only
read these dataclasses. A host keeps its last good data when a fetch fails, with the error beside
it, so that a daemon going away dims the screen instead of emptying it. What a user gave (names,
reasons, evidence quoting commands) is kept with its control characters escaped (gq/escapes.py):
the widgets draw it as Text, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from gq.escapes import escape_controls
from gq.states import ACTIVE, FROZEN, ORDER, RUNNING, WAITING

STATE_ORDER = {state: n for n, state in enumerate(ORDER) if state in ACTIVE}  # ended ones last
TIER_ORDER = {"high": 0, "normal": 1, "low": 2}


def epoch(when: str | float | None) -> float | None:
    """A time as a reply gives it: ISO-8601, or epoch seconds (the `top` operation's)."""
    return _parse_iso(when) if isinstance(when, str) else when


@lru_cache(maxsize=65536)  # the same times come back every second: parse each once
def _parse_iso(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Slice:
    """A job's share of one card: what the scheduler reserved, and what its processes hold."""

    job_id: int
    user: str
    name: str
    reserved: int  # bytes: its --mem, or the whole card
    used: int | None  # bytes its processes hold now; None: not measured
    whole_card: bool
    state: str
    label: str = ""  # "12_3" for an array's element; else its id

    @property
    def title(self) -> str:
        return self.label or str(self.job_id)

    @property
    def beyond(self) -> int:
        """Bytes its processes hold beyond its reservation (a --mem job over its budget)."""
        return 0 if self.used is None or self.whole_card else max(0, self.used - self.reserved)

    @property
    def size(self) -> int:
        """What it takes of the card: its reservation, or what it holds when that is more."""
        return self.reserved + self.beyond


@dataclass(frozen=True)
class CardView:
    index: int
    name: str
    memory_total: int
    memory_used: int | None  # None: unknown (never 0)
    utilization: float | None  # percent; None: unknown
    slices: tuple[Slice, ...]
    outside: int | None  # bytes held by processes outside gq; None: unknown
    simulated: bool = False
    history: tuple[float | None, ...] = ()  # utilisation samples, oldest first

    @property
    def reserved(self) -> int:
        return sum(s.reserved for s in self.slices)

    @property
    def free(self) -> int:
        """What no job reserves or holds beyond its reservation and nothing outside gq holds
        (unknown outside counts as 0)."""
        return max(0, self.memory_total - sum(s.size for s in self.slices) - (self.outside or 0))

    @property
    def over_budget(self) -> tuple[Slice, ...]:
        """The slices whose jobs hold more than they reserved: the card takes no new ones."""
        return tuple(s for s in self.slices if s.beyond > 0)


@dataclass(frozen=True)
class JobRow:
    host: str
    id: int
    name: str
    user: str
    state: str
    tier: str
    gpus: int
    mem: int | None  # per card; None: whole cards
    cpus: int
    gpu_ids: tuple[int, ...]
    reason: str | None
    submitted_at: float | None
    started_at: float | None
    expected_start: float | None = None
    array: str | None = None  # "12_3" for element 3 of array 12
    # What the expected start rests on ("when job 12 ends, like your last 2 runs of
    # train.py"), or "unknown: ..." when it rests on nothing known.
    start_basis: str | None = None
    host_mem: int | None = None  # a frozen job's GPU state in host memory, bytes
    frozen_at: float | None = None

    @property
    def key(self) -> tuple[str, int]:
        """Identity across refreshes (and, with peers, across hosts)."""
        return (self.host, self.id)

    @property
    def label(self) -> str:
        return self.array or str(self.id)

    def since(self) -> float | None:
        """When its current wait, run or freeze began."""
        if self.state in FROZEN:
            return self.frozen_at
        return self.started_at if self.state in RUNNING else self.submitted_at


@dataclass(frozen=True)
class OffenceRow:
    kind: str
    job_id: int | None
    user: str | None
    pid: int | None
    gpus: tuple[int, ...]
    since: float | None
    evidence: str
    suggestion: str
    action: str
    action_due_at: float | None = None


@dataclass(frozen=True)
class HostSnapshot:
    name: str
    fetched_at: float | None  # when its data was last read; None: never
    error: str | None = None  # why the last read failed; None: it succeeded
    user: str | None = None  # who `gq top` runs as, as this host's daemon sees them
    simulated: bool = False
    cards: tuple[CardView, ...] = ()
    jobs: tuple[JobRow, ...] = ()
    offences: tuple[OffenceRow, ...] = ()

    def failed(self, error: str) -> HostSnapshot:
        """This host as last seen, with the error of the read that just failed."""
        return replace(self, error=error)


@dataclass(frozen=True)
class TopSnapshot:
    hosts: tuple[HostSnapshot, ...]
    taken_at: float
    jobs: tuple[JobRow, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(j for h in self.hosts for j in h.jobs))

    def host(self, name: str) -> HostSnapshot | None:
        return next((h for h in self.hosts if h.name == name), None)


# ---- from protocol replies --------------------------------------------------------------


def _shown(text: Any) -> Any:
    """A user's text as the widgets may draw it (None stays None)."""
    return escape_controls(text) if isinstance(text, str) else text


def job_row(host: str, j: dict[str, Any]) -> JobRow:
    array = j.get("array")
    return JobRow(
        host=host, id=j["id"], name=_shown(j.get("name") or ""), user=_shown(j["user"]),
        state=j["state"], tier=j["priority"], gpus=j["gpus"], mem=j.get("mem"),
        cpus=j.get("cpus") or 0, gpu_ids=tuple(j.get("gpu_ids") or ()),
        reason=_shown(j.get("reason")),
        submitted_at=epoch(j.get("submitted_at")), started_at=epoch(j.get("started_at")),
        expected_start=epoch(j.get("expected_start")),
        array=f"{array['id']}_{array['index']}" if array else None,
        start_basis=_shown(j.get("expected_start_basis")),
        host_mem=j.get("host_mem") if j["state"] in FROZEN else None,
        frozen_at=epoch(j.get("frozen_at")),
    )


def card_view(c: dict[str, Any], history: tuple[float | None, ...] = (),
              labels: dict[int, str] | None = None) -> CardView:
    labels = labels or {}
    slices = tuple(
        Slice(job_id=j["id"], user=_shown(j["user"]), name=_shown(j.get("name") or ""),
              reserved=j["mem"],
              used=j.get("used"), whole_card=j.get("whole_card", False),
              state=j.get("state", "running"), label=labels.get(j["id"], ""))
        for j in c.get("jobs", ())
    )
    return CardView(
        index=c["index"], name=_shown(c["name"]), memory_total=c["memory_total"],
        memory_used=c.get("memory_used"), utilization=c.get("utilization"), slices=slices,
        outside=c.get("external_used"), simulated=bool(c.get("simulated")), history=history,
    )


def offence_row(o: dict[str, Any]) -> OffenceRow:
    return OffenceRow(
        kind=o["kind"], job_id=o.get("job_id"), user=_shown(o.get("user")), pid=o.get("pid"),
        gpus=tuple(o.get("gpus") or ()), since=epoch(o.get("since")),
        evidence=_shown(o.get("evidence") or ""), suggestion=_shown(o.get("suggestion") or ""),
        action=o.get("action") or "report", action_due_at=epoch(o.get("action_due_at")),
    )


def utilisation_history(points: list[dict[str, Any]]) -> dict[int, tuple[float | None, ...]]:
    """Sample points of the `samples` operation -> each card's utilisation, oldest first."""
    by_card: dict[int, list[float | None]] = {}
    for p in points:
        by_card.setdefault(p["gpu"], []).append(p.get("utilization"))
    return {card: tuple(values) for card, values in by_card.items()}


def host_snapshot(name: str, fetched_at: float, *, ping: dict[str, Any],
                  jobs: list[dict[str, Any]], gpus: list[dict[str, Any]],
                  offenders: list[dict[str, Any]],
                  samples: dict[str, Any] | None = None,
                  rows: tuple[JobRow, ...] | None = None) -> HostSnapshot:
    """One host from the replies of ping, list, gpus, offenders and samples (or, `rows`, its
    jobs made already: the `top` operation's, kept from one answer to the next)."""
    history = utilisation_history(samples["points"]) if samples else {}
    if rows is None:
        rows = tuple(job_row(name, j) for j in jobs)
    labels = {j.id: j.array for j in rows if j.array}
    cards = tuple(card_view(c, history.get(c["index"], ()), labels) for c in gpus)
    return HostSnapshot(
        name=name, fetched_at=fetched_at, user=ping.get("user"),
        simulated=ping.get("backend") == "sim" or any(c.simulated for c in cards),
        cards=cards,
        jobs=rows,
        offences=tuple(offence_row(o) for o in offenders),
    )
