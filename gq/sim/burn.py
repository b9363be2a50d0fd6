"""A stand-in for a training job: holds memory and utilisation on the simulated cards it can see.

    gq burn --mem 10G --util 80 --seconds 5 [--leak]    (also: python -m gq.sim.burn ...)
    gq burn --mem 10G --steps 200 --step-time 0.05       (a "training" run of 200 steps)

It registers itself in the simulator's state directory (GQ_SIM_DIR, else $GQ_HOME/sim) on every
card in CUDA_VISIBLE_DEVICES, and fails the way PyTorch does when a card has too little room.
With --steps it prints `step N loss X` after each step, X a deterministic function of N (a
pseudo-random walk from a fixed seed), and exits 0 after the last: a run frozen and thawed
prints the same lines as one left alone, once each, and a restarted one starts again at 1.
While the simulated driver holds it locked or checkpointed (gq/gpu/sim_checkpoint.py), it takes
no step, as a real job stalls at its next CUDA call once cuda-checkpoint has locked it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

# Exit codes: 1 as a Python job that dies of an exception, 2 as a bad command line.
EXIT_OOM = 1
EXIT_USAGE = 2


class BurnError(Exception):
    """A setup problem: one line on stderr, exit 2."""


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    return run(args.mem, args.util, args.seconds, args.leak, args.steps, args.step_time)


def run(mem: int, util: int = 100, seconds: float | None = None, leak: bool = False,
        steps: int | None = None, step_time: float = 0.05) -> int:
    """Hold `mem` bytes and `util`% on each visible card for `seconds` (None: until stopped),
    or for `steps` steps of `step_time` seconds."""
    from gq.gpu import sim

    args = argparse.Namespace(mem=mem, util=util, seconds=seconds, leak=leak, steps=steps,
                              step_time=step_time)

    try:
        state_dir = sim.sim_dir_from_env()
        cards = _visible_cards(state_dir, os.environ.get("CUDA_VISIBLE_DEVICES"))
    except BurnError as e:
        print(f"gq: burn: {e}", file=sys.stderr)
        return EXIT_USAGE
    with sim.registration_lock(state_dir):
        oom = _out_of_memory(state_dir, cards, args.mem)
        if oom:
            print(oom, file=sys.stderr)
            return EXIT_OOM
        proc = sim.SimProc(
            pid=os.getpid(), create_time=_own_create_time(), cards=[c.uuid for c in cards],
            mem=args.mem, util=args.util, leak=args.leak,
        )
        path = sim.write_proc(state_dir, proc)
    return _hold(path, cards, args, proc.create_time)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    from gq.units import parse_size

    def size(text: str) -> int:
        try:
            return parse_size(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    def percent(text: str) -> int:
        if not text.isdigit() or int(text) > 100:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a percentage from 0 to 100")
        return int(text)

    p = argparse.ArgumentParser(prog="python -m gq.sim.burn", description=__doc__.split("\n")[0])
    p.add_argument("--mem", type=size, default=parse_size("1G"), help="memory per card (1G)")
    p.add_argument("--util", type=percent, default=100, help="utilisation percent (100)")
    p.add_argument("--seconds", type=float, default=None, help="how long to run (forever)")
    p.add_argument("--steps", type=int, default=None,
                   help="run this many steps, printing each one's loss, then exit 0")
    p.add_argument("--step-time", type=float, default=0.05, help="seconds per step (0.05)")
    p.add_argument("--leak", action="store_true",
                   help="leave the memory held after exit, as zombie memory")
    return p.parse_args(argv)


def _visible_cards(state_dir: Path, visible: str | None):
    from gq.gpu.sim import load_cards

    try:
        cards = load_cards(state_dir)
    except FileNotFoundError:
        raise BurnError(f"no simulated cards in {state_dir} (is GQ_SIM_GPUS set for the daemon?)")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BurnError(f"cannot read the simulated cards in {state_dir}: {e}")
    if visible is None:
        raise BurnError("CUDA_VISIBLE_DEVICES is not set; set it to the cards to use, e.g. 0")
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if not entries:
        raise BurnError("no CUDA-capable device is visible (CUDA_VISIBLE_DEVICES is empty)")
    by_id = {c.visible_id: c for c in cards} | {c.uuid.lower(): c for c in cards}
    chosen = []
    for entry in entries:
        card = by_id.get(entry.lower())
        if card is None:
            known = ", ".join(c.visible_id for c in cards) or "none"
            raise BurnError(f"CUDA_VISIBLE_DEVICES entry {entry!r} is not a simulated card "
                            f"(cards: {known}, or their GPU-... uuids)")
        if card not in chosen:
            chosen.append(card)
    return chosen


def _out_of_memory(state_dir: Path, cards, mem: int) -> str | None:
    """PyTorch's message for the first card without `mem` free, or None when all have room."""
    from gq.gpu.sim import held_memory, memory_held_per_card

    held = memory_held_per_card(held_memory(state_dir))
    for ordinal, card in enumerate(cards):
        free = max(0, card.memory_total - held.get(card.uuid, 0))
        if mem > free:
            # The ordinal is the device number inside this process, as torch numbers them.
            return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                    f"{_gib(mem)}. GPU {ordinal} has a total capacity of "
                    f"{_gib(card.memory_total)} of which {_gib(free)} is free.")
    return None


