"""Simulated cards: the GQ_SIM_GPUS parser, the files burn processes write, and the backend."""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from gq.gpu.base import CardBackend
from gq.model import Gpu, GpuProcess
from gq.units import format_size, parse_size

GIB = 1 << 30
MAX_SIM_CARDS = 64
CARDS_FILE = "cards.json"
FAULTS_FILE = "faults.json"
PROCS_DIR = "procs"
SIM_DIR_ENV = "GQ_SIM_DIR"
# A system daemon's socket, in its jobs' environment: its simulator's files are root's, so a
# burn asks it to register (gq/daemon/sim_register.py) instead of writing them.
SIM_SOCKET_ENV = "GQ_SIM_SOCKET"

SPEC_HELP = "expected COUNTxSIZE or COUNTxMODEL, e.g. 4x80G or 2xH100,2xA100-40G"


@dataclass(frozen=True)
class SimCardSpec:
    name: str
    memory_total: int  # bytes
    tdp_w: float = 300.0  # board power at 100% utilisation
    island: int | None = None  # cards with the same number are linked; None = unknown


# Names as NVML reports them, so that the TUI and `gq gpus` look the same as on real hardware.
# Sizes are round GiB: tests and docs can then say "80G" and mean the whole card.
MODELS: dict[str, SimCardSpec] = {
    "H100": SimCardSpec("NVIDIA H100 80GB HBM3", 80 * GIB, 700),
    "H200": SimCardSpec("NVIDIA H200", 141 * GIB, 700),
    "B200": SimCardSpec("NVIDIA B200", 180 * GIB, 1000),
    "A100": SimCardSpec("NVIDIA A100-SXM4-80GB", 80 * GIB, 400),
    "A100-80G": SimCardSpec("NVIDIA A100-SXM4-80GB", 80 * GIB, 400),
    "A100-40G": SimCardSpec("NVIDIA A100-SXM4-40GB", 40 * GIB, 400),
    "V100": SimCardSpec("Tesla V100-SXM2-32GB", 32 * GIB, 300),
    "V100-32G": SimCardSpec("Tesla V100-SXM2-32GB", 32 * GIB, 300),
    "V100-16G": SimCardSpec("Tesla V100-SXM2-16GB", 16 * GIB, 300),
    "L40S": SimCardSpec("NVIDIA L40S", 48 * GIB, 350),
    "L4": SimCardSpec("NVIDIA L4", 24 * GIB, 72),
    "A40": SimCardSpec("NVIDIA A40", 48 * GIB, 300),
    "A10": SimCardSpec("NVIDIA A10", 24 * GIB, 150),
    "A6000": SimCardSpec("NVIDIA RTX A6000", 48 * GIB, 300),
    "RTX4090": SimCardSpec("NVIDIA GeForce RTX 4090", 24 * GIB, 450),
    "RTX3090": SimCardSpec("NVIDIA GeForce RTX 3090", 24 * GIB, 350),
    "T4": SimCardSpec("Tesla T4", 16 * GIB, 70),
}

# COUNT x KIND, then optionally /N: the group's cards form islands of N consecutive cards.
_GROUP = re.compile(r"\s*(\d+)\s*[xX]\s*([^\s/]+)\s*(?:/\s*(\S*)\s*)?")
# A size must carry a unit: "2x80" is more likely a typo than two 80-byte cards.
_SIZE = re.compile(r"\d+(\.\d+)?\s*[KMGT](i?B)?", re.IGNORECASE)
_NO_CARDS = {"0", "none"}


