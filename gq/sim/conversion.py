"""Trace jobs into gq jobs, and the check that a plan's start is possible (a replay's guard).

How a trace job becomes a gq job (docs/sim.md says why):
- whole cards unless the trace gives memory: an Alibaba share of a card becomes
  `gpu_fraction x` the memory of the smallest card in the cluster; gq's format gives bytes;
- cores capped at a host's cores (a trace from bigger machines still replays);
- time limit: the trace's when it has one, else `duration x time_factor` (at least a minute);
  `time_factor=0` declares none, and the policy assumes its `default_limit`.
"""

from __future__ import annotations

from gq.model import Job
from gq.policy.placement import Capacity
from gq.sim.traces import TraceJob

MIN_TIME_LIMIT = 60.0  # a declared limit is at least a minute, as Slurm's --time granularity


def to_job(tj: TraceJob, job_id: int, time_factor: float, smallest_card: int,
           max_cpus: int) -> Job:
    """A trace job as gq would have queued it (see the module docstring for the mapping)."""
    mem = tj.mem
    if tj.gpu_fraction is not None and tj.gpus > 0:
        mem = max(1, round(tj.gpu_fraction * smallest_card))
    if tj.time_limit is not None:
        limit = tj.time_limit
    elif time_factor > 0:
        limit = max(tj.duration * time_factor, MIN_TIME_LIMIT)
    else:
        limit = None
    return Job(id=job_id, user=tj.user, command=[], cwd="", name=tj.name or tj.job_id,
               priority=tj.tier, gpus=tj.gpus, mem=mem, cpus=min(tj.cpus, max_cpus), ram=tj.ram,
               time_limit=limit, submitted_at=tj.submit_time, pool=tj.pool,
               gpus_max=tj.gpus_max, interactive=tj.interactive)


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