def _gib(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.2f} MiB"


def _own_create_time() -> float:
    import psutil

    return psutil.Process().create_time()


def _hold(path: Path, cards, args: argparse.Namespace, create_time: float) -> int:
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    where = ", ".join(f"GPU {c.index} ({c.uuid})" for c in cards)
    print(f"burn {os.getpid()}: holding {_gib(args.mem)} at {args.util}% on {where}"
          + (" (leaks on exit)" if args.leak else ""), flush=True)
    try:
        if args.steps is None:
            _sleep(args.seconds)
        else:
            _train(args.steps, args.step_time, path.parent.parent / "frozen" / path.name,
                   create_time)
    finally:
        if not args.leak:
            path.unlink(missing_ok=True)
    return 0


def loss_at(step: int) -> float:
    """The loss a --steps run prints at `step`: a pseudo-random walk down from 2.0."""
    value, state = 2.0, 12345
    for _ in range(step):
        state = (state * 1103515245 + 12345) % 2**31
        value = value * 0.995 + (state / 2**31 - 0.5) * 0.01
    return value


def _train(steps: int, step_time: float, frozen: Path, create_time: float) -> None:
    """`frozen`: where the simulated driver records this process (of `create_time`) locked or
    checkpointed."""
    value, state = 2.0, 12345
    for step in range(1, steps + 1):
        time.sleep(step_time)
        while _held(frozen, create_time):
            time.sleep(0.01)
        state = (state * 1103515245 + 12345) % 2**31
        value = value * 0.995 + (state / 2**31 - 0.5) * 0.01
        print(f"step {step} loss {value:.9f}", flush=True)


def _held(frozen: Path, create_time: float) -> bool:
    """Whether the simulated driver holds this process (locked or checkpointed); a restore
    that failed leaves it failed, and it goes on, as nothing stops a real one's CPU work. A
    record of an earlier process of the same pid is not this one's."""
    import json

    from gq.gpu.checkpoint import CHECKPOINTED, LOCKED

    try:
        record = json.loads(frozen.read_text())
        return (record["state"] in (LOCKED, CHECKPOINTED)
                and abs(record["proc"]["create_time"] - create_time) <= 0.01)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _sleep(seconds: float | None) -> None:
    deadline = None if seconds is None else time.monotonic() + seconds
    while deadline is None or time.monotonic() < deadline:
        remaining = 3600.0 if deadline is None else deadline - time.monotonic()
        time.sleep(max(0.0, min(remaining, 3600.0)))


if __name__ == "__main__":
    sys.exit(main())
