"""Turn a submit request into a Job, or refuse it with one line naming the bad option."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gq.config_governance import PoolsConfig
from gq.model import DepKind, Job, JobState, Reason, Tier
from gq.protocol import BadInput
from gq.units import format_duration, format_size, nearest_size, parse_mem, parse_signal

MAX_NAME = 64
# Beyond any real count (GPUs, cores, retries) or quantity (bytes, seconds), and within what
# SQLite stores: 2**63 - 1 is its largest integer.
MAX_COUNT = 2**31 - 1
MAX_QUANTITY = 2**62
MAX_KEY = 128


@dataclass(frozen=True)
class Caller:
    uid: int
    user: str


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


def _int(args: dict[str, Any], key: str, flag: str, default: int) -> int:
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


def _no_nul(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise BadInput(f"{what}: expected text")
    if "\0" in text:
        raise BadInput(f"{what} contains a NUL byte")
    return text


def _utf8(text: str, what: str) -> str:
    """Text stored as such (not as JSON, as the command and environment are) must be UTF-8:
    bytes that are not arrive as lone surrogates, which SQLite cannot take."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise BadInput(f"{what} {text!r}: not valid UTF-8") from None
    return text


def check_name(name: str) -> str:
    _utf8(_no_nul(name, "--name"), "--name")
    if len(name) > MAX_NAME:
        raise BadInput(f"--name: {len(name)} characters, at most {MAX_NAME} allowed")
    if "/" in name:
        raise BadInput(f"--name {name!r}: must not contain '/'")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise BadInput(f"--name {name!r}: must not contain control characters")
    return name


def check_key(args: dict[str, Any]) -> str | None:
    """The submit's idempotency key: a client that lost the answer sends it again."""
    key = args.get("idempotency_key")
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= MAX_KEY
                            or not key.isprintable()):
        raise BadInput(f"idempotency_key: expected 1 to {MAX_KEY} printable characters")
    return key


def check_command(command: Any) -> list[str]:
    if not isinstance(command, list) or not command or command[0] == "":
        raise BadInput("no command given: gq submit [OPTIONS] -- COMMAND [ARGS...]")
    return [_no_nul(arg, "the command") for arg in command]


def check_resources(args: dict[str, Any], host: HostLimits) -> tuple[int, int | None, int]:
    gpus = _int(args, "gpus", "--gpus", 1)
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
    cpus = _int(args, "cpus", "--cpus", 1)
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


def check_deps(args: dict[str, Any], resolve) -> dict[DepKind, list[int]]:
    deps: dict[DepKind, list[int]] = {}
    for kind in DepKind:
        ids = args.get(str(kind)) or []
        if not isinstance(ids, list):
            raise BadInput(f"--{kind}: expected a list of job ids")
        if ids:
            deps[kind] = [resolve(str(i), f"--{kind}") for i in ids]
    return deps


def _flag(args: dict[str, Any], key: str, flag: str) -> bool | None:
    value = args.get(key)
    if value is not None and not isinstance(value, bool):
        raise BadInput(f"{flag} {value!r}: expected true or false")
    return value


def check_preemption(args: dict[str, Any], gpus: int, time_limit: float | None,
                     default_grace: float) -> dict[str, Any]:
    """The checkpoint signal, grace and out-of-memory retries, checked against each other."""
    out: dict[str, Any] = {"signal_group": bool(_flag(args, "signal_group", "--signal-group"))}
    try:
        out["signal"] = parse_signal(str(args.get("signal") or "SIGTERM"))
    except ValueError as e:
        raise BadInput(f"--signal {e}") from None
    before = args.get("signal_before")
    if before is not None:
        if isinstance(before, bool) or not isinstance(before, (int, float)) or before <= 0:
            raise BadInput(f"--signal @{before!r}: the time before the limit must be positive")
        shown = f"--signal {out['signal'][3:]}@{format_duration(before)}"
        if time_limit is None:
            raise BadInput(f"{shown}: needs --time, the limit it is sent before")
        if before >= time_limit:
            raise BadInput(f"{shown}: must be shorter than --time {format_duration(time_limit)}")
        out["signal_before"] = float(before)
    grace = args.get("grace", default_grace)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        raise BadInput(f"--grace {grace!r}: must be 0 or more seconds")
    out["grace"] = float(grace)
    retry = _int(args, "retry_oom", "--retry-oom", 0)
    if retry < 0:
        raise BadInput(f"--retry-oom {retry}: must be 0 or more")
    if retry and gpus == 0:
        raise BadInput("--retry-oom retries with more GPU memory and needs --gpus 1 or more")
    out["retry_oom"] = retry
    return out


