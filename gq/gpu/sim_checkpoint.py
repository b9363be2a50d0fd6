"""Checkpointing on simulated cards: a burn process's card memory moves to "host memory" and back.

The state of each process being frozen is a file, `frozen/PID.json` in the simulator's
directory (GQ_SIM_DIR, else $GQ_HOME/sim): `locked` (it still holds its cards), `checkpointed`
(its file in procs/ is gone, so its cards show that memory free, and the host's free memory
shows it taken) or `failed`. A process without such a file is `running`. A restore writes its
procs/ file back, on the new cards when given pairs of uuids, under the lock burn processes take
to register, so that a restore and a burn cannot both take a card's last bytes.

Tests and demos steer it with a control file, `checkpoint.json` in the same directory, read at
every step (write_control writes it; {} heals everything):

    {"fail":  {"lock": "timeout" | MESSAGE, "checkpoint": MESSAGE, "restore": MESSAGE,
               "unlock": MESSAGE},     # that step fails (a restore leaves the process failed)
     "delay": {"lock": S, "checkpoint": S, "restore": S, "unlock": S},   # each step takes S s
     "host_ram": BYTES,                # the host memory frozen state may fill (default: the
                                       # machine's available memory)
     "unsupported": MESSAGE,           # the probe says nothing can be frozen, and why
     "cards": {"INDEX": MESSAGE},      # ... or that card's processes cannot be
     "remap": false}                   # restores may not move to another card of the model

A lock that times out waits its timeout first (or its delay, if shorter), as the driver does.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from gq.gpu.checkpoint import (
    CHECKPOINTED, FAILED, LOCKED, RUNNING, STEPS, CheckpointError, Checkpointer, Support,
)
from gq.gpu.sim import (
    SimProc, load_cards, proc_path, process_create_time, registration_lock, write_json_atomic,
)
from gq.model import Gpu

FROZEN_DIR = "frozen"
CONTROL_FILE = "checkpoint.json"


def write_control(state_dir: Path | str, control: dict) -> None:
    """Steer the simulated checkpointer (see the module docstring)."""
    fail = control.get("fail", {})
    unknown = set(fail) - set(STEPS) | set(control.get("delay", {})) - set(STEPS)
    if unknown:
        raise ValueError(f"unknown step {sorted(unknown)}; one of {STEPS}")
    write_json_atomic(Path(state_dir) / CONTROL_FILE, control)


def read_control(state_dir: Path) -> dict:
    try:
        data = json.loads((state_dir / CONTROL_FILE).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


class SimCheckpointer(Checkpointer):
    kind = "sim"

    def __init__(self, state_dir: Path | str):
        self.state_dir = Path(state_dir)

    def spec(self) -> dict:
        return {"kind": self.kind, "dir": str(self.state_dir)}

    def support(self, cards: list[Gpu]) -> Support:
        control = read_control(self.state_dir)
        problems = {str(k): v for k, v in (control.get("cards") or {}).items()}
        return Support(driver="simulated", why=control.get("unsupported"),
                       remap=bool(control.get("remap", True)),
                       cards={c.index: problems.get(str(c.index)) for c in cards})

    def host_memory_free(self) -> int | None:
        control = read_control(self.state_dir)
        base = control.get("host_ram")
        if base is None:
            base = super().host_memory_free()
            if base is None:
                return None
        return max(0, int(base) - self.frozen_bytes())

    def free_memory(self, uuid: str) -> int | None:
        from gq.gpu.sim import held_memory, memory_held_per_card

        cards = {c.uuid: c for c in load_cards(self.state_dir)}
        if uuid not in cards:
            return None
        return cards[uuid].memory_total - memory_held_per_card(
            held_memory(self.state_dir)).get(uuid, 0)

    def frozen_bytes(self) -> int:
        """Host memory the checkpointed processes hold."""
        return sum(_size(r["proc"]) for r in self._records() if r["state"] == CHECKPOINTED)

    # ---- the steps ------------------------------------------------------------------------

    def state(self, pid: int) -> str:
        record = self._record(pid)
        if record is not None:
            return record["state"]
        if process_create_time(pid) is None:
            raise CheckpointError("state", f"no process {pid}")
        return RUNNING

    def lock(self, pid: int, timeout: float) -> None:
        failure = self._step("lock", limit=timeout)
        self._expect(pid, RUNNING, "lock")
        proc = self._proc(pid)
        if proc is None:
            raise CheckpointError("lock", f"process {pid} holds no memory on a simulated card: "
                                  "it is not a CUDA process")
        if failure == "timeout":
            raise CheckpointError("lock", f"timed out after {timeout:g}s", timed_out=True)
        if failure:
            raise CheckpointError("lock", failure)
        self._write(pid, LOCKED, proc)

    def checkpoint(self, pid: int) -> None:
        failure = self._step("checkpoint")
        record = self._expect(pid, LOCKED, "checkpoint")
        if failure:
            raise CheckpointError("checkpoint", failure)
        self._write(pid, CHECKPOINTED, record["proc"])
        proc_path(self.state_dir, pid).unlink(missing_ok=True)  # the card's memory is free

    def restore(self, pid: int, remap: dict[str, str]) -> None:
        failure = self._step("restore")
        record = self._expect(pid, CHECKPOINTED, "restore")
        proc = SimProc.from_json(record["proc"])
        if failure:
            self._write(pid, FAILED, record["proc"])
            raise CheckpointError("restore", failure)
        missing = [u for u in proc.cards if remap and u not in remap]
        if missing:
            raise CheckpointError("restore", f"no new card given for {', '.join(missing)}")
        proc.cards = [remap.get(u, u) for u in proc.cards]
        with registration_lock(self.state_dir):
            short = self._short_of(proc)
            if short:
                raise CheckpointError("restore", short)
            self._write(pid, LOCKED, asdict(proc))
            write_json_atomic(proc_path(self.state_dir, pid), asdict(proc))

    def unlock(self, pid: int) -> None:
        failure = self._step("unlock")
        self._expect(pid, LOCKED, "unlock")
        if failure:
            raise CheckpointError("unlock", failure)
        self._path(pid).unlink(missing_ok=True)

    # ---- internals ------------------------------------------------------------------------

    def _step(self, step: str, limit: float | None = None) -> str | None:
        """Wait the step's delay (a lock that times out: its timeout); its failure, if any."""
        control = read_control(self.state_dir)
        failure = (control.get("fail") or {}).get(step)
        delay = float((control.get("delay") or {}).get(step, 0.0))
        if failure == "timeout" and limit is not None:
            delay = min(delay, limit) if delay else limit
        if delay > 0:
            time.sleep(delay)
        return failure

    def _expect(self, pid: int, state: str, step: str) -> dict | None:
        now = self.state(pid)
        if now != state:
            raise CheckpointError(step, f"process {pid} is {now}, not {state}")
        return self._record(pid)

    def _short_of(self, proc: SimProc) -> str | None:
        for uuid in proc.cards:
            free = self.free_memory(uuid)
            if free is None:
                return f"no simulated card {uuid}"
            if proc.mem > free:
                return (f"CUDA_ERROR_OUT_OF_MEMORY: {uuid} has {free} bytes free, "
                        f"{proc.mem} needed")
        return None

    def _proc(self, pid: int) -> dict | None:
        try:
            data = json.loads(proc_path(self.state_dir, pid).read_text())
            return asdict(SimProc.from_json(data))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _path(self, pid: int) -> Path:
        return self.state_dir / FROZEN_DIR / f"{pid}.json"

    def _write(self, pid: int, state: str, proc: dict) -> None:
        (self.state_dir / FROZEN_DIR).mkdir(exist_ok=True)
        write_json_atomic(self._path(pid), {"pid": pid, "state": state, "proc": proc})

    def _record(self, pid: int) -> dict | None:
        for record in self._records(pid):
            return record
        return None

    def _records(self, pid: int | None = None) -> list[dict]:
        """The records of live processes; those of processes that are gone are dropped (the
        driver frees a dead process's state with it)."""
        folder = self.state_dir / FROZEN_DIR
        paths = [folder / f"{pid}.json"] if pid is not None else sorted(folder.glob("*.json"))
        out = []
        for path in paths:
            try:
                record = json.loads(path.read_text())
                proc = SimProc.from_json(record["proc"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            started = process_create_time(proc.pid)
            if started is None or (started >= 0 and abs(started - proc.create_time) > 0.01):
                path.unlink(missing_ok=True)
                continue
            out.append(record)
        return out


def _size(proc: dict) -> int:
    """Host memory a checkpointed process's state takes: its memory on each of its cards."""
    return int(proc.get("mem", 0)) * max(1, len(proc.get("cards") or ()))


def frozen_pids(state_dir: Path | str) -> dict[int, str]:
    """Every process the simulator has locked, checkpointed or failed, with its state."""
    return {r["pid"]: r["state"] for r in SimCheckpointer(state_dir)._records()}

