"""`[slurm_compat]` of config.toml: how a lab's Slurm words map to gq (`default_gpus` for a
script that asks for none, `partitions` to pools, `qos` to tiers). Pure: parsed from a table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KEYS = {"default_gpus", "partitions", "qos"}
TIERS = ("high", "normal", "low")


@dataclass(frozen=True)
class SlurmCompat:
    default_gpus: int = 0  # sbatch's default: a script that asks for no GPU gets none
    partitions: dict[str, str] = field(default_factory=dict)  # partition -> pool ("default")
    qos: dict[str, str] = field(default_factory=dict)  # QOS -> tier


def parse_compat(table: Any) -> SlurmCompat:
    if not isinstance(table, dict):
        raise ValueError("[slurm_compat]: expected a table")
    unknown = set(table) - KEYS
    if unknown:
        raise ValueError(f"unknown setting [slurm_compat] {', '.join(sorted(unknown))}")
    gpus = table.get("default_gpus", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ValueError(f"[slurm_compat] default_gpus = {gpus!r}: expected 0 or more")
    maps = {}
    for key in ("partitions", "qos"):
        value = table.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) and v
                                                  for v in value.values()):
            raise ValueError(f"[slurm_compat] {key}: expected a table of names, e.g. "
                             f"{{gpu = \"default\"}}")
        maps[key] = dict(value)
    bad = [t for t in maps["qos"].values() if t not in TIERS]
    if bad:
        raise ValueError(f"[slurm_compat] qos: {bad[0]!r} is no tier (high, normal, low)")
    return SlurmCompat(gpus, maps["partitions"], maps["qos"])
