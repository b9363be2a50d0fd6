"""Freezing in a replay (`gq sim --preempt-mode freeze|auto`): how much device memory a job
holds, how long its freeze and its thaw take, and the facts the policy decides from.

The model (docs/sim.md#freezing): a freeze copies the job's device memory to host memory and a
thaw copies it back, each at COPY_RATE, plus OVERHEAD for the driver's own work (the lock, the
release and re-creation of the card's contexts). A job's device memory is its --mem, or
WHOLE_CARD_FILL of its card for a job with a whole card (trainers fill what they are given;
traces do not say). Only a one-card job is frozen: a job on several cards is taken to be one
process per card (DDP, NCCL), which the driver cannot freeze, as the daemon's probe says.

COPY_RATE is an assumption until measured: 10 GiB/s is what a pageable copy of a large buffer
reaches over PCIe Gen4 x16 (half its 32 GB/s link, which pinned copies approach), and gq's
freeze is such a copy into the process's own memory. `bench/gpu_check.sh` measures the real
figure on a card (docs/preemption.md#measured), which `--copy-rate` then takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gq.model import Job
from gq.policy.freezing import FreezeRule, JobFacts

GIB = 1 << 30
COPY_RATE = 10 * GIB  # bytes per second, each way (an assumption until measured)
OVERHEAD = 1.0  # seconds per freeze or thaw, besides the copy
WHOLE_CARD_FILL = 0.9


@dataclass(frozen=True)
class FreezeModel:
    """How a replay freezes: `mode` for its preemptible tiers, `freeze_ram` per host (bytes;
    None: no limit), and the time model."""

    mode: str = "freeze"
    freeze_ram: int | None = None
    rate: float = COPY_RATE
    overhead: float = OVERHEAD

    def device_mem(self, job: Job, card_memory: dict[int, int]) -> int:
        if job.mem is not None:
            return job.mem * len(job.gpu_ids)
        return int(sum(card_memory.get(i, 0) for i in job.gpu_ids) * WHOLE_CARD_FILL)

    def seconds(self, size: int) -> float:
        """How long a freeze (or a thaw) of `size` bytes takes."""
        return self.overhead + size / self.rate

    def rule(self, running: list[Job], card_memory: dict[str, dict[int, int]],
             tiers: frozenset[str]) -> FreezeRule:
        """The facts the policy decides from: each running job one process per card."""
        facts = {j.id: JobFacts(len(j.gpu_ids), self.device_mem(j, card_memory[j.host]))
                 for j in running}
        return FreezeRule(modes=dict.fromkeys(tiers, self.mode), freeze_ram=self.freeze_ram,
                          facts=facts, remap=True)
