"""Trace jobs into gq jobs, and the check that a plan's start is possible (a replay's guard).

How a trace job becomes a gq job (docs/sim.md says why):
- whole cards unless the trace gives memory: an Alibaba share of a card becomes
  `gpu_fraction x` the memory of the smallest card in the cluster; gq's format gives bytes;
- cores capped at a host's cores (a trace from bigger machines still replays);
- time limit: the trace's when it has one, else `duration x time_factor` (at least a minute,
  and at most its pool's max_time); `time_factor=0` declares none, and the policy assumes its
  `default_limit`;
- then the daemon's own check of a request (gq/job_request.py) routes it to its pool (an
  interactive job to the interactive pool), applies the pool's max_time, and refuses what the
  daemon would refuse (an unknown pool, more GPUs than a host or pool has), saying why.
"""

from __future__ import annotations

from gq.config.governance import PoolsConfig
from gq.job_request import HostLimits, request_fields
from gq.model import Job
from gq.policy.placement import Capacity
from gq.policy.types import Host
from gq.protocol import BadInput
from gq.sim.traces import TraceJob

MIN_TIME_LIMIT = 60.0  # a declared limit is at least a minute, as Slurm's --time granularity


def host_limits(host: Host, pools: PoolsConfig) -> HostLimits:
    """What the daemon of a simulated host checks a request against."""
    return HostLimits(name=host.name, cpus=host.cpus, ram=host.ram,
                      card_memory=tuple(c.memory_total for c in host.cards), pools=pools,
                      card_ids=tuple(c.index for c in host.cards))


def request_of(tj: TraceJob, time_factor: float, smallest_card: int, max_cpus: int
               ) -> tuple[dict, bool]:
    """The submit request a trace job stands for, and whether its time limit is assumed."""
    mem = tj.mem
    if tj.gpu_fraction is not None and tj.gpus > 0:
        mem = max(1, round(tj.gpu_fraction * smallest_card))
    if tj.time_limit is not None:
        limit = tj.time_limit
    elif time_factor > 0:
        limit = max(tj.duration * time_factor, MIN_TIME_LIMIT)
    else:
        limit = None
    args = {"gpus": tj.gpus, "gpus_max": tj.gpus_max, "mem": mem,
            "cpus": min(tj.cpus, max_cpus), "ram": tj.ram, "priority": str(tj.tier),
            "time_limit": limit, "pool": tj.pool, "interactive": tj.interactive}
    return args, tj.time_limit is None


def to_job(tj: TraceJob, job_id: int, time_factor: float, smallest_card: int,
           max_cpus: int, hosts: tuple[HostLimits, ...]) -> Job:
    """A trace job as gq would have queued it on the first of `hosts` that takes it (see the
    module docstring); BadInput with the first host's refusal if none does."""
    args, assumed = request_of(tj, time_factor, smallest_card, max_cpus)
    refusal = None
    for host in hosts:
        try:
            fields = request_fields(args, host, assumed_time=assumed)
            break
        except BadInput as e:
            refusal = refusal or e
    else:
        raise refusal or BadInput("the cluster has no host")
    return Job(id=job_id, user=tj.user, command=[], cwd="", name=tj.name or tj.job_id,
               submitted_at=tj.submit_time, **fields)


def check_fits(job: Job, host: str, gpu_ids, capacity: Capacity, policy: str) -> None:
    """A plan that over-commits a card or a host is a policy bug: stop the replay loudly."""
    problem = None
    top = job.gpus_max or job.gpus
    if not job.gpus <= len(gpu_ids) <= top or len(set(gpu_ids)) != len(gpu_ids):
        problem = f"got cards {list(gpu_ids)} for {job.gpus}-{top} GPU(s)"
    elif job.cpus > capacity.cpus_free:
        problem = f"needs {job.cpus} cores, {capacity.cpus_free} free"
    elif capacity.ram_free is not None and (job.ram or 0) > capacity.ram_free:
        problem = "needs more host memory than is free"
    for i in gpu_ids:
        card = capacity.cards.get(i)
        if problem or card is None:
            problem = problem or f"card {i} does not exist"
            break
        if job.mem is None and (card.jobs or card.external):
            problem = f"takes card {i} whole, which is in use"
        elif job.mem is not None and job.mem > card.free:
            problem = f"needs {job.mem} bytes on card {i}, {card.free} free"
    if problem:
        raise RuntimeError(f"policy {policy} started job {job.id} on {host}: {problem}")
