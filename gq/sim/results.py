"""What a replay returns: each job's times, and the whole run's figures; and how it preempts."""

from __future__ import annotations

from dataclasses import dataclass, field

from gq.config.settings import PreemptionConfig
from gq.model import Tier
from gq.policy import Host
from gq.sim.freeze_model import FreezeModel


@dataclass(frozen=True)
class Preemption:
    """How a replay preempts, as the daemon's [preemption] defaults do: `low` jobs, each
    exempt for the first `exempt` seconds of every run, stopped `grace` seconds after their
    checkpoint signal. A job saves its work on the signal (gq's contract, docs/preemption.md)
    and resumes where it was; the grace is spent saving, not progressing."""

    exempt: float = PreemptionConfig.exempt
    grace: float = PreemptionConfig.grace
    tiers: frozenset[str] = PreemptionConfig.preemptible  # [preemption] preemptible
    # Preemptions of one job before it is held instead of requeued (gq/policy/preemption.py)
    max_requeues: int = PreemptionConfig.max_requeues
    # Freezing instead of the signal (gq/sim/freeze_model.py); None: the signal path only.
    freeze: FreezeModel | None = None


@dataclass(frozen=True)
class JobResult:
    """One replayed job: when it was submitted, started and ended (simulated seconds)."""

    job_id: str
    user: str
    tier: Tier
    gpus: int
    weight: float  # cards it held: gpus for whole cards, the share of each card for slices
    submit: float
    start: float
    end: float
    host: str
    timed_out: bool = False
    # Preemption: times the job was stopped and requeued; seconds it held its cards over all
    # its runs (None: end - start, a single run). `start` is its first start.
    preemptions: int = 0
    held: float | None = None
    gpu_ids: tuple[int, ...] = ()  # the cards of its last run

    @property
    def held_seconds(self) -> float:
        return self.end - self.start if self.held is None else self.held

    @property
    def wait(self) -> float:
        return self.start - self.submit

    @property
    def jct(self) -> float:
        return self.end - self.submit


@dataclass
class ReplayResult:
    policy: str
    hosts: tuple[Host, ...]
    jobs: list[JobResult]
    dropped: dict[str, int] = field(default_factory=dict)  # why -> how many
    dropped_jobs: list[tuple[str, str]] = field(default_factory=list)  # (trace job id, why)
    unfinished: int = 0  # jobs still waiting when no event was left (a policy that deadlocks)
    # Jobs held after more than max_requeues preemptions, as the daemon holds them (id, why)
    held_jobs: list[tuple[str, str]] = field(default_factory=list)
    passes: int = 0  # scheduling passes run
    skipped_passes: int = 0  # event times at which no pending job fitted anywhere
    wall_seconds: float = 0.0  # time the replay took
    cpu_seconds: float = 0.0  # CPU time it took (what a loaded machine does not inflate)
    # Preemption (gq policy with preemption on): jobs stopped, the card-seconds they spent in
    # their grace (saving, not progressing: what the checkpoint contract costs), and the
    # card-seconds since their last start (what a job that did not checkpoint would lose).
    preemptions: int = 0
    grace_card_seconds: float = 0.0
    at_risk_card_seconds: float = 0.0
    # Freezing (--preempt-mode freeze|auto): victims frozen, and the card-seconds their freezes
    # and thaws held cards without progress (the copies to host memory and back).
    freezes: int = 0
    freeze_card_seconds: float = 0.0
    thaw_card_seconds: float = 0.0
    # Trace job id -> when jobs were first stopped for it: its start less that is what the
    # victims' stopping cost it (a grace, or a freeze).
    preempted_for: dict[str, float] = field(default_factory=dict)
    # Slices sharing cards (gq/sim/colocation.py): pairs formed, the share slowed below 0.8x,
    # card-hours shared, and the work done on shared cards per card-hour (1.0: one job alone).
    sharing: dict = field(default_factory=dict)
