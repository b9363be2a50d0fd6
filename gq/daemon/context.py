"""What a request handler may reach of the daemon: `Context`.

The daemon (gq/daemon/core.py) owns the loop, the supervisor of the shims, the card reading and
the services that start, end, freeze and preempt jobs. A handler (gq/daemon/ops.py HANDLERS)
and what it calls, the peers' forwarding and the notifier, see it through this narrower view:
the store and the settings, the few services a request acts through (stopping a job,
explaining, policing, the peers), and the daemon's own replies to changes (a pass, waking
`gq wait`, new settings). Nothing here reaches a shim, the fork server or a card's reading
except as a result.

`tests/unit/test_context.py` holds this to account: every function that takes the daemon as
`daemon` outside the loop's own modules declares it a Context and uses only what is written
here, and the Daemon has all of it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from gq.config import Config
    from gq.daemon.authz import Authority
    from gq.daemon.freezing import Freezing
    from gq.daemon.layout import Layout
    from gq.daemon.passes import Passes
    from gq.daemon.peers.registry import Peers
    from gq.daemon.policing import Police
    from gq.daemon.reading import Reading
    from gq.daemon.runs import Runs
    from gq.daemon.runtimes import Fingerprints
    from gq.daemon.stopping import Stopping
    from gq.daemon.telemetry import Telemetry
    from gq.gpu.base import CardBackend
    from gq.model import Gpu, Job
    from gq.policy import Host, SchedulerInput
    from gq.store import Store


class Context(Protocol):
    # ---- what it is, and its records ----
    store: Store
    config: Config  # replaced as a whole by apply_config
    layout: Layout
    clock: Callable[[], float]
    hostname: str
    backend: CardBackend
    warnings: list[str]  # found at start (gq daemon status)
    loop: asyncio.AbstractEventLoop | None
    loop_stop: asyncio.Event  # set: the daemon stops serving (gq daemon stop)

    # ---- the services a request acts through ----
    authority: Authority  # who may see and act on what ([access])
    passes: Passes  # scheduling passes, their reasons, scores and forecasts
    stopping: Stopping  # cancel, requeue: a running job's stop
    freezing: Freezing  # what can be frozen, a frozen job's view
    runs: Runs  # the shims being watched (how many jobs run)
    police: Police  # offenders and their actions
    reading: Reading  # the last card reading and whose memory is whose
    telemetry: Telemetry  # samples of each running job
    run_times: Any  # learned run times (gq/daemon/runtimes.py), for predictions
    fingerprints: Fingerprints  # command keys of jobs, for what was learned of them
    usage: dict[str, float]  # decayed card-seconds per user (refresh_usage)
    peers: Peers  # the other hosts, and forwarding to them

    @property
    def cards(self) -> list[Gpu]: ...

    # ---- the daemon's replies to a change ----
    def host(self) -> Host: ...

    def local_queue(self) -> list[Job]: ...

    def scheduler_input(self, pending: list[Job], running: list[Job]) -> SchedulerInput: ...

    def refresh_usage(self, every: float = 60.0) -> None: ...

    def notify(self, job_id: int) -> None: ...

    def notify_many(self, job_ids: list[int]) -> None: ...

    def wake_waiters(self, job_ids: list[int]) -> None: ...

    def wait_for_end(self, job_id: int) -> asyncio.Future: ...

    def apply_config(self, new: Config) -> None: ...
