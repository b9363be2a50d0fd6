"""The distribution as a package index gives it: the wheel built from the sources, installed as
`uv tool install gq-gpu` installs it (an environment of its own, no checkout beside it), runs
`gq` with everything it ships.

uv rather than pip: the same wheel, the same environment, a tenth of the time (pip took 30 s
of a loaded machine's wall clock and 10 CPU-seconds to install the dependencies; install.sh's
test installs gq with pip already, from a copy of the sources)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gq import __version__
from tests.support.install import run_checked, user_env
from tests.support.paths import ROOT

DISTRIBUTION = "gq-gpu"  # pyproject.toml's name: "gq" on PyPI is another project


def test_the_wheel_installs_the_gq_command_and_its_files_in_a_tool_environment(tmp_path):
    uv = pytest.importorskip("uv", reason="needs uv, of the test extra").find_uv_bin()
    # From a copy of what the sdist holds: the build leaves no build/ or egg-info in the checkout.
    src = tmp_path / "src"
    shutil.copytree(ROOT / "gq", src / "gq", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home, PATH="/usr/local/bin:/usr/bin:/bin", UV_TOOL_DIR=str(tmp_path / "tools"),
                   UV_TOOL_BIN_DIR=str(tmp_path / "bin"), UV_PYTHON_DOWNLOADS="never")
    run_checked([uv, "build", "--wheel", "--python", sys.executable, "--out-dir",
                 str(tmp_path / "dist"), str(src)], env, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("gq_gpu-*.whl")
    run_checked([uv, "tool", "install", "--python", sys.executable, str(wheel)], env,
                cwd=tmp_path)
    gq = str(tmp_path / "bin" / "gq")

    assert run_checked([gq, "--version"], env, cwd=home).stdout == f"gq {__version__}\n"
    python = str(tmp_path / "tools" / DISTRIBUTION / "bin" / "python")
    found = run_checked([python, "-c", (
        "import gq, json, importlib.metadata as m; d = m.distribution('gq-gpu'); "
        "print(json.dumps([gq.__file__, [e.name for e in d.entry_points], d.metadata['Name']]))"
    )], env, cwd=home)
    where, scripts, name = json.loads(found.stdout)
    assert where.startswith(str(tmp_path / "tools")) and scripts == ["gq"]
    assert name == DISTRIBUTION
    shims = Path(where).parent / "sbatch" / "bin"  # a #SBATCH job's srun and scontrol
    assert all((shims / tool).stat().st_mode & 0o111 for tool in ("srun", "scontrol"))
    for shell in ("bash", "zsh", "fish"):
        script = run_checked([gq, "completion", "script", shell], env, cwd=home).stdout
        assert script == (ROOT / "completions" / f"gq.{shell}").read_text()

    # A job on a simulated card, through a daemon the installed gq starts itself.
    gq_home = Path(tempfile.mkdtemp(prefix="gq-", dir="/tmp"))  # short: the socket's path
    job_env = {**env, "GQ_HOME": str(gq_home / "home"), "GQ_SIM_GPUS": "1x80G"}
    try:
        assert run_checked([gq, "submit", "--", "true"], job_env, cwd=home).stdout == "1\n"
        waited = run_checked([gq, "wait", "@"], job_env, cwd=home, timeout=60)
        assert waited.stdout == "job 1: completed (exit 0)\n"
    finally:
        subprocess.run([gq, "daemon", "stop"], env=job_env, capture_output=True, timeout=60)
        shutil.rmtree(gq_home, ignore_errors=True)
