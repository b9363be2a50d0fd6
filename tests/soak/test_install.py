"""install.sh for real: a fresh virtual environment, the `gq` link, a job, and a second run."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from gq import __version__ as gq_version

from tests.support.install import INSTALL, run_checked, user_env, verify_unit
from tests.support.paths import ROOT


@pytest.fixture
def gq_home():
    # Short: a Unix socket path must fit in 107 bytes.
    home = tempfile.mkdtemp(prefix="gq-", dir="/tmp")
    yield Path(home)
    shutil.rmtree(home, ignore_errors=True)


def _quickstart_install() -> str:
    """What docs/quickstart.md shows ./install.sh printing (tests/support/doc_output.py)."""
    from tests.support.doc_output import parse_steps

    text = (ROOT / "docs" / "quickstart.md").read_text()
    body = text.split("```console\n$ ./install.sh\n", 1)[1].split("```", 1)[0]
    return parse_steps("$ ./install.sh\n" + body)[0][1]


def _as_the_quickstart_shows(text: str, home, venv, bin_dir, loader: bool) -> list[str]:
    """install.sh's output with this test's directories as the quickstart's defaults; without
    the lines about bash-completion where this host has it (the quickstart's VM had not)."""
    from tests.support.doc_output import normalise

    text = (text.replace(f'"{bin_dir}:', '"$HOME/.local/bin:')
            .replace(str(venv), "/home/alice/.local/share/gq/venv")
            .replace(str(bin_dir), "/home/alice/.local/bin").replace(str(ROOT), "/home/alice/gq")
            .replace(str(home), "/home/alice"))
    return [line for line in normalise(text).splitlines()
            if not (loader and "bash-completion" in line)]


def test_install_sh_installs_a_working_gq_and_upgrades_in_place(tmp_path, gq_home):
    home, venv, bin_dir = tmp_path / "home", tmp_path / "venv", tmp_path / "bin"
    home.mkdir()
    env = user_env(home, GQ_VENV=str(venv), GQ_BIN_DIR=str(bin_dir), SHELL="/bin/bash")
    had_build_dir = (ROOT / "build").exists()
    first = run_checked(["bash", str(INSTALL)], env, cwd=tmp_path)
    # Last, exactly what a new bash still needs: gq on PATH, and completion without
    # bash-completion.
    loader = any(os.path.exists(p) for p in ("/usr/share/bash-completion/bash_completion",
                                             "/etc/bash_completion"))
    assert first.stdout.splitlines()[-2 if loader else -3:] == [
        "To finish, add these lines to your ~/.bashrc (gq and its Tab completion), then open a "
        "new terminal:", f'    export PATH="{bin_dir}:$PATH"'] + (
        [] if loader else ["    source $HOME/.local/share/bash-completion/completions/gq"])
    assert _as_the_quickstart_shows(first.stdout, home, venv, bin_dir, loader) == \
        _as_the_quickstart_shows(_quickstart_install(), home, venv, bin_dir, loader)
    gq = bin_dir / "gq"
    assert gq.is_symlink() and gq.resolve() == (venv / "bin" / "gq").resolve()
    assert f"gq {gq_version} installed" in first.stdout
    assert f'export PATH="{bin_dir}:$PATH"' in first.stdout  # bin_dir is not on PATH
    assert "shell completion installed" in first.stdout
    for shell, path in (("bash", ".local/share/bash-completion/completions/gq"),
                        ("zsh", ".local/share/zsh/site-functions/_gq"),
                        ("fish", ".config/fish/completions/gq.fish")):
        assert (home / path).read_text() == (ROOT / "completions" / f"gq.{shell}").read_text()
    # A regular install, not an editable one: the package lives in the environment.
    where = run_checked([str(venv / "bin" / "python"), "-c", "import gq; print(gq.__file__)"], env,
                 cwd=tmp_path)
    assert where.stdout.startswith(str(venv))
    # Built from a copy: the checkout gets no build/ directory of stale modules.
    assert had_build_dir or not (ROOT / "build").exists()

    job_env = {**env, "GQ_HOME": str(gq_home / "home"), "GQ_SIM_GPUS": "1x80G",
               "PATH": f"{bin_dir}:{env['PATH']}"}
    try:
        submitted = run_checked(["gq", "submit", "--mem", "20G", "--", "sh", "-c",
                          'echo "hello from GPU $CUDA_VISIBLE_DEVICES"'], job_env, cwd=tmp_path)
        assert submitted.stdout.strip() == "1"
        assert "started the daemon" in submitted.stderr
        waited = run_checked(["gq", "wait", "@"], job_env, timeout=60)
        assert waited.stdout.strip() == "job 1: completed (exit 0)"
        assert run_checked(["gq", "logs", "1"], job_env).stdout == "hello from GPU 0\n"
        status = run_checked(["gq", "daemon", "status", "--json"], job_env)
        assert '"backend": "sim"' in status.stdout
        assert str(venv) in _daemon_exe(job_env)  # the daemon runs from the installed copy

        # Again, with the daemon running: an upgrade in place, no error, same link. A change
        # to the installed copy stands in for an older version; the reinstall replaces it.
        installed = Path(where.stdout.strip())
        installed.write_text(installed.read_text() + "OLD_VERSION = True\n")
        again = run_checked(["bash", str(INSTALL), "--user-unit"],
                     {**env, "GQ_HOME": job_env["GQ_HOME"]}, cwd=tmp_path)
        assert "creating the environment" not in again.stdout
        unit = home / ".config" / "systemd" / "user" / "gq.service"
        assert f"ExecStart={venv}/bin/gq daemon run\n" in unit.read_text()
        assert "systemctl --user enable --now gq" in again.stdout
        verify_unit(unit)
        assert "daemon from before this install is still running" in again.stdout
        assert gq.resolve() == (venv / "bin" / "gq").resolve()
        assert installed.read_text() == (ROOT / "gq" / "__init__.py").read_text()
        assert run_checked(["gq", "logs", "@"], job_env).stdout == "hello from GPU 0\n"
    finally:
        stopped = run_checked([str(venv / "bin" / "gq"), "daemon", "stop"], job_env, check=False,
                       timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert run_checked(["gq", "daemon", "status"], job_env, check=False).returncode == 3


def _daemon_exe(env) -> str:
    pid = json.loads(run_checked(["gq", "daemon", "status", "--json"], env).stdout)["pid"]
    return os.readlink(f"/proc/{pid}/exe") + " " + Path(f"/proc/{pid}/cmdline").read_text()


@pytest.mark.parametrize("args, code, message", [
    (["--help"], 0, "Usage: ./install.sh"),
    (["--frobnicate"], 2, "unknown argument: --frobnicate"),
    (["--system", "--user-unit"], 2, "--user-unit is for a per-user install"),
])
def test_install_sh_arguments(tmp_path, args, code, message):
    proc = run_checked(["bash", str(INSTALL), *args], user_env(tmp_path), check=False)
    assert proc.returncode == code
    assert message in (proc.stdout if code == 0 else proc.stderr)
    assert not (tmp_path / ".local").exists()  # nothing installed


def test_install_sh_refuses_an_old_python(tmp_path):
    fake = tmp_path / "python3.10"
    fake.write_text("#!/bin/sh\n"
                    "case \"$*\" in *python_version*) echo 3.10.13 ;; *) exit 1 ;; esac\n")
    fake.chmod(0o755)
    proc = run_checked(["bash", str(INSTALL)], user_env(tmp_path, GQ_PYTHON=str(fake)), check=False)
    assert proc.returncode == 1
    assert "gq needs Python 3.11 or newer" in proc.stderr and "3.10.13" in proc.stderr
    assert not (tmp_path / ".local").exists()
