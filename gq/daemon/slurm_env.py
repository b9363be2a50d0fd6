"""The `SLURM_*` variables of a job whose script has `#SBATCH` lines (the CLI marks it with
GQ_SBATCH in its environment: gq.cli.sbatch_script.job_facts), beside gq's own names; none
for other jobs. Whatever SLURM_* the submitter's own environment had is replaced."""

from __future__ import annotations

import json
import os
import socket
import sys

from gq.model import Job

FACTS = "GQ_SBATCH"
# gq's srun and scontrol, first on the PATH of such a job (also where Slurm is installed:
# a real srun outside an allocation only fails).
SHIMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sbatch",
                     "bin")


def _facts(raw: str | None) -> dict | None:
    if raw is None:
        return None
    try:
        facts = json.loads(raw)
    except ValueError:
        return {}
    return facts if isinstance(facts, dict) else {}


def sbatch_files(job: Job) -> tuple[str, str] | None:
    """The stdout and stderr files of a job whose #SBATCH lines name them (-o/-e; stderr
    into the -o file without -e, as sbatch), relative to its working directory."""
    facts = _facts(job.env.get(FACTS))
    if not facts or not isinstance(facts.get("output", facts.get("error")), str):
        return None
    from gq.sbatch.patterns import expand

    array = job.array
    names = []
    for key in ("output", "error"):
        pattern = facts.get(key) or facts.get("output")
        if not isinstance(pattern, str) or not pattern or "\0" in pattern:
            return None
        path = expand(pattern, job.id, array.id if array else None,
                      array.index if array else None, job.name or "", job.user or "",
                      socket.gethostname().split(".")[0])
        names.append(os.path.join(job.cwd, path))
    return names[0], names[1]


def signals_steps(job: Job) -> bool:
    """#SBATCH --signal without B: its signal goes to the script's steps, not the shell."""
    facts = _facts(job.env.get(FACTS))
    return bool(facts) and facts.get("signal_scope") == "steps"


def set_slurm_env(env: dict[str, str], job: Job, gpu_ids: list[int]) -> None:
    facts = _facts(env.pop(FACTS, None))
    if facts is None:
        return
    for key in [k for k in env if k.startswith("SLURM_")]:
        del env[key]
    node = socket.gethostname().split(".")[0]
    env.update(
        SLURM_JOB_ID=str(job.id), SLURM_JOBID=str(job.id), SLURM_JOB_NAME=job.name or "",
        SLURM_CPUS_PER_TASK=str(job.cpus), SLURM_NTASKS="1", SLURM_NPROCS="1",
        SLURM_NNODES="1", SLURM_PROCID="0", SLURM_LOCALID="0", SLURM_NODEID="0",
        SLURM_NODELIST=node, SLURM_JOB_NODELIST=node, SLURMD_NODENAME=node,
        SLURM_SUBMIT_DIR=str(facts.get("submit_dir") or job.cwd),
        SLURM_JOB_GPUS=",".join(str(i) for i in gpu_ids),
        SLURM_GPUS_ON_NODE=str(len(gpu_ids)), SLURM_RESTART_COUNT=str(job.restarts),
    )
    env["PATH"] = os.pathsep.join([SHIMS, *[p for p in env.get("PATH", "").split(os.pathsep)
                                            if p and p != SHIMS]])
    env["GQ_PYTHON"] = sys.executable  # the scontrol shim's gq
    if job.array is not None:
        array = facts.get("array") if isinstance(facts.get("array"), dict) else {}
        env["SLURM_ARRAY_JOB_ID"] = str(job.array.id)
        env["SLURM_ARRAY_TASK_ID"] = str(job.array.index)
        env["SLURM_ARRAY_TASK_COUNT"] = str(array.get("count", job.array.size))
        for key in ("min", "max", "step"):
            if array.get(key) is not None:
                env[f"SLURM_ARRAY_TASK_{key.upper()}"] = str(array[key])
