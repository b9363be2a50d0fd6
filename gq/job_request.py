"""What a submit request asks for (cards, memory, cores, tier, time, pool), checked against a
host: the one path by which both the daemon (gq/daemon/submission.py) and `gq sim`
(gq/sim/conversion.py) turn a request into a job, so that a replay routes, limits and refuses
jobs as the daemon does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gq.config.governance import PoolsConfig
from gq.model import Tier
from gq.protocol import BadInput
from gq.units import format_duration, format_size, nearest_size, parse_mem

# Beyond any real count (GPUs, cores, retries) or quantity (bytes, seconds), and within what
# SQLite stores: 2**63 - 1 is its largest integer.
MAX_COUNT = 2**31 - 1
MAX_QUANTITY = 2**62


@dataclass(frozen=True)
class HostLimits:
    name: str
    cpus: int
    ram: int | None
    card_memory: tuple[int, ...]  # memory_total of each schedulable card
    # [preemption] defaults, fixed into each job when it is submitted
    preemptible_tiers: frozenset[str] = frozenset({"low"})
    grace: float = 60.0
    pools: PoolsConfig = PoolsConfig()  # [pools.NAME]
    card_ids: tuple[int, ...] = ()  # the index of each card of card_memory


def int_arg(args: dict[str, Any], key: str, flag: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{flag} {value!r}: expected a whole number")
    if abs(value) > MAX_COUNT:
        raise BadInput(f"{flag} {value}: too large")
    return value


def _opt_positive(args: dict[str, Any], key: str, flag: str) -> Any:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise BadInput(f"{flag} {value!r}: must be positive")
    if value > MAX_QUANTITY:
        raise BadInput(f"{flag} {value}: too large")
    return value


def check_resources(args: dict[str, Any], host: HostLimits) -> tuple[int, int | None, int]:
    gpus = int_arg(args, "gpus", "--gpus", 1)
    if gpus < 0:
        raise BadInput(f"--gpus {gpus}: must be 0 (CPU-only) or more")
    cards = len(host.card_memory)
    if gpus > 0 and cards == 0:
        raise BadInput(
            f"--gpus {gpus}: {host.name} has no GPUs (no NVIDIA driver found and GQ_SIM_GPUS "
            "is not set); use --gpus 0 for a CPU-only job"
        )
    if gpus > cards:
        raise BadInput(f"--gpus {gpus}: {host.name} has only {cards} GPU{'s' * (cards != 1)}")
    mem = _opt_positive({"mem": request_mem(args.get("mem"))}, "mem", "--mem")
    if mem is not None:
        if gpus == 0:
            raise BadInput("--mem is GPU memory per GPU and needs --gpus 1 or more")
        largest = sorted(host.card_memory, reverse=True)[gpus - 1]
        if mem > largest:
            raise BadInput(
                f"--mem {format_size(mem)}: more than the cards here hold "
                f"({format_size(largest)}{' each' if gpus > 1 else ''})"
            )
    cpus = int_arg(args, "cpus", "--cpus", 1)
    if cpus < 1:
        raise BadInput(f"--cpus {cpus}: must be at least 1")
    if cpus > host.cpus:
        raise BadInput(f"--cpus {cpus}: {host.name} has only {host.cpus} cores for jobs")
    return gpus, None if mem is None else int(mem), cpus


def request_mem(value: Any) -> Any:
    """--mem in a request: bytes, or text with a unit ('20G'). Text without a unit, or a
    number of bytes too small to be meant (under 1M), is refused with the nearest reading."""
    if isinstance(value, str):
        try:
            return parse_mem(value)
        except ValueError as e:
            raise BadInput(f"--mem {e}") from None
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 20:
        raise BadInput(f"--mem {value}: {value} bytes is too small for a job (sizes in "
                       f"requests are bytes): did you mean {nearest_size(value)}?")
    return value


def flag_arg(args: dict[str, Any], key: str, flag: str) -> bool | None:
    value = args.get(key)
    if value is not None and not isinstance(value, bool):
        raise BadInput(f"{flag} {value!r}: expected true or false")
    return value


def check_pool(name: Any, interactive: bool, gpus: int, time_limit: float | None,
               host: HostLimits, assumed_time: bool = False) -> tuple[str | None, float | None]:
    """The job's pool (None: the default pool) and its time limit, which the pool may cap or
    give. An interactive job goes to the interactive pool unless it names one, and must have a
    time limit. A CPU-only job is in no pool (gq/policy/pools.py)."""
    pools = host.pools
    if name is not None:
        if not isinstance(name, str) or not name:
            raise BadInput("--pool: expected a pool's name")
        if gpus == 0:
            raise BadInput(f"--pool {name}: a CPU-only job (--gpus 0) is in no pool; give "
                           "--gpus 1 or more, or leave out --pool")
        if not pools.configured:
            raise BadInput(f"--pool {name}: {host.name} has no pools ([pools.NAME] in "
                           "config.toml)")
        known = set(pools.pools) | {pools.default_name()}
        if name not in known:
            raise BadInput(f"--pool {name}: no such pool on {host.name} (pools: "
                           f"{', '.join(sorted(known))})")
    elif interactive and gpus > 0:
        name = pools.interactive_name()
    pool = pools.get(name) if gpus > 0 else None
    if pool is not None and pool.max_time is not None:
        if time_limit is None or (assumed_time and time_limit > pool.max_time):
            time_limit = pool.max_time
        elif time_limit > pool.max_time:
            raise BadInput(f"--time {format_duration(time_limit)}: pool {pool.name} allows at "
                           f"most {format_duration(pool.max_time)}")
    if interactive and time_limit is None:
        raise BadInput("--interactive needs --time: interactive jobs are short, and go ahead of "
                       "batch work for that long only")
    if pools.configured and gpus > 0:
        size = len(pools.for_cards(list(host.card_ids)).cards.get(name or pools.default_name(),
                                                                     ()))
        if gpus > size:
            where = f"pool {name or pools.default_name()}"
            raise BadInput(f"--gpus {gpus}: {where} has only {size} GPU{'s' * (size != 1)}")
    return name, time_limit


def check_range(args: dict[str, Any], gpus: int, host: HostLimits, pool: str | None
                ) -> int | None:
    """An elastic range's top (--gpus 2-4: 4), or None for a fixed count."""
    if args.get("gpus_max") is None:
        return None
    top = int_arg(args, "gpus_max", "--gpus", 0)
    if gpus < 1 or top <= gpus:
        raise BadInput(f"--gpus {gpus}-{top}: expected a range like 2-4, from 1 up")
    cards = len(host.card_memory)
    if host.pools.configured:
        name = pool or host.pools.default_name()
        cards = len(host.pools.for_cards(list(host.card_ids)).cards.get(name, ()))
    if top > cards:
        raise BadInput(f"--gpus {gpus}-{top}: at most {cards} GPU{'s' * (cards != 1)} here")
    return top


