"""What the policy is given and what it returns: plain data, no behaviour."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from gq.model import WAITING_STATES, Job, JobState
from gq.policy.accounts import Accounts
from gq.policy.fairshare import FairShareConfig, Score
from gq.policy.pools import Pools
from gq.policy.queue import PendingQueue
from gq.policy.quotas import Limits
from gq.policy.windows import Window

if TYPE_CHECKING:
    from gq.policy.freezing import Choice
    from gq.policy.preemption import Note, Preemption


@dataclass(frozen=True)
class Card:
    """A card as the scheduler sees it."""

    index: int
    memory_total: int
    # Memory held by processes that gq did not start; None when it cannot be measured,
    # in which case the card is not used (fail closed).
    external_used: int | None = 0
    # Cards with the same island are linked (NVLink, same PCIe switch); None = unknown.
    island: int | None = None
    # What each running gq job's processes hold on it now, measured: (job id, bytes) pairs.
    # For placement a job occupies the larger of its --mem and this plus a margin
    # (placement.MEASURED_MARGIN); a job above its --mem keeps new slices off the card.
    measured: tuple[tuple[int, int], ...] = ()
    # Its model, as the driver names it: a frozen job may be thawed on another card of its
    # model (gq/policy/freezing.py). "" when unknown, as in a replay (all one model).
    model: str = ""


@dataclass(frozen=True)
class Host:
    cpus: int
    ram: int | None = None  # None: do not account host memory
    cards: tuple[Card, ...] = ()
    name: str = ""  # in a cluster, what running jobs' `host` refers to


@dataclass(frozen=True)
class Outcome:
    """How a job that others depend on ended, or, for --afterstart, that it started (a state
    not ended, and when)."""

    state: JobState
    exit_code: int | None = None
    ended_at: float | None = None
    started_at: float | None = None

    @classmethod
    def of(cls, job) -> Outcome | None:
        """Of a job: None while it waits (until it starts or ends, and again once requeued)."""
        if job.state in WAITING_STATES:
            return None
        return cls(job.state, job.exit_code, job.ended_at, job.started_at)


@dataclass
class SchedulerInput:
    # One host (the daemon), or a cluster of them (gq sim): a job runs within one host.
    host: Host | tuple[Host, ...]
    # Pending and held jobs: a list, or a PendingQueue that the caller keeps between passes.
    pending: list[Job] | PendingQueue
    running: list[Job]  # every job that holds resources now, with its gpu_ids
    # Final outcome of each job named in a dependency that has ended; a dependency that is
    # absent here has not ended yet.
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    now: float = 0.0
    # How long a job without --time is assumed to run, when reserving resources for others;
    # tier_limits overrides it per tier ("low" work tends to run longer, say).
    default_limit: float = 24 * 3600.0
    tier_limits: dict[str, float] = field(default_factory=dict)
    # Predicted run times (policy/predict.py), by job id, at most each job's --time: expected
    # ends, reservations and backfill use the smaller of a job's --time and its prediction
    # (EASY++), and a job without --time is scored by its prediction. They stop nothing.
    predicted: dict[int, float] = field(default_factory=dict)
    # How many of the first jobs that cannot start get a reservation (backfill protects them).
    max_reservations: int = 8
    # Each user's decayed card-seconds (fairshare.decayed_usage), and how to weigh it.
    # The caller replaces the dict when it recalculates usage; it never edits one in place.
    usage: dict[str, float] = field(default_factory=dict)
    fairshare: FairShareConfig = FairShareConfig()
    limits: Limits = Limits()
    # When usage was last recalculated: scores (age included) are evaluated then, so the
    # order is stable between recalculations. None: now.
    score_time: float | None = None
    # Governance (docs/governance.md): which cards each pool has, the admin reservations,
    # and the accounts that fair share and limits also count by.
    pools: Pools = Pools()
    windows: tuple[Window, ...] = ()
    accounts: Accounts = Accounts()
    # For the baselines that order by what a job has had or will need (gq/policy/tiresias.py,
    # gq/policy/shortest_first.py): card-seconds each job was served in its earlier runs, and
    # how long a waiting job is expected to run (the truth for the oracle, a prediction for
    # QSSF). gq's own policy reads neither.
    attained: dict[int, float] = field(default_factory=dict)
    # Sharing a card (gq/policy/placement.py): each job's SM utilisation alone (%) where
    # history knows it, and the most the slices of a shared card may sum to (None: memory
    # alone decides, as in a replay of a trace that has no utilisation).
    util: dict[int, float] = field(default_factory=dict)
    share_util_max: float | None = None
    expected_run_time: Callable[[Job], float] | None = None
    # Frozen jobs (gq/policy/freezing.py): alive, holding host memory but no card or core,
    # waiting to be thawed; the plan's `thaws` says which are, where.
    frozen: list[Job] = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.pending, PendingQueue):
            self.pending = PendingQueue(self.pending)

    @cached_property
    def shape_bounds(self) -> dict[tuple, float]:
        """Per shape of waiting job, the shortest predicted run time of its jobs, as a pass
        asks for it (PendingQueue.shortest_limit fills it)."""
        return {}

    @property
    def scored_at(self) -> float:
        return self.now if self.score_time is None else self.score_time

    @property
    def hosts(self) -> tuple[Host, ...]:
        return self.host if isinstance(self.host, tuple) else (self.host,)

    def limit_of(self, job: Job) -> float:
        """The job's time limit, else its predicted run time, else the one assumed for its
        tier."""
        return (job.time_limit or self.predicted.get(job.id)
                or self.tier_limits.get(str(job.priority), self.default_limit))

    def run_time_of(self, job: Job) -> float:
        """How long the job is planned to run (forecasts, reservations, backfill): the smaller
        of its --time and its predicted run time; else either; else its tier's assumed limit.
        A prediction is never longer than the --time (policy/predict.py caps it), and grows
        past a running job's elapsed time: the plan is corrected when a job outlives it."""
        predicted = self.predicted.get(job.id)
        if predicted is not None and job.time_limit:
            return min(predicted, job.time_limit)
        return self.limit_of(job)

    def end_known(self, job: Job) -> bool:
        """Whether the job's expected end rests on a --time or a prediction, not a default."""
        return bool(job.time_limit) or job.id in self.predicted

    def running_on(self, host: Host) -> list[Job]:
        if len(self.hosts) == 1:
            return list(self.running)
        return [j for j in self.running if j.host == host.name]


