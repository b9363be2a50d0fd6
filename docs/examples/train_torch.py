"""A plain PyTorch training loop that gq can preempt: it saves on gq's checkpoint signal and
resumes from $GQ_CHECKPOINT_DIR, so a preempted run loses at most one step.

    gq submit -p low --signal USR1 --grace 60s -- python train_torch.py --steps 20000

The contract (docs/preemption.md): on the signal, finish the current step, save everything a
resume needs (model, optimizer, step, random state) atomically, and exit. gq requeues the job
with the same id and the same GQ_CHECKPOINT_DIR; the next run loads the checkpoint and goes on.
Only the main process gets the signal (unless --signal-group), so DataLoader workers never see
it. Saving every --every steps as well bounds the loss if the job is killed outright.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

import torch
from torch import nn

CHECKPOINT = os.path.join(os.environ.get("GQ_CHECKPOINT_DIR", "."), "checkpoint.pt")
received: list[int] = []


def on_signal(signum, _frame) -> None:
    received.append(signum)  # acted on between steps: a half-done step is never saved


def save(model: nn.Module, optimizer: torch.optim.Optimizer, step: int) -> None:
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "cpu_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    torch.save(state, CHECKPOINT + ".tmp")
    os.replace(CHECKPOINT + ".tmp", CHECKPOINT)  # a reader sees the old file or the new one


def resume(model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    if not os.path.exists(CHECKPOINT):
        return 0
    state = torch.load(CHECKPOINT, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])  # copied onto the model's device
    optimizer.load_state_dict(state["optimizer"])  # moved to the parameters' device
    torch.set_rng_state(state["cpu_rng"])
    if state["cuda_rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    return state["step"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=500, help="also save every N steps")
    args = parser.parse_args()
    for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    device = "cuda" if torch.cuda.is_available() else "cpu"  # the cards gq gave the job
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = resume(model, optimizer)
    print(f"{'resumed from' if step else 'starting at'} step {step} "
          f"(restart {os.environ.get('GQ_RESTART_COUNT', '0')})", flush=True)

    while step < args.steps:
        x = torch.randn(256, 512, device=device)
        y = torch.randint(0, 10, (256,), device=device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        if received:
            save(model, optimizer, step)
            print(f"checkpoint at step {step} on {signal.Signals(received[0]).name}; exiting",
                  flush=True)
            return 128 + received[0]  # not done; a preempted job is requeued whatever the code
        if step % args.every == 0:
            save(model, optimizer, step)
            print(f"step {step}: loss {loss.item():.4f}, saved", flush=True)
    save(model, optimizer, step)
    print(f"done at step {step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