def build_job(args: dict[str, Any], caller: Caller, host: HostLimits, resolve, now: float,
              cwd_here: bool = True) -> Job:
    """`resolve(text, flag)` turns '12' or '@' into an existing job id, or raises BadInput.
    cwd_here=False: the directory is on another host (a job waiting to be sent to a peer)."""
    command = check_command(args.get("command"))
    if args.get("name"):
        name = check_name(args["name"])
    else:
        base = os.path.basename(command[0]) or command[0]
        name = "".join(c for c in base if c.isprintable() and c != "/")[:MAX_NAME]
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
    cwd = _utf8(_no_nul(args.get("cwd") or "", "--cwd"), "--cwd")
    if not os.path.isabs(cwd) or (cwd_here and not os.path.isdir(cwd)):
        raise BadInput(f"--cwd {cwd!r}: no such directory")
    env = args.get("env") or {}
    if not isinstance(env, dict):
        raise BadInput("env: expected an object")
    for key, value in env.items():
        _no_nul(key, "an environment variable name")
        _no_nul(value, f"environment variable {key}")
    held = bool(args.get("hold"))
    umask = args.get("umask")
    if umask is not None and (isinstance(umask, bool) or not isinstance(umask, int)
                              or not 0 <= umask <= 0o777):
        raise BadInput(f"umask {umask!r}: expected a number from 0 to 0o777")
    time_limit = _opt_positive(args, "time_limit", "--time")
    interactive = bool(_flag(args, "interactive", "--interactive"))
    pool, time_limit = check_pool(args.get("pool"), interactive, gpus, time_limit, host)
    gpus_max = check_range(args, gpus, host, pool)
    preemptible = _flag(args, "preemptible", "--preemptible")
    return Job(
        id=0,
        user=caller.user,
        uid=caller.uid,
        host=host.name,
        command=command,
        cwd=cwd,
        state=JobState.HELD if held else JobState.PENDING,
        # Until the next scheduling pass (at once, unless the daemon is flooded): jobs ahead.
        reason=Reason.HELD if held else Reason.PRIORITY,
        name=name,
        priority=priority,
        gpus=gpus,
        mem=mem,
        cpus=cpus,
        ram=None if ram is None else int(ram),
        time_limit=time_limit,
        deps=check_deps(args, resolve),
        env={str(k): str(v) for k, v in env.items()},
        pool=pool,
        gpus_max=gpus_max,
        interactive=interactive,
        submitted_at=now,
        umask=umask,
        preemptible=(str(priority) in host.preemptible_tiers if preemptible is None
                     else preemptible),
        **check_preemption(args, gpus, time_limit, host.grace),
    )


def check_pool(name: Any, interactive: bool, gpus: int, time_limit: float | None,
               host: HostLimits) -> tuple[str | None, float | None]:
    """The job's pool (None: the default pool) and its time limit, which the pool may cap or
    give. An interactive job goes to the interactive pool unless it names one, and must have a
    time limit."""
    pools = host.pools
    if name is not None:
        if not isinstance(name, str) or not name:
            raise BadInput("--pool: expected a pool's name")
        if not pools.configured:
            raise BadInput(f"--pool {name}: {host.name} has no pools ([pools.NAME] in "
                           "config.toml)")
        known = set(pools.pools) | {pools.default_name()}
        if name not in known:
            raise BadInput(f"--pool {name}: no such pool on {host.name} (pools: "
                           f"{', '.join(sorted(known))})")
    elif interactive:
        name = pools.interactive_name()
    pool = pools.get(name)
    if pool is not None and pool.max_time is not None:
        if time_limit is None:
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
    top = _int(args, "gpus_max", "--gpus", 0)
    if gpus < 1 or top <= gpus:
        raise BadInput(f"--gpus {gpus}-{top}: expected a range like 2-4, from 1 up")
    cards = len(host.card_memory)
    if host.pools.configured:
        name = pool or host.pools.default_name()
        cards = len(host.pools.for_cards(list(host.card_ids)).cards.get(name, ()))
    if top > cards:
        raise BadInput(f"--gpus {gpus}-{top}: at most {cards} GPU{'s' * (cards != 1)} here")
    return top
