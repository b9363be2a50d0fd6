"""The installed `gq top` and `gq demo` in a real terminal (tmux), read from the screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import sys
import time
from pathlib import Path

import pytest

from tests.support.hosts import wait_for
from tests.support.jobs import gated

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")
GQ = str(Path(sys.executable).parent / "gq")  # the console script pip installed


class Terminal:
    """A tmux server of its own running one command in an 100x30 window."""

    def __init__(self, command: list[str], env: dict[str, str], size=(100, 30)):
        self.socket = f"gq-test-{os.getpid()}-{time.monotonic_ns()}"
        self.env = {**env, "TERM": "xterm-256color"}
        self.tmux("new-session", "-d", "-s", "t", "-x", str(size[0]), "-y", str(size[1]),
                  " ".join(command))

    def tmux(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([TMUX, "-L", self.socket, "-f", "/dev/null", *args], env=self.env,
                              capture_output=True, text=True, timeout=20)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t").stdout

    def shows(self, *texts: str) -> str | None:
        screen = self.screen()
        return screen if all(t in screen for t in texts) else None

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def running(self) -> bool:
        return self.tmux("has-session", "-t", "t").returncode == 0

    def close(self) -> None:
        self.tmux("kill-server")


def test_gq_top_shows_the_cards_and_the_queue_and_quits(host):
    gate = host.work / "gate"
    job = host.submit("--mem", "20G", "-n", "shared-job", *gated(gate))
    host.wait_state(job, "running")
    term = Terminal([GQ, "top"], host.env)
    try:
        screen = wait_for(lambda: term.shows("SIM", "shared-job", "Queue: 1 running"),
                          what="gq top's screen")
        user = host.job(job)["user"]
        assert f"{job} {user}" in screen  # its slice of card 0 in the memory map
        assert "Offenders" in screen or "No offenders" in screen
        term.keys("Enter")
        wait_for(lambda: term.shows(f"Job {job} · shared-job", "stdout"), what="the job screen")
        term.keys("Escape")
        wait_for(lambda: term.shows("Queue: 1 running"), what="the main screen again")
        term.keys("q")
        wait_for(lambda: not term.running(), what="gq top to quit")
    finally:
        term.close()
    gate.touch()


def test_gq_demo_opens_gq_top_and_cleans_up_on_ctrl_c():
    # its own TMPDIR: another suite's demo beside this one is not taken for it
    tmp = Path(tempfile.mkdtemp(prefix="gqd-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")} | {"TMPDIR": str(tmp)}
    term = Terminal([GQ, "demo"], env)
    try:
        wait_for(lambda: term.shows("SIM", "train-llm", "notebook", "sweep"), timeout=30,
                 what="the demo in gq top")
        homes = set(tmp.glob("gq-demo-*"))
        assert len(homes) == 1
        home = homes.pop()
        term.keys("C-c")
        wait_for(lambda: not term.running(), timeout=30, what="the demo to end")
    finally:
        term.close()
    assert not home.exists()
    shutil.rmtree(tmp, ignore_errors=True)
    import psutil

    left = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(home) in " ".join(proc.info["cmdline"] or []) or (
                    proc.environ().get("GQ_HOME", "").startswith(str(home))):
                left.append(proc.pid)
        except psutil.Error:
            pass
    assert left == []
