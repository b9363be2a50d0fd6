"""`gq burn`, the load generator the demo prints and docs/gpus.md shows, runs as written after
the README install: from any directory, with only `gq` on PATH (no gq importable by `python`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

GQ_SCRIPT = Path(sys.executable).with_name("gq")


@pytest.mark.skipif(not GQ_SCRIPT.exists(), reason="gq is not installed beside this Python")
def test_gq_burn_runs_from_any_directory_with_only_gq_on_path(host, tmp_path):
    bin_dir = tmp_path / "bin"  # what install.sh makes: ~/.local/bin/gq, a link into its venv
    bin_dir.mkdir()
    (bin_dir / "gq").symlink_to(GQ_SCRIPT)
    env = {k: v for k, v in host.env.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    submitted = subprocess.run(
        ["gq", "submit", "--mem", "4G", "--", "gq", "burn", "--mem", "3G", "--seconds", "0.2"],
        env=env, cwd=elsewhere, capture_output=True, text=True, timeout=60)
    assert submitted.returncode == 0, submitted.stderr
    job = int(submitted.stdout)
    ended = host.wait_ended(job, timeout=60)
    assert ended["state"] == "completed", host.log(job, err=True)
    assert re.match(r"burn \d+: holding 3\.00 GiB at 100% on GPU 0 ", host.log(job))


def test_gq_burn_refuses_a_bad_size_in_one_line(shared_host):
    out = shared_host.gq("burn", "--mem", "3XB", check=False)
    assert out.returncode == 2
    assert out.stderr.startswith("gq: --mem ") and len(out.stderr.splitlines()) == 1
