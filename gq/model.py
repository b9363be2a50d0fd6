"""Plain data shared by every layer: jobs, states, cards. Standard library only."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gq import states


class JobState(StrEnum):
    PENDING = "pending"
    HELD = "held"
    RUNNING = "running"
    PREEMPTING = "preempting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    OOM = "oom"
    LOST = "lost"
    FROZEN = "frozen"  # its GPU state checkpointed to host memory, its process alive and stopped

    @property
    def active(self) -> bool:
        return self in ACTIVE_STATES

    @property
    def ended(self) -> bool:
        return self in ENDED_STATES


# The groups, named once in gq/states.py (which the light commands read).
WAITING_STATES = frozenset(map(JobState, states.WAITING))
RUNNING_STATES = frozenset(map(JobState, states.RUNNING))
# Its process lives on, holding host memory but no card or core, until it is thawed.
FROZEN_STATES = frozenset(map(JobState, states.FROZEN))
ACTIVE_STATES = WAITING_STATES | RUNNING_STATES | FROZEN_STATES
ENDED_STATES = frozenset(JobState) - ACTIVE_STATES

# --preempt-mode: how a preempted job makes way (docs/preemption.md#freezing).
PREEMPT_MODES = ("freeze", "signal", "auto")


def parse_preempt_mode(text: object) -> str:
    """'Freeze' -> 'freeze'; ValueError naming the choices for anything else."""
    mode = str(text).strip().lower()
    if mode not in PREEMPT_MODES:
        raise ValueError(f"--preempt-mode {str(text)[:40]!r}: expected freeze, signal or auto")
    return mode

# The one place where state changes are allowed. Ended jobs may go back to pending
# (requeue) and a pending job may end without running (cancel, lost dependency).
TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.PENDING: frozenset({JobState.HELD, JobState.RUNNING, JobState.CANCELLED}),
    JobState.HELD: frozenset({JobState.PENDING, JobState.CANCELLED}),
    # running -> frozen: a thaw that found its card taken after all, and did not begin.
    JobState.RUNNING: frozenset(
        {JobState.PREEMPTING, JobState.PENDING, JobState.FROZEN} | ENDED_STATES
    ),
    JobState.PREEMPTING: frozenset({JobState.PENDING, JobState.HELD, JobState.FROZEN}
                                   | ENDED_STATES),
    # frozen -> running: thawed; -> preempting: `gq requeue` takes the signal path; -> an ended
    # state: cancelled, or its process ended while frozen (its time limit does not run).
    JobState.FROZEN: frozenset({JobState.RUNNING, JobState.PREEMPTING}
                               | (ENDED_STATES - {JobState.TIMEOUT})),
    **{s: frozenset({JobState.PENDING}) for s in ENDED_STATES},
}


class IllegalTransition(ValueError):
    pass


def check_transition(old: JobState, new: JobState) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(f"a {old} job cannot become {new}")


class Tier(StrEnum):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def rank(self) -> int:
        """0 is the most urgent."""
        return _TIER_RANK[self]


_TIER_RANK = {Tier.HIGH: 0, Tier.NORMAL: 1, Tier.LOW: 2}


class Reason(StrEnum):
    """Why a job is pending, in Slurm's vocabulary where it fits."""

    PRIORITY = "Priority"
    RESOURCES = "Resources"
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
    HELD = "Held"
    QUOTA_LIMIT = "QuotaLimit"
    PEER_DOWN = "PeerDown"
    NO_GPUS = "NoGpus"
    ARRAY_LIMIT = "JobArrayTaskLimit"  # its array already runs as many elements as its %N


class DepKind(StrEnum):
    AFTER = "after"  # the other job ended, any outcome
    AFTEROK = "afterok"  # ... completed with exit code 0
    AFTERNOTOK = "afternotok"  # ... ended any other way
    AFTERSTART = "afterstart"  # the other job started (or ended without starting): Slurm's after


@dataclass(slots=True)  # one an array element in memory: no __dict__ each (#38)
class ArrayPart:
    """Where a job sits in an array (--array) or a sweep (--sweep), which is an array too."""

    id: int  # the array's id: the job id of its first element
    index: int  # GQ_ARRAY_INDEX
    size: int
    limit: int | None = None  # at most this many elements running at once (--array ...%N)
    params: dict[str, str] = field(default_factory=dict)  # this element's sweep values


@dataclass
class Notify:
    """Who hears of the job's end: a command of the submitter's (--notify), a mail (--mail)."""

    command: str | None = None
    mail: str | None = None


