"""The scheduler's input from the daemon's settings: one assembly, used by the daemon's passes
(gq/daemon/core.py: policy_input) and by `gq sim` (gq/sim/replay.py), so that a setting wired
here reaches both.

SchedulerInput's fields are of three kinds: the jobs and the host(s) (given), the settings
(SETTINGS: read from a Config here, never by the callers), and what the caller observes or
learns (OBSERVED: the time, usage, outcomes, predictions...). tests/unit/test_policy_input.py
checks that every field is one of them, and that the daemon and the replay agree on SETTINGS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gq.policy import Host, PendingQueue, SchedulerInput
from gq.model import Job

if TYPE_CHECKING:
    from gq.config.settings import Config

GIVEN = frozenset({"host", "pending", "running"})
SETTINGS = frozenset({"default_limit", "tier_limits", "max_reservations", "fairshare", "limits",
                      "share_util_max", "pools", "accounts"})
OBSERVED = frozenset({"outcomes", "now", "predicted", "usage", "score_time", "windows",
                      "attained", "util", "expected_run_time", "frozen"})


def scheduler_input(config: Config, host: Host | tuple[Host, ...],
                    pending: list[Job] | PendingQueue, running: list[Job],
                    **observed: Any) -> SchedulerInput:
    """The policy's input: these jobs on `host` (or a cluster of hosts, whose cards the pools
    name by index on each), under `config`'s settings, with what the caller observed."""
    unknown = set(observed) - OBSERVED
    if unknown:  # a setting comes from the config, not from a caller
        raise TypeError(f"not an observation: {', '.join(sorted(unknown))}")
    hosts = host if isinstance(host, tuple) else (host,)
    cards = [c.index for c in hosts[0].cards] if hosts else []
    return SchedulerInput(
        host, pending, running,
        default_limit=config.default_time,
        tier_limits=dict(config.default_time_by_tier),
        max_reservations=config.reservations,
        fairshare=config.fairshare,
        limits=config.limits,
        share_util_max=config.share_util_max,
        pools=config.pools.for_cards(cards),
        accounts=config.accounts,
        **observed,
    )
