"""`gq triage FILE`: the daemon's classifier on any log, offline, with --json and --exit-code."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.cli import gq as run_gq
from tests.support.paths import FAILURES as CORPUS


def gq(*args: str, home: Path) -> subprocess.CompletedProcess:
    return run_gq(*args, env={**os.environ, "GQ_HOME": str(home)})


def test_triage_json_names_the_class_the_evidence_and_what_to_do(tmp_path):
    done = gq("triage", str(CORPUS / "gpu_oom-funasr-2006.log"), "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert set(got) == {"failure", "evidence", "suggestion"}
    assert got["failure"] == "gpu_oom" and "OutOfMemoryError" in got["evidence"][0]
    assert "--retry-oom" in got["suggestion"]
    assert not (tmp_path / "gq.sock").exists()  # offline: no daemon was started


def test_triage_for_people_and_the_exit_code(tmp_path):
    log = tmp_path / "slurm-4242.out"
    log.write_text("epoch 3 loss 0.41\nepoch 4 loss 0.40\n")
    assert "failure:    unknown" in gq("triage", str(log), home=tmp_path).stdout
    killed = gq("triage", str(log), "--exit-code", "137", home=tmp_path).stdout
    assert "failure:    host_oom" in killed and "killed by signal 9" in killed


def test_triage_of_a_missing_file_is_bad_input(tmp_path):
    done = gq("triage", str(tmp_path / "nope.log"), home=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"gq: {tmp_path / 'nope.log'}: no such file\n"

