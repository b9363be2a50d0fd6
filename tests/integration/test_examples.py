"""docs/examples: every trainer compiles and follows the contract of docs/preemption.md; the
pure-Python one (which the preemption tests run under gq) also runs here on its own."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys

import pytest

from tests.support.hosts import wait_for
from tests.support.paths import ROOT

EXAMPLES = ROOT / "docs" / "examples"
TRAINERS = ["train_minimal.py", "train_torch.py", "train_lightning.py"]


@pytest.mark.parametrize("name", TRAINERS)
def test_the_example_compiles_and_follows_the_contract(name):
    source = (EXAMPLES / name).read_text()
    tree = ast.parse(source, filename=name)  # torch and lightning are not installed: no import
    compile(tree, name, "exec")
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "GQ_CHECKPOINT_DIR" in strings  # resumes from gq's per-job directory
    assert {"signal", "SIGUSR1", "replace"} <= attributes  # a handler; atomic saves
    assert "gq submit" in ast.get_docstring(tree)


def test_the_minimal_trainer_saves_on_the_signal_and_resumes(tmp_path):
    env = {**os.environ, "GQ_CHECKPOINT_DIR": str(tmp_path), "GQ_RESTART_COUNT": "0"}
    cmd = [sys.executable, str(EXAMPLES / "train_minimal.py"), "--steps", "300",
           "--step-time", "0.01", "--every", "20"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    wait_for(lambda: (tmp_path / "state.json").exists(), what="the first checkpoint")
    proc.send_signal(signal.SIGUSR1)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGUSR1
    saved = int(out.split("checkpoint at step ")[-1].split()[0])
    env["GQ_RESTART_COUNT"] = "1"
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0
    assert again.stdout.startswith(f"resumed from step {saved} (restart 1)\n")
    assert f"done at step 300, total {sum(range(301))}" in again.stdout
