"""Failure classes on a real daemon: jobs that die each way end with the right class in
`gq ls`, `gq why`, `gq show --json` and the --notify message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.cli import gq as run_gq
from tests.support.hosts import wait_for
from tests.support.jobs import env_file

PY = sys.executable


def submit_dying(host, name: str, *args: str) -> tuple[int, object]:
    out = host.work / f"notified-{name}"
    job = host.submit("-n", name, "--notify", f"env -0 > {out}", *args)
    return job, out


def check_everywhere(host, job: int, out, failure: str, evidence: str | None = None) -> dict:
    ended = host.wait_ended(job, timeout=30)
    shown = host.job(job)
    assert shown["failure"] == failure, shown
    if evidence is not None:
        assert any(evidence in line for line in shown["failure_evidence"]), shown
    assert shown["failure_suggestion"]
    text = host.gq("show", str(job)).stdout.splitlines()
    assert ["failure", failure] in [line.split() for line in text]
    assert any(line.split()[:3] == ["what", "to", "do"] for line in text)
    why = host.gq("why", str(job)).stdout
    assert f"Failure: {failure}" in why and "What to do: " in why
    listed = host.gq("ls", "--all").stdout
    (row,) = [line for line in listed.splitlines() if line.split()[0] == str(job)]
    assert row.endswith(failure), row
    (brief,) = [j for j in json.loads(host.gq("ls", "--all", "--json").stdout)
                if j["id"] == job]
    assert brief["failure"] == failure
    env = env_file(wait_for(lambda: out.exists() and out.stat().st_size and out,
                            what=f"the notification of job {job}"))
    assert env["GQ_FAILURE"] == failure and env["GQ_FAILURE_SUGGESTION"]
    if evidence is not None:
        assert evidence in env["GQ_FAILURE_EVIDENCE"]
    return ended


def test_a_python_exception_is_a_data_error(host):
    job, out = submit_dying(host, "exc", "--gpus", "0", "--", PY, "-c",
                            "import warnings; warnings.warn('CUDA out of memory, retrying'); "
                            "raise ValueError('label 7 out of range')")
    check_everywhere(host, job, out, "data_error", "ValueError: label 7 out of range")
    env = env_file(out)
    assert "ValueError: label 7 out of range" in env["GQ_LOG_TAIL"]


def test_an_import_error_is_the_environment(host):
    job, out = submit_dying(host, "imp", "--gpus", "0", "--", PY, "-c",
                            "import gq_no_such_module_anywhere")
    check_everywhere(host, job, out, "import_env", "No module named")


def test_a_segfault_is_a_segfault(host):
    job, out = submit_dying(host, "segv", "--gpus", "0", "--", PY, "-c",
                            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    check_everywhere(host, job, out, "segfault", "signal 11")


def test_a_simulated_gpu_oom_is_a_gpu_oom(host):
    job, out = submit_dying(host, "oom", "--mem", "10G", "--", PY, "-m", "gq.sim.burn",
                            "--mem", "100G", "--seconds", "1")
    ended = check_everywhere(host, job, out, "gpu_oom", "CUDA out of memory")
    assert ended["state"] == "oom"
    # 100G at once on 80G cards: the daemon's answer knows the host's largest card, and the
    # advice is the truth, not a --mem that cannot fit (it was "--mem 15G" and --retry-oom 2)
    told = host.job(job)["failure_suggestion"]
    assert "more than the largest card here (80G)" in told and "e.g. --mem" not in told, told
    assert "more than the largest card here (80G)" in host.gq("why", str(job)).stdout


def test_a_time_limit_is_a_timeout(host):
    job, out = submit_dying(host, "slow", "--gpus", "0", "--time", "1s", "--grace", "1s",
                            "--", "sleep", "60")
    ended = check_everywhere(host, job, out, "timeout_signal", "time limit 1s reached")
    assert ended["state"] == "timeout"


def test_a_cancel_is_no_failure(host):
    job = host.submit("--gpus", "0", "--", "sleep", "60")
    host.wait_state(job, "running")
    host.gq("cancel", str(job))
    host.wait_ended(job)
    assert host.job(job)["failure"] is None


@pytest.fixture
def small_tmpfs(tmp_path):
    where = tmp_path / "full"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_is_disk_full(host, small_tmpfs):
    write = (f"open({str(small_tmpfs / 'ckpt.pt')!r}, 'wb').write(b'x' * (1 << 20)); "
             "print('saved')")
    job, out = submit_dying(host, "full", "--gpus", "0", "--", PY, "-c", write)
    check_everywhere(host, job, out, "disk_full", "No space left on device")


def test_requeue_forgets_the_last_failure(host):
    job = host.submit("--gpus", "0", "--", "sh", "-c",
                      '[ "$GQ_RESTART_COUNT" = 0 ] && echo "KeyError: 3" >&2 && exit 1; true')
    host.wait_ended(job)
    assert host.job(job)["failure"] == "data_error"
    host.gq("requeue", str(job))
    wait_for(lambda: host.job(job)["state"] == "completed", what="the second run")
    assert host.job(job)["failure"] is None and host.job(job)["failure_evidence"] == []


def test_the_kernel_log_names_the_oom_killers_victim(tmp_path):
    from gq.daemon.triage_end import kernel_oom_line

    kmsg = tmp_path / "kmsg"  # /dev/kmsg gives one record a read; a file gives them all
    kmsg.write_text("6,2231,5022,-;Out of memory: Killed process 4242 (python) total-vm:1kB, "
                    "anon-rss:9kB, UID:1000\n")
    assert kernel_oom_line(4242, str(kmsg)).startswith("Out of memory: Killed process 4242 ")
    assert kernel_oom_line(424, str(kmsg)) is None
    assert kernel_oom_line(4242, str(tmp_path / "none")) is None


def test_triage_checks_its_advice_against_the_hosts_largest_card(tmp_path, make_host):
    """Through the daemon's answer (ping), never by opening the cards itself; offline, with
    no daemon, the card is not known and the advice says so less surely."""
    log = tmp_path / "slurm-7.out"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB. "
                   "GPU 0 has a total capacity of 23.64 GiB of which 20.1 GiB is free.\n")
    offline = json.loads(run_gq("triage", str(log), "--json",
                                    env={**os.environ, "GQ_HOME": str(tmp_path / "none")}).stdout)
    assert "e.g. --mem 40G" in offline["suggestion"]
    host = make_host("2x24G")
    told = json.loads(host.gq("triage", str(log), "--json").stdout)["suggestion"]
    assert "more than the largest card here (24G)" in told and "e.g. --mem" not in told


def test_a_working_directory_gone_before_the_start_is_told_so(host):
    """It was import_env with "activate the right environment" (#39); gq's own shim says it
    cannot enter the directory, and the advice is to resubmit from one that exists."""
    gone = host.work / "run3"
    gone.mkdir()
    job = host.submit("--hold", "--gpus", "0", "--cwd", str(gone), "--", "true")
    gone.rmdir()
    host.gq("release", str(job))
    host.wait_ended(job)
    shown = host.job(job)
    assert shown["failure"] == "import_env", shown
    assert any("cannot enter" in line for line in shown["failure_evidence"]), shown
    told = shown["failure_suggestion"]
    assert "--cwd DIR" in told and "activate" not in told, told
