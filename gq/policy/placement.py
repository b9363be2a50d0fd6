"""Which cards a job fits on, given what running jobs and outside processes already hold."""

from __future__ import annotations

from dataclasses import dataclass, field

from gq.model import Job
from gq.policy.types import Host


@dataclass
class CardLoad:
    total: int
    external: int | None
    island: int | None = None
    declared: int = 0  # memory declared by gq jobs sharing the card
    whole_holders: int = 0  # whole-card jobs on it: more than one only in a look ahead
    jobs: set[int] = field(default_factory=set)

    @property
    def exclusive(self) -> bool:
        return self.whole_holders > 0

    @property
    def usable(self) -> bool:
        return self.external is not None

    @property
    def free(self) -> int:
        if self.exclusive or self.external is None:
            return 0
        return self.total - self.external - self.declared


class Capacity:
    """The host's free resources, updated as the plan starts jobs."""

    def __init__(self, host: Host, running: list[Job]):
        self.cpus_free = host.cpus
        self.ram_free = host.ram
        self.cards = {
            c.index: CardLoad(c.memory_total, c.external_used, c.island) for c in host.cards
        }
        for job in running:
            self.take(job, job.gpu_ids)

    def copy(self) -> Capacity:
        other = Capacity.__new__(Capacity)
        other.cpus_free, other.ram_free = self.cpus_free, self.ram_free
        other.cards = {
            i: CardLoad(c.total, c.external, c.island, c.declared, c.whole_holders, set(c.jobs))
            for i, c in self.cards.items()
        }
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
                load.declared -= job.mem

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
                load.declared += job.mem

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
        if cards is None:
            n = job.gpus if count is None else count
            plural = "s" if n > 1 else ""
            kind = (f"free card{plural}" if job.mem is None
                    else f"card{plural} with enough free memory")
            where = f" in pool {job.pool}" if job.pool else ""
            return None, f"GPUs (it needs {n} {kind}{where})"
        return cards, None

    def find_cards(self, job: Job, allowed: frozenset[int] | None = None,
                   count: int | None = None) -> tuple[int, ...] | None:
        """The cards that can take the job, or None. Jobs with --mem go where they leave the
        least memory free (best fit), so that whole cards stay free for jobs that need them."""
        n = job.gpus if count is None else count
        if n == 0:
            return ()
        loads = self.cards if allowed is None else {
            i: c for i, c in self.cards.items() if i in allowed}
        if job.mem is None:
            fitting = [i for i, c in sorted(loads.items())
                       if c.usable and not c.jobs and c.external == 0]
        else:
            fitting = sorted([i for i, c in loads.items() if c.free >= job.mem],
                             key=lambda i: (self.cards[i].free, i))
        if len(fitting) < n:
            return None
        return tuple(sorted(self._linked_first(fitting, n)))

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
