"""A real Prometheus on 127.0.0.1 (Debian's `prometheus` package), scraping given targets twice
a second into a temporary directory, and `promtool`; tests that use them skip, saying why, when
they are absent."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.support.hosts import wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
MISSING = ("needs Prometheus and promtool (Debian: apt-get install prometheus; .ci/run "
           "installs it)")


def require_prometheus() -> None:
    for tool in (PROMETHEUS, PROMTOOL):
        if not Path(tool).is_file():
            pytest.skip(f"{MISSING}: no {tool}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


class Prometheus:
    """`prometheus` scraping `targets` (host:port) every 500 ms, until closed."""

    def __init__(self, root: Path, targets: list[str]):
        self.port = free_port()
        root.mkdir(parents=True, exist_ok=True)
        config = root / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 500ms\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: gq\n    static_configs:\n"
            f"      - targets: {json.dumps(targets)}\n")
        self.log = root / "prometheus.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={root / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=out, stderr=out, start_new_session=True)
        wait_for(self._ready, timeout=30, what="Prometheus to be ready")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log.read_text()}")
        try:
            return "Ready" in fetch(f"http://127.0.0.1:{self.port}/-/ready", timeout=1)
        except OSError:
            return False

    def query(self, promql: str) -> list[dict]:
        """The instant vector `promql` evaluates to now: [{"metric": {...}, "value": [t, v]}]."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": promql}))
        answer = json.loads(fetch(url))
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def value(self, promql: str) -> float | None:
        """The one value of `promql` now; None while it has none."""
        found = self.query(promql)
        assert len(found) <= 1, found
        return float(found[0]["value"][1]) if found else None

    def wait_value(self, promql: str, check, what: str, timeout: float = 20.0) -> float:
        """Wait until the value of `promql` passes `check`; return it."""
        seen: list[float | None] = []

        def passes():
            seen[:] = [self.value(promql)]
            return seen[0] is not None and check(seen[0])

        try:
            wait_for(passes, timeout=timeout, interval=0.2, what=what)
        except AssertionError as e:
            raise AssertionError(f"{e}: {promql} is {seen}") from None
        return seen[0]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
