"""Which cards a job fits on, given what running jobs and outside processes already hold.

Sharing a card (`--mem`) takes more than memory that fits: two jobs that each keep the card's
SMs busy slow each other down (docs/scheduling.md, "Sharing a card"). With `util_max` set
(`[scheduler] share_util_max`), a slice whose SM utilisation is known from history goes on a
card already shared only if the known utilisations of the jobs there, and its own, sum to at
most `util_max`. A job with no history, and a neighbour with none, are placed by memory alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gq.model import Job
from gq.policy.types import Host
from gq.units import format_size

# A running job measured on a card occupies at least what it holds plus this much, for the
# allocator's next step: a job at 9.9G of a 10G --mem is not 0.1G from the next job's memory.
MEASURED_MARGIN = 512 << 20


@dataclass
class CardLoad:
    total: int
    external: int | None
    island: int | None = None
    declared: int = 0  # memory occupied by gq jobs sharing the card (occupancy() each)
    whole_holders: int = 0  # whole-card jobs on it: more than one only in a look ahead
    jobs: set[int] = field(default_factory=set)
    measured: dict[int, int] = field(default_factory=dict)  # job id -> bytes held now
    over: dict[int, tuple[int, int]] = field(default_factory=dict)  # job -> (held, --mem)
    counted: dict[int, int] = field(default_factory=dict)  # job -> what `declared` took
    util: float = 0.0  # learned SM utilisation (%) of the slices on it whose history knows it

    @property
    def exclusive(self) -> bool:
        return self.whole_holders > 0

    @property
    def usable(self) -> bool:
        return self.external is not None

    @property
    def room(self) -> int:
        """What is free on the card, over-budget jobs aside."""
        if self.exclusive or self.external is None:
            return 0
        return self.total - self.external - self.declared

    @property
    def free(self) -> int:
        """What a new slice may use: nothing while a job on the card is over its budget."""
        return 0 if self.over else self.room

    def occupancy(self, job: Job) -> int:
        """What a slice occupies: the larger of its --mem and what it holds plus a margin."""
        held = self.measured.get(job.id)
        return job.mem if held is None else max(job.mem, held + MEASURED_MARGIN)

    def clone(self) -> CardLoad:
        return CardLoad(self.total, self.external, self.island, self.declared,
                        self.whole_holders, set(self.jobs), self.measured, dict(self.over),
                        dict(self.counted), self.util)


class Capacity:
    """The host's free resources, updated as the plan starts jobs."""

    def __init__(self, host: Host, running: list[Job], util: Mapping[int, float] | None = None,
                 util_max: float | None = None):
        """`util`: job id -> its learned SM utilisation alone (%), where history has it;
        `util_max`: the most the slices of a shared card may sum to (None: memory alone)."""
        self.util = util or {}
        self.util_max = util_max
        self.cpus_free = host.cpus
        self.ram_free = host.ram
        self.cards = {
            c.index: CardLoad(c.memory_total, c.external_used, c.island, measured=dict(c.measured))
            for c in host.cards
        }
        for job in running:
            self.take(job, job.gpu_ids)

    def copy(self) -> Capacity:
        other = Capacity.__new__(Capacity)
        other.cpus_free, other.ram_free = self.cpus_free, self.ram_free
        other.util, other.util_max = self.util, self.util_max
        other.cards = {i: c.clone() for i, c in self.cards.items()}
        return other

    def release(self, job: Job, gpu_ids) -> None:
        """Undo take(): the job has ended (in a look into the future)."""
        self.cpus_free += job.cpus
        if self.ram_free is not None and job.ram:
            self.ram_free += job.ram
        for i in gpu_ids:
            load = self.cards.get(i)
            if load is None:
                continue
            load.jobs.discard(job.id)
            if job.mem is None:
                load.whole_holders -= 1
            else:
                load.declared -= load.counted.pop(job.id, job.mem)
                load.over.pop(job.id, None)
                load.util -= self.util.get(job.id, 0.0)

    def take(self, job: Job, gpu_ids) -> None:
        self.cpus_free -= job.cpus
        if self.ram_free is not None and job.ram:
            self.ram_free -= job.ram
        for i in gpu_ids:
            load = self.cards.get(i)
            if load is None:  # the card vanished under a running job
                continue
            load.jobs.add(job.id)
            if job.mem is None:
                load.whole_holders += 1
            else:
                load.counted[job.id] = load.occupancy(job)
                load.declared += load.counted[job.id]
                held = load.measured.get(job.id)
                if held is not None and held > job.mem:
                    load.over[job.id] = (held, job.mem)
                load.util += self.util.get(job.id, 0.0)

    def fit(self, job: Job, allowed: frozenset[int] | None = None, count: int | None = None
            ) -> tuple[tuple[int, ...] | None, str | None]:
        """(the cards the job would get, None), or (None, what is short, in words).
        `allowed`: the cards it may use (its pool, less the cards reserved for others); None:
        any. `count`: how many cards (an elastic job's); None: job.gpus."""
        if job.cpus > self.cpus_free:
            return None, f"CPU cores (it needs {job.cpus}, {max(self.cpus_free, 0)} free)"
        if self.ram_free is not None and job.ram and job.ram > self.ram_free:
            free_gib = max(self.ram_free, 0) / (1 << 30)
            return None, f"host memory ({free_gib:.1f} GiB free)"
        cards = self.find_cards(job, allowed, count)
        if cards is None and self._util_bound(job) is not None:
            busy = self._too_busy(job, allowed, count)
            if busy is not None:
                return None, busy
        if cards is None:
            n = job.gpus if count is None else count
            plural = "s" if n > 1 else ""
            kind = (f"free card{plural}" if job.mem is None
                    else f"card{plural} with enough free memory")
            where = f" in pool {job.pool}" if job.pool else ""
            return None, f"GPUs (it needs {n} {kind}{where}){self.over_budget_note(allowed)}"
        return cards, None

    def over_budget_note(self, allowed: frozenset[int] | None = None) -> str:
        """For a job kept waiting: which cards take no new slices because a job on them holds
        more than its --mem, by how much, and what is free elsewhere."""
        if not any(c.over for c in self.cards.values()):  # the common case, and a quick one
            return ""
        notes = []
        for i, c in sorted(self.cards.items()):
            if allowed is not None and i not in allowed:
                continue
            for job_id, (held, mem) in sorted(c.over.items()):
                notes.append(f"GPU {i} takes no new slices while job {job_id} holds "
                             f"{format_size(held)}, {format_size(held - mem)} over its --mem "
                             f"{format_size(mem)}")
        if not notes:
            return ""
        free = [(c.free, i) for i, c in self.cards.items()
                if c.usable and (allowed is None or i in allowed)]
        most, where = max(free) if free else (0, None)
        tail = (f"; the most free on another card is {format_size(max(most, 0))} on GPU {where}"
                if where is not None else "")
        return "; " + "; ".join(notes) + tail

    def find_cards(self, job: Job, allowed: frozenset[int] | None = None,
                   count: int | None = None) -> tuple[int, ...] | None:
        """The cards that can take the job, or None. Jobs with --mem go where they leave the
        least memory free (best fit), so that whole cards stay free for jobs that need them."""
        n = job.gpus if count is None else count
        if n == 0:
            return ()
        loads = {i: c for i, c in self.cards.items()
                 if (allowed is None or i in allowed) and i not in job.avoid_gpus}
        if job.mem is None:
            fitting = [i for i, c in sorted(loads.items())
                       if c.usable and not c.jobs and c.external == 0]
        else:
            room = self._util_bound(job)
            fitting = sorted([i for i, c in loads.items() if c.free >= job.mem
                              and (room is None or not c.jobs or c.util <= room)],
                             key=lambda i: (self.cards[i].free, i))
        if len(fitting) < n:
            return None
        return tuple(sorted(self._linked_first(fitting, n)))

    def _util_bound(self, job: Job) -> float | None:
        """The most the slices already on a shared card may use for this job to join them
        (share_util_max less its own); None when the rule does not apply to it."""
        if self.util_max is None or job.mem is None:
            return None
        own = self.util.get(job.id)
        return None if own is None else self.util_max - own

    def _too_busy(self, job: Job, allowed: frozenset[int] | None, count: int | None
                  ) -> str | None:
        """When memory alone would place the job but the utilisation rule does not: why, with
        the numbers."""
        bound, self.util_max = self.util_max, None
        try:
            by_memory = self.find_cards(job, allowed, count)
        finally:
            self.util_max = bound
        if by_memory is None:
            return None
        busiest = max(by_memory, key=lambda i: self.cards[i].util)
        own = self.util[job.id]
        return (f"a card whose jobs' SM utilisation leaves room for its {own:.0f}%: card "
                f"{busiest} has the memory, but jobs {_ids(self.cards[busiest].jobs)} there use "
                f"{self.cards[busiest].util:.0f}% ([scheduler] share_util_max = "
                f"{bound:g}; learned from past runs of the same commands)")

    def _linked_first(self, fitting: list[int], n: int) -> list[int]:
        """n of the fitting cards (in order of preference), all in one island if any island
        has enough of them: the smallest such island, so that big ones stay whole."""
        if n == 1:
            return fitting[:1]
        islands: dict[int, list[int]] = {}
        for i in fitting:
            island = self.cards[i].island
            if island is not None:
                islands.setdefault(island, []).append(i)
        enough = [cards for cards in islands.values() if len(cards) >= n]
        if not enough:
            return fitting[:n]
        return min(enough, key=lambda cards: (len(cards), cards[0]))[:n]


def _ids(ids: set[int]) -> str:
    return ",".join(str(i) for i in sorted(ids))