# Slots: a job has 51 fields, more than CPython shares the keys of among instances' dicts
# (30), so each job's __dict__ was a table of its own, 1.6 kB; as slots they take 0.4 kB, and
# the daemon keeps every waiting job in memory (issue #38: under 2 kB a waiting job).
@dataclass(slots=True)
class Job:
    id: int
    user: str
    command: list[str]
    cwd: str
    state: JobState = JobState.PENDING
    name: str = ""
    uid: int = -1
    host: str = ""
    reason: str | None = None
    priority: Tier = Tier.NORMAL
    gpus: int = 1
    mem: int | None = None  # bytes per GPU; None = whole cards
    cpus: int = 1
    ram: int | None = None  # host memory, bytes
    time_limit: float | None = None  # seconds
    deps: dict[DepKind, list[int]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    submitted_at: float = 0.0
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    restarts: int = 0
    gpu_ids: list[int] = field(default_factory=list)
    # Preemption (docs/preemption.md). `signal` is the checkpoint signal's name, sent to the
    # job's main process (its process group with signal_group) on preemption and, with
    # signal_before, that many seconds before the time limit. grace: fixed at submit from
    # [preemption] grace unless given; None only for jobs queued before preemption existed.
    preemptible: bool = False
    signal: str = "SIGTERM"
    signal_before: float | None = None
    signal_group: bool = False
    grace: float | None = None
    preemptions: int = 0  # times requeued by preemption; over max_requeues the job is held
    retry_oom: int = 0  # how many times an out-of-memory death is retried with more memory
    oom_retries: int = 0  # how many of those retries were used
    peak_mem: int | None = None  # the most GPU memory its processes were seen to hold, bytes
    array: ArrayPart | None = None
    notify: Notify | None = None
    # Peers (docs/peers.md): for a job queued here for another host, its target ('any' or a
    # peer) until it is sent, then where it went ('gpu2:17').
    forward: str | None = None
    forward_args: dict | None = None  # the request to send, with its idempotency key
    moved_to: str | None = None
    umask: int | None = None  # the submitter's, which the job runs with; None: the daemon's
    # Governance (docs/governance.md). pool: the named set of cards it may run on (None: the
    # default pool). gpus_max: an elastic range --gpus 2-4 is gpus=2, gpus_max=4; it starts
    # with as many cards as fit within the range, and gpu_ids records how many it got.
    # interactive: a short job that goes ahead of batch work in its pool.
    pool: str | None = None
    gpus_max: int | None = None
    interactive: bool = False
    # Why an ended run failed (gq/triage, docs/triage.md): one of triage.rules.CLASSES, and
    # the log lines or facts that say so. None on jobs that did not fail.
    failure: str | None = None
    failure_evidence: list[str] = field(default_factory=list)
    # Freezing (docs/preemption.md#freezing). preempt_mode: --preempt-mode (None: its tier's
    # default, [preemption] mode). host_mem: bytes of host memory its GPU state takes while it
    # is frozen (set when the freeze is decided, cleared once it is thawed). frozen_cards: the
    # cards it was frozen from, [{"index", "uuid", "name", "mem"}]: it is thawed on the same
    # ones or on cards of the same model. freeze_op: "freeze" or "thaw" while a helper is at
    # it, recorded before the helper starts, so that a restarted daemon finishes it.
    # freeze_note: how the last freeze or thaw went, or why it took the signal path instead.
    preempt_mode: str | None = None
    host_mem: int | None = None
    frozen_cards: list[dict] = field(default_factory=list)
    frozen_at: float | None = None
    freeze_op: str | None = None
    freeze_note: str | None = None
    # When the daemon asked its running shim to stop (cancel, time limit, preemption). A job
    # decided cancelled or timed out keeps ended_at None until its run has let go of its
    # cards: until then it is `stopping` (is_stopping).
    stop_asked_at: float | None = None
    # Cards kept from a waiting job (not stored): those where another job's overrun killed its
    # last run, while that job runs (gq/daemon/collateral.py).
    avoid_gpus: frozenset[int] = frozenset()
    # A `gq run` job (docs/run.md): {"key": its channel's, "tty", "no_hangup", "log": bool}; None:
    # a batch job. The key is never shown (gq/daemon/views.py).
    attach: dict | None = None
    # The host a waiting job must run on, in a cluster (not stored): a frozen job's, to be
    # thawed where its process lives (gq/policy/freezing.py).
    pinned: str | None = None

    @property
    def whole_cards(self) -> bool:
        return self.gpus > 0 and self.mem is None

    @property
    def is_stopping(self) -> bool:
        """Decided ended (cancelled, timed out) while its run may still hold its cards."""
        return self.ended_at is None and self.stop_asked_at is not None and self.state.ended

    @property
    def gpus_held(self) -> int:
        """The cards it holds while running (an elastic job's may exceed `gpus`), else the
        cards it asks for at least."""
        return len(self.gpu_ids) if self.gpu_ids else self.gpus


@dataclass
class GpuProcess:
    pid: int
    used_memory: int | None  # bytes; None when the driver cannot say
    utilization: int | None = None  # percent of the card it keeps busy; None = unknown


@dataclass
class Gpu:
    """One schedulable card: a whole GPU, or a MIG instance when MIG is on."""

    index: int
    uuid: str
    name: str
    memory_total: int
    visible_id: str  # what goes into CUDA_VISIBLE_DEVICES for this card
    memory_used: int | None = None  # None = unknown, never 0
    utilization: int | None = None  # percent; None = unknown
    temperature: int | None = None
    power_w: float | None = None
    # The processes holding memory on it; None = unknown (the list could not be read), which is
    # not the same as [] (nothing runs there).
    processes: list[GpuProcess] | None = field(default_factory=list)
    parent_uuid: str | None = None  # the physical GPU of a MIG instance
    simulated: bool = False
    # Cards with the same island number are linked (NVLink, or the same PCIe switch), so a
    # multi-card job is faster on one island. None = unknown. MIG instances share their
    # parent's island.
    island: int | None = None


def clone(obj):
    """A shallow copy of a dataclass instance, a tenth of the cost of copy.copy (and a
    twentieth of dataclasses.replace): for the 10,000 elements of an array. A class with
    slots (Job) is copied by a function made for it once, slot by slot."""
    if not hasattr(obj, "__dict__"):
        return _slot_cloner(type(obj))(obj)
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    return new


_CLONERS: dict[type, object] = {}


def _slot_cloner(cls: type):
    cloner = _CLONERS.get(cls)
    if cloner is None:
        names = [n for c in cls.__mro__ for n in getattr(c, "__slots__", ())]
        body = "".join(f"    new.{n} = obj.{n}\n" for n in names)
        scope: dict = {"new_object": object.__new__, "cls": cls}
        exec(f"def clone(obj):\n    new = new_object(cls)\n{body}    return new\n", scope)
        cloner = _CLONERS[cls] = scope["clone"]
    return cloner
