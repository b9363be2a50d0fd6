"""Small rough edges a newcomer met in their first hour: `gq --version`, default job names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gq import __version__
from gq.daemon.submission import default_name


def test_version():
    out = subprocess.run([sys.executable, "-m", "gq", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, f"gq {__version__}\n")


@pytest.mark.parametrize("command,name", [
    (["python", "train.py", "--lr", "1e-3"], "train.py"),
    (["/usr/bin/python3.11", "-u", "-W", "ignore", "src/eval.py"], "eval.py"),
    (["python", "-m", "pkg.train"], "pkg.train"),
    (["torchrun", "--nproc_per_node", "4", "train.py"], "train.py"),
    (["bash", "run.sh"], "run.sh"),
    (["sh", "-c", "echo hi"], "sh"),
    (["./train.sh"], "train.sh"),
    (["sleep", "600"], "sleep"),
    (["/home/ann/.local/bin/gq", "burn", "--mem", "10G"], "burn"),
    (["python"], "python"),
])
def test_the_default_name_is_the_script_as_slurm_names_it(command, name):
    assert default_name(command) == name


def test_a_submitted_python_job_is_named_for_its_script(host):
    job = host.submit("--", "python3", "-c", "pass")
    assert host.job(job)["name"] == "python3"
    script = host.work / "train.py"
    script.write_text("print('training')\n")
    job = host.submit("--gpus", "0", "--", sys.executable, str(script))
    assert host.job(job)["name"] == "train.py"
