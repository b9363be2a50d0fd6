"""`gq gpus` of a Slurm peer: the GPU nodes of its partition, from one `sinfo` call. Slurm
places jobs on cards itself, so the rows are nodes (GPUs held and free), not cards."""

from __future__ import annotations

import re
from typing import Any
from gq.remote.spec import Unreachable

FIELDS = ("NodeList", "StateLong", "Partition", "CPUsState", "Gres", "GresUsed")
SINFO = ["sinfo", "--Node", "--noheader", "-O", ",".join(f"{f}:|" for f in FIELDS)]
_PARENS = re.compile(r"\([^)]*\)")  # (IDX:0,2) and (S:0-1) hold commas of their own


def gres_gpus(gres: str) -> tuple[int, list[str]]:
    """'gpu:a100:2(IDX:0-1),shard:8' -> (2, ['a100']); 'gpu:2' -> (2, []); none -> (0, [])."""
    count, types = 0, []
    for item in _PARENS.sub("", gres).split(","):
        words = item.strip().split(":")
        if words[0] != "gpu" or len(words) < 2:
            continue
        count += int(words[-1]) if words[-1].isdigit() else 0
        if len(words) == 3 and words[1] not in ("", "(null)"):
            types.append(words[1])
    return count, types


def parse(out: str) -> list[dict[str, Any]]:
    """sinfo's rows (one per node and partition) -> one per node that has GPUs."""
    nodes: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        values = [v.strip() for v in line.split("|")]
        if len(values) < len(FIELDS) or not values[0]:
            continue
        row = dict(zip(FIELDS, values))
        total, types = gres_gpus(row["Gres"])
        if not total:
            continue
        node = nodes.get(row["NodeList"])
        if node is None:
            used, _ = gres_gpus(row["GresUsed"])
            cpus = row["CPUsState"].split("/")  # allocated/idle/other/total
            whole = len(cpus) == 4 and all(c.isdigit() for c in cpus)
            node = nodes[row["NodeList"]] = {
                "node": row["NodeList"], "state": row["StateLong"], "partitions": [],
                "gpus": total, "gpus_used": used, "gpu_types": sorted(set(types)),
                "cpus": int(cpus[3]) if whole else None,
                "cpus_used": int(cpus[0]) if whole else None}
        node["partitions"].append(row["Partition"].rstrip("*"))
    return sorted(nodes.values(), key=lambda n: n["node"])


def gpu_nodes(backend, name: str, partition: str | None, timeout: float) -> list[dict]:
    argv = SINFO + ([f"--partition={partition}"] if partition else [])
    answer = backend.run(argv, timeout=timeout)
    if answer.rc != 0:
        raise Unreachable(f"{name}: sinfo failed: {answer.error_line()}")
    return parse(answer.out)


def card_count(nodes: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """What `gq peers ls` says of a Slurm peer's cards: how many, of which types."""
    return (sum(n.get("gpus") or 0 for n in nodes),
            sorted({t for n in nodes for t in n.get("gpu_types") or []}))
