"""The fields of each operation's request (`args`) and answer (`result`), written once.

TypedDicts: the wire names are the keys, checked by a type checker where code builds or reads
them, and by tests where it cannot (tests/unit/test_protocol_schema.py: what `gq submit` sends
and what the daemon reads of a submit are both in `SubmitArgs`). `total=False`: a request
leaves out what it does not set. Times on the wire are ISO 8601 strings; sizes are bytes.
Standard library only.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict


# ---- requests ------------------------------------------------------------------------------

class NoArgs(TypedDict, total=False):
    pass


class SubmitArgs(TypedDict, total=False):
    """`submit` (and `estimate`, for `--host any`): what one job, or one array, asks for."""

    command: list[str]
    cwd: str
    env: dict[str, str]
    umask: int
    hold: bool
    priority: Literal["high", "normal", "low"]
    name: str
    gpus: int
    gpus_max: int  # an elastic range -g 2-4: gpus is its minimum
    mem: int | Literal["auto"]  # bytes of card memory; "auto": learned from past runs
    cpus: int
    ram: int
    time_limit: float  # seconds
    pool: str
    interactive: bool
    preemptible: bool
    no_preemptible: bool
    signal: str
    signal_group: bool
    signal_before: float
    grace: float
    retry_oom: int
    preempt_mode: Literal["freeze", "signal", "auto"]  # how it makes way (docs/preemption.md)
    after: list[str]
    afterok: list[str]
    afternotok: list[str]
    afterstart: list[str]  # started (or ended without starting): Slurm's `after`
    array: dict[str, Any]  # gq/arrayspec.py: {"start", "stop", "step", "limit"}
    sweep: dict[str, list[str]]
    notify: str
    mail: str
    host: str  # a peer's name, "any" or "local"
    # a script's #SBATCH lines, for a Slurm peer to send as written (gq/slurm/translate.py):
    # {"block": [lines], "given": [fields set on gq's command line], "refused": sentence}
    sbatch_script: dict[str, Any]
    idempotency_key: str  # the same key again is the same submit
    attach: dict[str, Any]  # gq run (gq/protocol/attach.py): {"key", "tty", "no_hangup", "log"}


class ListArgs(TypedDict, total=False):
    all: bool  # ended jobs too
    states: list[str]
    user: str
    brief: bool  # the table's columns only: no command, directory or environment
    recent: bool
    since: float
    last: int
    hosts: Literal["all", "local"]
    columns: list[str]  # rows of these fields only (gq/daemon/listing.py COLUMNS), paged
    page: int  # jobs per answer (at most 5,000)
    after: int  # the `next` of the previous page
    lines: bool  # with columns, active jobs: an array as one line (gq ls's default)
    array: int  # one array's elements (gq ls --array ID)


class TopArgs(TypedDict, total=False):
    cursor: list  # [daemon epoch, version] of the last answer; none: everything
    points_after: float  # epoch seconds of the last card sample the client has


class SimRegisterArgs(TypedDict, total=False):
    """`sim_register`: the connecting process (its peer credentials) on simulated cards."""

    visible: str  # its CUDA_VISIBLE_DEVICES
    mem: int  # bytes on each card
    util: int  # percent
    leak: bool  # keep holding the memory once it is gone (zombie memory)


class HostsArgs(TypedDict, total=False):
    hosts: Literal["all", "local"]


class OneJob(TypedDict):
    id: str  # "12", "12_3" (an array element), "@" (your last), "HOST:12"


class LogArgs(OneJob, total=False):
    err: bool
    offset: int


class SomeJobs(TypedDict):
    ids: list[str]


class UpdateArgs(SomeJobs, total=False):
    gpus: int
    mem: int
    priority: str
    time_limit: float
    name: str
    pool: str


class WaitArgs(SomeJobs, total=False):
    timeout: float


class CleanArgs(TypedDict, total=False):
    user: str


class CompleteArgs(TypedDict):
    prefix: str
    # "for": which candidates (jobs for a command, peers...); a Python keyword, so functional
    # syntax would be needed to declare it: it is read as args["for"].


class SamplesArgs(TypedDict, total=False):
    gpu: int
    job: str
    since: float
    resolution: str


class StatsArgs(TypedDict, total=False):
    since: float
    start: float
    until: float


class ReserveArgs(TypedDict, total=False):
    cards: list[int]
    ids: list[str]
    pool: str
    name: str
    start: str
    until: str


class AllArgs(TypedDict, total=False):
    all: bool


class PeerAddArgs(TypedDict, total=False):
    address: str
    name: str
    port: int
    user: str
    identity: str
    gq_home: str
    gq_command: str
    accept_new: bool
    replace: bool
    slurm: bool
    partition: str
    account: str
    qos: list[str]


class PeerRmArgs(TypedDict):
    name: str


class PeerCheckArgs(TypedDict, total=False):
    names: list[str]


# ---- answers -------------------------------------------------------------------------------

class JobView(TypedDict, total=False):
    """A job as `list`, `submit` and `wait` answer it (gq/daemon/views.py job_json)."""

    id: int
    name: str | None
    user: str
    host: str
    state: str  # a JobState's name, or `stopping`: decided ended, its run not gone yet
    stop: str | None  # what a stopping job ends as (cancelled, timeout); None otherwise
    reason: str | None
    priority: str
    gpus: int
    gpus_max: int | None
    mem: int | None
    cpus: int
    ram: int | None
    time_limit: float | None
    command: list[str]
    cwd: str
    submitted_at: str | None
    started_at: str | None
    ended_at: str | None
    exit_code: int | None
    restarts: int
    gpu_ids: list[int]
    deps: dict[str, str]
    preemptible: bool
    signal: str
    signal_before: float | None
    signal_group: bool
    grace: float | None
    preemptions: int
    retry_oom: int
    oom_retries: int
    peak_mem: int | None
    pool: str | None
    interactive: bool
    array: dict[str, Any] | None
    attached: dict[str, bool] | None  # gq run (docs/run.md): {"tty", "no_hangup", "log"}
    failure: str | None
    failure_evidence: list[str]
    failure_suggestion: str | None
    expected_start: str | None
    expected_start_basis: str | None  # what the forecast rests on (docs/scheduling.md)
    never_starts: str | None  # `wait`: why the job can no longer start without someone acting
    # Freezing (docs/preemption.md): preempt_mode None is the tier's default
    preempt_mode: str | None
    host_mem: int | None  # bytes of its GPU state held in host memory while frozen
    frozen_at: str | None
    frozen_cards: list[dict[str, Any]]  # the cards it was frozen on
    freeze_op: str | None  # "freeze" or "thaw" under way
    freeze_note: str | None


class ListPage(TypedDict):
    """`list` with `page` and no `columns`: whole jobs, a page at a time."""

    jobs: list[JobView]
    next: int | None  # the `after` of the next page; None: the last page


class ListRows(TypedDict):
    """`list` with `columns`: rows of those fields, as SQLite writes them, a page at a time."""

    columns: list[str]
    rows: list[list[Any]]
    arrays: dict[str, Any]  # how the elements not listed of each array ended
    starts: dict[str, list[Any]]  # job id -> [expected start, its basis]
    next: int | None
    now: float  # the daemon's clock as it read the page: what the rows' times are timed by


class ListLines(ListRows, total=False):
    """`list` with `columns` and `lines`: an array as one row (its first listed element's)."""

    lines: dict[str, Any]  # array id -> its listed elements' states, cards, reasons
    ended: dict[str, Any]  # first page: the last few ended (rows), the others counted


class TopAnswer(TypedDict, total=False):
    """`top`: what `gq top` draws; of the queue, what changed since the cursor."""

    cursor: list
    full: bool  # every job, not only the changed ones
    host: str
    user: str
    backend: str
    columns: list[str]
    ids: list[int] | None  # every active job's id (of the first ROWS) when any changed
    more: int  # active jobs after the first ROWS, not in the answer
    rows: list[list[Any]]
    starts: dict[str, list[Any]]
    gpus: list[dict[str, Any]]
    offenders: list[dict[str, Any]]
    points: list[list[Any]]  # [at, card, utilisation]


class Submitted(JobView, total=False):
    array_jobs: list[int]
    notes: list[str]


class JobDetail(JobView, total=False):
    """`show`: the job, its events, what it used, its score and why it waits."""

    why: str
    events: list[dict[str, Any]]
    usage: dict[str, Any] | None
    score: dict[str, Any] | None
    checkpoint_dir: str
    account: str | None
    env: dict[str, str]
    notify: dict[str, Any] | None
    offences: list[dict[str, Any]]
    output_truncated: bool
    prediction: dict[str, Any] | None  # the learned run time (docs/scheduling.md)
    processes: list[dict[str, Any]] | None
    stdout: str
    stderr: str
    freeze: dict[str, Any] | None  # whether it can be frozen, and why not


class WhyAnswer(TypedDict, total=False):
    id: int
    label: str  # "12" or "12_3"
    state: str
    reason: str | None
    why: str
    expected_start: str | None
    expected_start_basis: str | None
    ahead: int | None  # a waiting `gq run`: the waiting jobs the scheduler considers first
    failure: str | None
    failure_evidence: list[str]
    failure_suggestion: str | None


class LogChunk(TypedDict):
    id: int
    state: str
    reason: str | None
    data: str  # base64
    offset: int  # where the next read starts


class CardView(TypedDict, total=False):
    index: int
    uuid: str
    name: str
    memory_total: int
    memory_used: int | None
    utilization: int | None
    temperature: int | None
    power_w: float | None
    simulated: bool
    parent_uuid: str | None  # a MIG instance's card
    island: int | None
    jobs: list[dict[str, Any]]
    external_used: int | None  # memory held by processes that are no job's
    processes: list[dict[str, Any]] | None  # None: the list could not be read
    pool: str | None
    host: str  # in a listing of every host
    freeze: dict[str, Any] | None  # whether its jobs can be frozen, and why not


class Outcome(TypedDict, total=False):
    """One job's result of cancel, hold, release, requeue or update."""

    id: int
    ok: bool
    message: str
    array: int  # named only through its array
    skipped: bool
    host: str


Candidate = list[str]  # [value, description]


class Estimate(TypedDict, total=False):
    error: str | None  # why this host cannot take the job
    wait: float | None  # seconds until it would start
    leftover: int  # card memory left beside it
    starting: int
    reason: str | None


class CleanAnswer(TypedDict):
    cleared: int


class PeerView(TypedDict, total=False):
    name: str
    address: str
    state: Literal["unknown", "up", "down"]
    last_seen: str | None
    error: str | None
    version: str | None
    latency_ms: float | None
    gpus: int
    gpu_names: list[str]
    running: int
    pending: int
    gq_home: str | None
    gq_command: str
    kind: Literal["gq", "slurm"]
    accepted_key: str | None  # peer_add
    remote_host: str | None
    remote_user: str | None


class PingAnswer(TypedDict, total=False):
    version: str
    protocol: int
    host: str
    pid: int
    home: str
    backend: str
    gpus: int
    largest_card: int | None  # bytes: the memory of its largest card (None: no cards)
    user: str
    uid: int
    system: bool
    socket: str
    warnings: list[str]


class ConfigAnswer(TypedDict):
    file: str
    read: bool
    socket: str
    settings: list[dict[str, Any]]


class ShutdownAnswer(TypedDict):
    stopping: bool
    running_jobs: int


class SimRegistered(TypedDict, total=False):
    """Registered (pid, create_time, cards: [{index, uuid}]), or too little room (oom: the
    message PyTorch prints)."""

    pid: int
    create_time: float
    cards: list[dict[str, Any]]
    oom: str
