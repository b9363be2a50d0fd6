"""The Lightning version of train_torch.py: a callback saves a checkpoint into
$GQ_CHECKPOINT_DIR when gq's checkpoint signal arrives and stops the fit; the next run resumes
from it with `ckpt_path`.

    gq submit -p low --signal USR1 --grace 60s -- python train_lightning.py --max-steps 20000

Use USR1 (or USR2), not the default TERM: Lightning installs its own SIGTERM handler during a
fit. Outside Slurm it leaves SIGUSR1 alone, and the callback installs its handler once the fit
has begun, after Lightning's. One device, one process: with several, every rank must take part
in save_checkpoint, and the decision to stop must be shared (reduce it across ranks).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

CHECKPOINT_DIR = os.environ.get("GQ_CHECKPOINT_DIR", ".")
LAST = os.path.join(CHECKPOINT_DIR, "last.ckpt")


class StopOnCheckpointSignal(L.Callback):
    """On gq's checkpoint signal: after the current batch, save and stop the fit."""

    def __init__(self, signals=(signal.SIGUSR1, signal.SIGUSR2)) -> None:
        self.signals = signals
        self.received: list[int] = []

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        for sig in self.signals:
            signal.signal(sig, lambda signum, _frame: self.received.append(signum))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.received and not trainer.should_stop:
            trainer.save_checkpoint(LAST + ".tmp")
            os.replace(LAST + ".tmp", LAST)
            print(f"checkpoint at step {trainer.global_step} on "
                  f"{signal.Signals(self.received[0]).name}; exiting", flush=True)
            trainer.should_stop = True  # honoured at once: no min_steps or min_epochs set


class Model(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=20_000)
    args = parser.parse_args()
    data = TensorDataset(torch.randn(50_000, 512), torch.randint(0, 10, (50_000,)))
    stopper = StopOnCheckpointSignal()
    # Also saved every 500 steps, to the same last.ckpt, so that a job killed outright (past
    # its grace) loses at most that much.
    periodic = ModelCheckpoint(dirpath=CHECKPOINT_DIR, every_n_train_steps=500, save_last=True)
    trainer = L.Trainer(max_steps=args.max_steps, callbacks=[stopper, periodic],
                        default_root_dir=CHECKPOINT_DIR, devices=1)
    resume = LAST if os.path.exists(LAST) else None
    print(f"{'resuming from ' + LAST if resume else 'starting'} "
          f"(restart {os.environ.get('GQ_RESTART_COUNT', '0')})", flush=True)
    trainer.fit(Model(), DataLoader(data, batch_size=256, shuffle=True, num_workers=2),
                ckpt_path=resume)
    if stopper.received:
        return 128 + stopper.received[0]  # not done; gq requeues a preempted job
    print(f"done at step {trainer.global_step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
