"""`gq demo --no-tui`: the scenario runs headless, says what happened, and leaves nothing behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.hosts import kill_processes_mentioning


def test_the_demo_shows_sharing_preemption_an_idle_notebook_and_a_stray_then_cleans_up():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
    proc = subprocess.run([sys.executable, "-m", "gq", "demo", "--no-tui", "--seconds", "13"],
                          env=env, capture_output=True, text=True, timeout=90)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    home = Path(re.search(r"GQ_HOME (\S+)/home", out)[1])
    assert "job 1 train-llm: running on GPU 0,1 (whole cards, normal tier)" in out
    assert re.search(r"job \d+_\d sweep: running on GPU (\d) \(12G per card", out)
    assert re.search(r"job 2 pretrain-small: pending, \w+ \(back in the queue after "
                     r"(running|preempting)\): "
                     r"preempted for job 10 \(high\)", out)
    assert re.search(r"job 10 urgent-eval: running on GPU \d \(whole cards, high tier\)", out)
    assert re.search(r"offender \(stray\): pid \d+ \(user \w+: .* holds 6G on GPU \d outside gq",
                     out)  # the pid once
    assert "preempting (preempted for job 10 (high)): preempted" not in out  # said once
    # Sweep elements are named as gq ls names them, never by their internal ids.
    assert re.search(r"job 4_\d sweep: running", out) and not re.search(r"job [5-9] sweep", out)
    assert re.search(r"offender \(idle\): job 3: mean utilisation 0%", out)
    assert "the cards (gq gpus)" in out and "The queue (gq ls)" in out
    assert out.rstrip().endswith("removed)")
    # What it prints runs as written after the README install (tests/integration/test_burn.py runs it).
    assert "-- gq burn --mem 70G --util 95" in out and "python -m" not in out
    assert not home.exists()


def _processes_of(home: str) -> list[int]:
    """The demo's daemon, spawners, shims and burn processes: all run with its GQ_HOME."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("GQ_HOME", "").startswith(home):
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGHUP, 129),
                                      (signal.SIGTERM, 143)])
def test_a_stopped_demo_cleans_up_and_exits_as_a_shell_reports_it(sig, code):
    # Without PYTHONUNBUFFERED, as from a newcomer's shell: the demo's lines must reach a pipe
    # as they happen (they came only at exit, and the Ctrl-C sent after the first one landed
    # in the interpreter's exit: death by SIGINT, -2).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GQ_") and k != "PYTHONUNBUFFERED"}
    # As from a terminal: a suite started in the background (`pytest &`, nohup) ignores
    # SIGINT, and an ignored SIGINT is inherited through exec; Python then leaves Ctrl-C
    # ignored, as any program run in the background should.
    demo = [sys.executable, "-m", "gq", "demo", "--no-tui", "--seconds", "60"]
    restore = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
               "os.execv(sys.argv[1], sys.argv[1:])")
    proc = subprocess.Popen([sys.executable, "-c", restore, *demo], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    home = None
    try:
        for line in proc.stdout:
            home = home or next((w for w in line.split() if "/gq-demo-" in w), None)
            if "started a stray process" in line:  # the daemon, jobs and the stray all run
                break
        assert home is not None and _processes_of(home)
        proc.send_signal(sig)  # Ctrl-C, a closed terminal (tmux kill-pane), kill
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # it did not clean up: its daemon and jobs must not outlive it
            proc.kill()
            if home is not None:
                kill_processes_mentioning(home)
    assert proc.returncode == code, err
    assert out.rstrip().endswith("removed)")
    assert _processes_of(home) == []
    assert not Path(home).exists()
