"""`gq demo --no-tui`: the scenario runs headless, says what happened, and leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def test_the_demo_shows_sharing_preemption_an_idle_notebook_and_a_stray_then_cleans_up():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
    proc = subprocess.run([sys.executable, "-m", "gq", "demo", "--no-tui", "--seconds", "13"],
                          env=env, capture_output=True, text=True, timeout=90)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    home = Path(re.search(r"GQ_HOME (\S+)/home", out)[1])
    assert "job 1 train-llm: running on GPU 0,1 (whole cards, normal tier)" in out
    assert re.search(r"job \d+ sweep: running on GPU (\d) \(12G per card", out)
    assert re.search(r"job 2 pretrain-small: pending, \w+ \(back in the queue after running\): "
                     r"preempted for job 10 \(high\)", out)
    assert re.search(r"job 10 urgent-eval: running on GPU \d \(whole cards, high tier\)", out)
    assert re.search(r"offender \(stray\): pid \d+: .* holds 6G on GPU \d outside gq", out)
    assert re.search(r"offender \(idle\): job 3: mean utilisation 0%", out)
    assert "the cards (gq gpus)" in out and "The queue (gq ls)" in out
    assert out.rstrip().endswith("removed)")
    # What it prints runs as written after the README install (tests/test_burn.py runs it).
    assert "-- gq burn --mem 70G --util 95" in out and "python -m" not in out
    assert not home.exists()
