"""The protocol's operations, each with its traits, its request shape and its answer's shape.

One table for every side: the daemon's handler table (gq/daemon/ops.py) has one handler per
`Op`, the router (gq/daemon/peers/route.py) sends requests to other hosts by the traits, and a
Slurm peer (gq/slurm/link.py) serves or refuses each `Op` by name. The wire name of an
operation is its value (`Op.LIST == "list"`). Standard library only: the CLI's light paths may
import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Flag, auto

from gq.protocol import shapes as s
from gq.protocol.op_names import Op


class Trait(Flag):
    NONE = 0
    ONE_JOB = auto()  # names one job (`id`): a HOST:ID goes to that host
    SOME_JOBS = auto()  # names jobs (`ids`): each goes to the host that holds it
    EVERY_HOST = auto()  # a listing that `--all-hosts` (`hosts`) gathers from every peer
    MUTATES = auto()  # changes the queue or the settings (never answered from a cache)
    WAITS = auto()  # may take as long as the caller allows: answered outside the turns
    ADMIN = auto()  # only an admin (or the daemon's owner) may ask it


@dataclass(frozen=True)
class OpSpec:
    traits: Trait
    request: type  # a TypedDict of the `args` object
    answer: object  # a TypedDict, or list[...] of one, of the `result`
    lists: str | None = None  # EVERY_HOST: the key under which each host's answer is gathered


T = Trait
SPECS: dict[Op, OpSpec] = {
    Op.PING: OpSpec(T.NONE, s.NoArgs, s.PingAnswer),
    Op.CONFIG: OpSpec(T.NONE, s.NoArgs, s.ConfigAnswer),
    Op.SUBMIT: OpSpec(T.MUTATES, s.SubmitArgs, s.Submitted),
    Op.LIST: OpSpec(T.EVERY_HOST, s.ListArgs, list[s.JobView] | s.ListPage | s.ListRows | s.ListLines,
                    lists="jobs"),
    Op.SHOW: OpSpec(T.ONE_JOB, s.OneJob, s.JobDetail),
    Op.WHY: OpSpec(T.ONE_JOB, s.OneJob, s.WhyAnswer),
    Op.LOG: OpSpec(T.ONE_JOB, s.LogArgs, s.LogChunk),
    Op.GPUS: OpSpec(T.EVERY_HOST, s.HostsArgs, list[s.CardView], lists="gpus"),
    Op.CANCEL: OpSpec(T.SOME_JOBS | T.MUTATES, s.SomeJobs, list[s.Outcome]),
    Op.HOLD: OpSpec(T.SOME_JOBS | T.MUTATES, s.SomeJobs, list[s.Outcome]),
    Op.RELEASE: OpSpec(T.SOME_JOBS | T.MUTATES, s.SomeJobs, list[s.Outcome]),
    Op.REQUEUE: OpSpec(T.SOME_JOBS | T.MUTATES, s.SomeJobs, list[s.Outcome]),
    Op.UPDATE: OpSpec(T.SOME_JOBS | T.MUTATES, s.UpdateArgs, list[s.Outcome]),
    Op.WAIT: OpSpec(T.SOME_JOBS | T.WAITS, s.WaitArgs, list[s.JobView]),
    Op.CLEAN: OpSpec(T.MUTATES, s.CleanArgs, s.CleanAnswer),
    Op.COMPLETE: OpSpec(T.NONE, s.CompleteArgs, list[s.Candidate]),
    Op.ESTIMATE: OpSpec(T.NONE, s.SubmitArgs, s.Estimate),
    Op.OFFENDERS: OpSpec(T.EVERY_HOST, s.HostsArgs, list[dict], lists="offenders"),
    Op.SAMPLES: OpSpec(T.NONE, s.SamplesArgs, dict),
    Op.STATS: OpSpec(T.NONE, s.StatsArgs, dict),
    Op.FAIRSHARE: OpSpec(T.NONE, s.NoArgs, dict),
    Op.RESERVE: OpSpec(T.MUTATES | T.ADMIN, s.ReserveArgs, dict),
    Op.UNRESERVE: OpSpec(T.MUTATES | T.ADMIN, s.OneJob, dict),
    Op.RESERVATIONS: OpSpec(T.NONE, s.AllArgs, list[dict]),
    Op.PEERS: OpSpec(T.NONE, s.NoArgs, list[s.PeerView]),
    Op.PEER_ADD: OpSpec(T.MUTATES | T.WAITS | T.ADMIN, s.PeerAddArgs, s.PeerView),
    Op.PEER_RM: OpSpec(T.MUTATES | T.ADMIN, s.PeerRmArgs, dict),
    Op.PEER_CHECK: OpSpec(T.WAITS | T.ADMIN, s.PeerCheckArgs, list[s.PeerView]),
    Op.RELOAD: OpSpec(T.MUTATES | T.ADMIN, s.NoArgs, dict),
    Op.SHUTDOWN: OpSpec(T.MUTATES | T.ADMIN, s.NoArgs, s.ShutdownAnswer),
    Op.TOP: OpSpec(T.NONE, s.TopArgs, s.TopAnswer),
    Op.SIM_REGISTER: OpSpec(T.NONE, s.SimRegisterArgs, s.SimRegistered),
}


def with_trait(trait: Trait) -> frozenset[Op]:
    return frozenset(op for op, spec in SPECS.items() if trait in spec.traits)


ONE_JOB = with_trait(Trait.ONE_JOB)
SOME_JOBS = with_trait(Trait.SOME_JOBS)
EVERY_HOST = {op: SPECS[op].lists for op in with_trait(Trait.EVERY_HOST)}


def listed_jobs(answer: object) -> list:
    """The jobs of a `list` answer without `columns`: a page's (this gq: a request without a
    page gets the first one), or all of them (an older daemon, a Slurm peer: a list)."""
    if isinstance(answer, dict):
        return answer["jobs"]
    return answer if isinstance(answer, list) else []


def every_listed(call, page: int = 5000, **args: object) -> list:
    """Every job a `list` request names, asked a page at a time (`call(op, **args)`: a
    connection's call): for a script that wants them all, each answer bounded."""
    jobs: list = []
    after = None
    while True:
        answer = call("list", **args, page=page, after=after)
        jobs += listed_jobs(answer)
        after = answer.get("next") if isinstance(answer, dict) else None
        if after is None:
            return jobs


def parse_op(value: object) -> Op | None:
    """The operation a request names, or None for anything else."""
    try:
        return Op(value) if isinstance(value, str) else None
    except ValueError:
        return None
