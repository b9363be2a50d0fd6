"""A training loop that gq can preempt without losing more than a few steps: pure Python.

It counts steps (the "training"), saves its state into $GQ_CHECKPOINT_DIR every --every steps
and whenever gq's checkpoint signal arrives, and on start resumes from the last state saved
there. On the signal it saves and exits; gq requeues a preempted job with the same id, and the
next run carries on from the saved step.

    gq submit -p low --signal USR1 --grace 30s -- python train_minimal.py --steps 100000

The same contract, for PyTorch and Lightning, is in train_torch.py and train_lightning.py, and
written down in docs/preemption.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

# Whatever --signal the job was submitted with; SIGTERM is gq's default.
CHECKPOINT_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGINT)
received: list[int] = []


def on_signal(signum, _frame) -> None:
    received.append(signum)  # acted on between two steps, never in the middle of one


def checkpoint_path() -> str:
    return os.path.join(os.environ.get("GQ_CHECKPOINT_DIR", "."), "state.json")


def load() -> dict:
    try:
        with open(checkpoint_path()) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"step": 0, "total": 0}


def save(state: dict) -> None:
    """Write the whole state or nothing: to a new file, on disk, then renamed over the old."""
    path = checkpoint_path()
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="steps in all")
    parser.add_argument("--step-time", type=float, default=0.01, help="seconds a step takes")
    parser.add_argument("--every", type=int, default=100, help="save every this many steps")
    args = parser.parse_args()
    for sig in CHECKPOINT_SIGNALS:
        signal.signal(sig, on_signal)

    state = load()
    restart = os.environ.get("GQ_RESTART_COUNT", "0")
    verb = "resumed from" if state["step"] else "starting at"
    print(f"{verb} step {state['step']} (restart {restart})", flush=True)
    while state["step"] < args.steps:
        time.sleep(args.step_time)  # the work of one step
        state["step"] += 1
        state["total"] += state["step"]
        if received:
            save(state)
            name = signal.Signals(received[0]).name
            print(f"checkpoint at step {state['step']} on {name}; exiting", flush=True)
            # As if the signal had ended it: not done, so not exit code 0. When preempted, gq
            # requeues the job whatever the code.
            return 128 + received[0]
        if state["step"] % args.every == 0:
            save(state)
            print(f"checkpoint at step {state['step']}", flush=True)
    save(state)
    print(f"done at step {state['step']}, total {state['total']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
