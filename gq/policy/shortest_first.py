"""Shortest-first baselines: the oracle that knows every run time, and Helios' QSSF.

- `sjf-oracle`: waiting jobs by their true run time, shortest first (what is left of it, for a
  job that was stopped and requeued); clairvoyant, so it bounds what any order could do for the
  average completion time of jobs that cannot be stopped. No real scheduler knows run times.
- `qssf` (Hu et al., "Characterization and prediction of deep learning workloads in large-scale
  GPU datacenters", SC'21, the Helios paper): Quasi-Shortest-Service-First, waiting jobs by their
  expected service, cards x expected run time, smallest first. The expected run time comes from
  a predictor given as a parameter (the replay's learns each user's history, gq/sim/history.py):
  non-clairvoyant, as gq is.

Both place as `greedy` does (gq/policy/baselines.py): every job that fits somewhere now starts,
in this order, on the first host where it fits; no reservations, tiers or fair share. Ties go
to the earlier submit.
"""

from __future__ import annotations

from collections.abc import Callable

from gq.model import Job
from gq.policy.baselines import _in_submit_order
from gq.policy.types import Plan, SchedulerInput


def sjf_oracle(inp: SchedulerInput, explain: bool = True) -> Plan:
    """`inp.expected_run_time` must give each job's true (remaining) run time."""
    run_time = _required(inp)
    return _shortest_first(inp, explain, "run_time", lambda j: run_time(j))


def qssf(inp: SchedulerInput, explain: bool = True,
         predict: Callable[[Job], float] | None = None) -> Plan:
    """`predict(job)`: its expected run time in seconds (default: `inp.expected_run_time`)."""
    run_time = predict or _required(inp)
    return _shortest_first(inp, explain, "card_time", lambda j: max(j.gpus, 1) * run_time(j))


def _required(inp: SchedulerInput) -> Callable[[Job], float]:
    if inp.expected_run_time is None:
        raise ValueError("this baseline orders by run time: the input gives none")
    return inp.expected_run_time


def _shortest_first(inp: SchedulerInput, explain: bool, name: str,
                    key: Callable[[Job], float]) -> Plan:
    """A job's key is fixed while it waits (the oracle's run time, a prediction made once),
    so the queue keeps the order between passes (PendingQueue.ordered_by)."""
    order = inp.pending.ordered_by(name, key)
    return _in_submit_order(inp, stop_at_first_blocked=False, explain=explain, order=order)