@dataclass(frozen=True)
class Start:
    job_id: int
    gpu_ids: tuple[int, ...]
    host: str = ""


@dataclass(frozen=True)
class Forecast:
    """A reservation: when a waiting job is expected to start, and on which cards."""

    start: float
    gpu_ids: tuple[int, ...]
    host: str = ""
    # The job whose expected end the start waits for (None: none, or an admin reservation's
    # end): when that end is only an assumed default, the start is unknown.
    after: int | None = None


@dataclass
class Plan:
    starts: list[Start] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)  # pending job id -> Reason
    # For jobs waiting with reason Resources or Priority: what keeps them, in words.
    shortfalls: dict[int, str] = field(default_factory=dict)
    # Jobs with a reservation: when (epoch seconds) and where they are expected to start.
    forecasts: dict[int, Forecast] = field(default_factory=dict)
    # Every pending job's place within its tier, and why.
    scores: dict[int, Score] = field(default_factory=dict)
    # Elements of arrays held back by their %N limit (also in `reasons`).
    held_back: dict[int, str] = field(default_factory=dict)
    # Running jobs to stop for waiting work (in queue order of the jobs served), and for the
    # waiting jobs considered but not served, why nothing is stopped for them.
    preemptions: list[Preemption] = field(default_factory=list)
    preempt_notes: dict[int, Note] = field(default_factory=dict)
    # Freezing (gq/policy/freezing.py): for each victim, frozen or signalled, and why; the
    # frozen jobs to thaw now, on which cards (their memory is then theirs), and why each
    # other frozen job waits (a Reason, with its shortfall in `shortfalls`).
    freezing: dict[int, Choice] = field(default_factory=dict)
    thaws: list[Start] = field(default_factory=list)
    thaw_reasons: dict[int, str] = field(default_factory=dict)