def parse_sim_spec(text: str) -> list[SimCardSpec]:
    """'4x80G' or '2xH100,2xA100-40G' or '8xH100/2' -> one spec per card, in order, with its
    island: each comma group is one island of linked cards, or islands of N with '/N'.
    '0' or 'none' -> no cards."""
    if text.strip().lower() in _NO_CARDS:
        return []
    cards: list[SimCardSpec] = []
    next_island = 0
    for group in text.split(","):
        m = _GROUP.fullmatch(group)
        if not m:
            raise ValueError(f"{text!r}: {SPEC_HELP}")
        count, what = int(m.group(1)), m.group(2)
        if count < 1:
            raise ValueError(f"{text!r}: {group.strip()!r} has no cards; {SPEC_HELP}")
        model = _card_for(what, text)
        per_island = count if m.group(3) is None else _island_size(m.group(3), count, what, text)
        cards += [replace(model, island=next_island + i // per_island) for i in range(count)]
        next_island += count // per_island
    if len(cards) > MAX_SIM_CARDS:
        raise ValueError(f"{text!r}: {len(cards)} cards; at most {MAX_SIM_CARDS} can be simulated")
    return cards


def _island_size(size: str, count: int, what: str, text: str) -> int:
    """The N of 'COUNTxKIND/N', which must split the group's cards evenly."""
    if not size.isdecimal() or int(size) < 1:
        raise ValueError(f"{text!r}: after '/' comes the number of linked cards per island, "
                         f"e.g. 8xH100/2 for four linked pairs")
    n = int(size)
    if count % n:
        whole, rest = count - count % n, count % n
        example = f"{whole}x{what}" + (f"/{n}" if whole > n else "") + f",{rest}x{what}"
        if not whole:
            example = f"{count}x{what}"
        raise ValueError(f"{text!r}: {count} cards do not split into islands of {n}; "
                         f"write uneven islands as separate groups, e.g. {example}")
    return n


def _card_for(what: str, text: str) -> SimCardSpec:
    model = MODELS.get(what.upper())
    if model:
        return model
    if _SIZE.fullmatch(what):
        size = _size_or_zero(what)
        if size < 1 << 20:
            raise ValueError(f"{text!r}: {what!r} is too small for a card (at least 1M)")
        return SimCardSpec(f"SimGPU-{format_size(size)}", size)
    known = ", ".join(sorted(MODELS))
    raise ValueError(f"{text!r}: {what!r} is neither a size like 80G nor a known model ({known})")


def _size_or_zero(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError:
        return 0


def sim_uuid(index: int) -> str:
    """A UUID shaped like NVML's, the same for a given index on every run."""
    return f"GPU-5117e000-0000-4000-8000-{index:012x}"


def sim_dir_from_env(env: dict[str, str] | None = None) -> Path:
    """Where burn processes find the simulator: GQ_SIM_DIR, else the sim folder of GQ_HOME."""
    env = os.environ if env is None else env
    if env.get(SIM_DIR_ENV):
        return Path(env[SIM_DIR_ENV])
    from gq.paths import gq_home

    return Path(gq_home(env)) / "sim"


def write_json_atomic(path: Path, data: object) -> None:
    """Readers see the old file or the new one, never half of one. A file that already says
    the same is left alone: a daemon restarted on a full disk writes nothing."""
    text = json.dumps(data, indent=1)
    try:
        if path.read_text() == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --- the cards ------------------------------------------------------------------------------


def write_cards(state_dir: Path, specs: list[SimCardSpec]) -> list[Gpu]:
    cards = [
        Gpu(index=i, uuid=sim_uuid(i), name=s.name, memory_total=s.memory_total,
            visible_id=str(i), simulated=True, island=s.island)
        for i, s in enumerate(specs)
    ]
    (state_dir / PROCS_DIR).mkdir(parents=True, exist_ok=True)
    records = [
        {"index": c.index, "uuid": c.uuid, "name": c.name, "memory_total": c.memory_total,
         "visible_id": c.visible_id, "tdp_w": s.tdp_w, "island": c.island}
        for c, s in zip(cards, specs)
    ]
    write_json_atomic(state_dir / CARDS_FILE, {"cards": records})
    return cards


def load_cards(state_dir: Path) -> list[Gpu]:
    """The identity of the simulated cards. FileNotFoundError when no simulator ran here."""
    records = json.loads((state_dir / CARDS_FILE).read_text())["cards"]
    return [
        Gpu(index=r["index"], uuid=r["uuid"], name=r["name"], memory_total=r["memory_total"],
            visible_id=r["visible_id"], simulated=True, island=r.get("island"))
        for r in records
    ]


# --- the processes using them ---------------------------------------------------------------


@dataclass
class SimProc:
    """What one burn process holds: `mem` bytes and `util` percent on each card in `cards`."""

    pid: int
    create_time: float  # psutil's create_time(): tells a reused pid from the original
    cards: list[str]  # uuids
    mem: int
    util: int
    leak: bool = False
    uid: int | None = None  # whose it is, as a system daemon registered it (None: not asked)

    @classmethod
    def from_json(cls, data: object) -> SimProc:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        cards = data["cards"]
        if not isinstance(cards, list) or not all(isinstance(c, str) for c in cards):
            raise ValueError("cards must be a list of uuids")
        return cls(
            pid=int(data["pid"]), create_time=float(data["create_time"]), cards=cards,
            mem=int(data["mem"]), util=int(data["util"]), leak=bool(data.get("leak", False)),
            uid=None if data.get("uid") is None else int(data["uid"]),
        )


class registration_lock:
    """Serialises check-then-register on the simulated cards (a burn process starting, a
    restore of a frozen one), so that two cannot both take a card's last bytes."""

    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / "burn.lock"

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


@dataclass
class HeldMemory:
    proc: SimProc
    alive: bool  # False only for a leaked file: memory held by a process that is gone


def proc_path(state_dir: Path, pid: int) -> Path:
    return state_dir / PROCS_DIR / f"{pid}.json"


def write_proc(state_dir: Path, proc: SimProc) -> Path:
    path = proc_path(state_dir, proc.pid)
    write_json_atomic(path, asdict(proc))
    return path


def process_create_time(pid: int) -> float | None:
    """When `pid` started, or None if it is gone. A zombie counts as gone: the driver frees a
    process's memory when it exits, not when its parent reaps it."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p.create_time()
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        # Another user's process: it exists, and we cannot tell more.
        return -1.0


def _is_alive(proc: SimProc) -> bool:
    started = process_create_time(proc.pid)
    if started is None:
        return False
    return started < 0 or abs(started - proc.create_time) < 0.01


def held_memory(state_dir: Path) -> list[HeldMemory]:
    """Every process file that still holds memory. Files of dead processes are deleted, unless
    they leak: then the memory stays held by the dead pid, as zombie memory does on real cards."""
    held = []
    for path in sorted((state_dir / PROCS_DIR).glob("[0-9]*.json")):
        try:
            proc = SimProc.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # half-written by hand or by a crashed tool: not ours to judge
        alive = _is_alive(proc)
        if not alive and not proc.leak:
            path.unlink(missing_ok=True)
            continue
        held.append(HeldMemory(proc, alive))
    return held


def memory_held_per_card(held: list[HeldMemory]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for h in held:
        for uuid in h.proc.cards:
            totals[uuid] = totals.get(uuid, 0) + h.proc.mem
    return totals


# --- faults: cards that cannot be read ------------------------------------------------------

# What a simulated card can fail to report, as the driver fails on real ones: "lost" is a card
# that stops answering; "process_memory" leaves each process's memory unknown (as in a container).
FAULTS = ("lost", "memory_used", "utilization", "temperature", "power_w", "processes",
          "process_memory")


def write_faults(state_dir: Path, faults: dict[int, list[str]]) -> None:
    """Make cards (by index) report some measurements as unknown from the next read on;
    {} heals them all."""
    for index, fields in faults.items():
        unknown = set(fields) - set(FAULTS)
        if unknown:
            raise ValueError(f"card {index}: unknown fault {sorted(unknown)}; one of {FAULTS}")
    write_json_atomic(Path(state_dir) / FAULTS_FILE,
                      {str(i): sorted(fields) for i, fields in faults.items()})


def read_faults(state_dir: Path) -> dict[int, set[str]]:
    try:
        data = json.loads((state_dir / FAULTS_FILE).read_text())
        return {int(i): set(fields) for i, fields in data.items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}  # written by hand and broken: no faults rather than no cards


# --- the backend ----------------------------------------------------------------------------


class SimBackend(CardBackend):
    """Cards that exist only as files under `state_dir`, used by real `gq.sim.burn` processes."""

    kind = "sim"

    def __init__(self, cards: list[SimCardSpec], state_dir: Path, register_at: str | None = None):
        """`register_at`: a system daemon's socket, through which its jobs' burns register."""
        self.state_dir = Path(state_dir)
        self._specs = list(cards)
        self._cards = write_cards(self.state_dir, self._specs)
        self.register_at = register_at

    def job_env(self) -> dict[str, str]:
        env = {SIM_DIR_ENV: str(self.state_dir)}
        if self.register_at:
            env[SIM_SOCKET_ENV] = self.register_at
        return env

    def checkpointer(self):
        from gq.gpu.sim_checkpoint import SimCheckpointer

        return SimCheckpointer(self.state_dir)

    def read(self) -> list[Gpu]:
        held = held_memory(self.state_dir)
        faults = read_faults(self.state_dir)
        return [_broken(self._measure(card, spec, held), faults.get(card.index, set()))
                for card, spec in zip(self._cards, self._specs)]

    def _measure(self, card: Gpu, spec: SimCardSpec, held: list[HeldMemory]) -> Gpu:
        on_card = [h for h in held if card.uuid in h.proc.cards]
        # A dead process's leaked memory is held but computes nothing.
        util = min(100, sum(h.proc.util for h in on_card if h.alive))
        return Gpu(
            index=card.index, uuid=card.uuid, name=card.name, memory_total=card.memory_total,
            visible_id=card.visible_id, simulated=True, island=card.island,
            memory_used=sum(h.proc.mem for h in on_card),
            utilization=util,
            temperature=_temperature(util),
            power_w=_power(util, spec.tdp_w),
            processes=[GpuProcess(pid=h.proc.pid, used_memory=h.proc.mem,
                                  utilization=h.proc.util if h.alive else 0) for h in on_card],
        )


def _broken(card: Gpu, faults: set[str]) -> Gpu:
    """The card as a driver with these faults reports it: the faulty fields unknown."""
    if "lost" in faults:
        faults = set(FAULTS)
    for field in ("memory_used", "utilization", "temperature", "power_w", "processes"):
        if field in faults:
            setattr(card, field, None)
    if "process_memory" in faults and card.processes:
        for proc in card.processes:
            proc.used_memory = None
    return card


def _temperature(util: int) -> int:
    return int(30 + 0.5 * util)


def _power(util: int, tdp_w: float) -> float:
    idle = 0.12 * tdp_w  # real cards idle at roughly a tenth of their board power
    return round(idle + (tdp_w - idle) * util / 100, 1)