def request_fields(args: dict[str, Any], host: HostLimits, assumed_time: bool = False
                   ) -> dict[str, Any]:
    """The Job fields of a request's resources: gpus, gpus_max, mem, cpus, ram, priority,
    time_limit, pool and interactive; BadInput naming the option if the host cannot take it.
    `assumed_time`: the time limit is not the user's but a guess (a replay's), which a pool's
    max_time caps instead of refusing."""
    gpus, mem, cpus = check_resources(args, host)
    ram = _opt_positive(args, "ram", "--ram")
    if ram is not None and host.ram is not None and ram > host.ram:
        raise BadInput(f"--ram {format_size(ram)}: {host.name} has {format_size(host.ram)}")
    try:
        priority = Tier(args.get("priority", "normal"))
    except ValueError:
        raise BadInput(
            f"--priority {args.get('priority')!r}: expected high, normal or low"
        ) from None
    time_limit = _opt_positive(args, "time_limit", "--time")
    interactive = bool(flag_arg(args, "interactive", "--interactive"))
    pool, time_limit = check_pool(args.get("pool"), interactive, gpus, time_limit, host,
                                  assumed_time)
    return {"gpus": gpus, "gpus_max": check_range(args, gpus, host, pool), "mem": mem,
            "cpus": cpus, "ram": None if ram is None else int(ram), "priority": priority,
            "time_limit": time_limit, "pool": pool, "interactive": interactive}
