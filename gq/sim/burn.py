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

from gq.gpu.sim_claims import choose_cards, gib, out_of_memory

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
        if os.environ.get(sim.SIM_SOCKET_ENV):  # a system daemon's cards: it registers us
            registered = _register(os.environ[sim.SIM_SOCKET_ENV], args)
        else:
            registered = _register_here(state_dir, args)
    except BurnError as e:
        print(f"gq: burn: {e}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(registered, str):
        print(registered, file=sys.stderr)
        return EXIT_OOM
    path, cards, create_time = registered
    return _hold(path, state_dir, cards, args, create_time)


def _register_here(state_dir: Path, args: argparse.Namespace):
    """Check the room and write our record in the simulator's directory (ours to write): the
    record's path, the cards and our create time, or the out-of-memory message."""
    from gq.gpu import sim

    cards = _visible_cards(state_dir, os.environ.get("CUDA_VISIBLE_DEVICES"))
    with sim.registration_lock(state_dir):
        oom = out_of_memory(state_dir, cards, args.mem)
        if oom:
            return oom
        proc = sim.SimProc(
            pid=os.getpid(), create_time=_own_create_time(), cards=[c.uuid for c in cards],
            mem=args.mem, util=args.util, leak=args.leak,
        )
        return sim.write_proc(state_dir, proc), cards, proc.create_time


def _register(socket_path: str, args: argparse.Namespace):
    """Ask the system daemon, whose files these are, to register us: it takes our pid from
    the socket's peer credentials, checks the room and writes the record. Our record is then
    its to remove (once we are gone): None for the path."""
    from gq.protocol import Connection, GqError

    try:
        with Connection(socket_path, timeout=30) as conn:
            reply = conn.call("sim_register", visible=os.environ.get("CUDA_VISIBLE_DEVICES"),
                              mem=args.mem, util=args.util, leak=args.leak)
    except GqError as e:
        raise BurnError(e.message) from None
    except OSError as e:
        raise BurnError(f"cannot reach the daemon at {socket_path}: {e.strerror or e}") from None
    if reply.get("oom"):
        return reply["oom"]
    cards = [argparse.Namespace(index=c["index"], uuid=c["uuid"]) for c in reply["cards"]]
    return None, cards, float(reply["create_time"])


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
    try:
        return choose_cards(cards, visible)
    except ValueError as e:
        raise BurnError(str(e)) from None


def _own_create_time() -> float:
    import psutil

    return psutil.Process().create_time()


def _hold(path: Path | None, state_dir: Path, cards, args: argparse.Namespace,
          create_time: float) -> int:
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    where = ", ".join(f"GPU {c.index} ({c.uuid})" for c in cards)
    print(f"burn {os.getpid()}: holding {gib(args.mem)} at {args.util}% on {where}"
          + (" (leaks on exit)" if args.leak else ""), flush=True)
    try:
        if args.steps is None:
            _sleep(args.seconds)
        else:
            _train(args.steps, args.step_time, state_dir / "frozen" / f"{os.getpid()}.json",
                   create_time)
    finally:
        if not args.leak and path is not None:
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
