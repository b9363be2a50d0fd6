"""install.sh --system, staged below a temporary root: the environment, the unit, completion and
the example settings; then, as root, its daemon serving a job of a user made for the test.

What cannot run here: systemd itself (no `systemctl enable --now`, no `journalctl`); the unit
is checked by `systemd-analyze verify` instead, and the daemon is started by hand as the unit
would start it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.hosts import wait_for
from gq.config import load_config
from gq.config.show import effective
from gq.protocol import Connection
from tests.support.sysmode import Users, require_root, user_python
from tests.support.install import INSTALL, run_checked, user_env, verify_unit
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def staged():
    python, _ = user_python()  # one every user can run, as --system insists
    root = Path(tempfile.mkdtemp(prefix="gq-", dir="/tmp"))
    root.chmod(0o755)
    home = root / "installer"
    home.mkdir()
    env = user_env(home, GQ_SYSTEM_ROOT=str(root), GQ_PYTHON=python)
    proc = run_checked(["bash", str(INSTALL), "--system"], env, cwd=home)
    yield root, proc
    shutil.rmtree(root, ignore_errors=True)


def test_a_staged_system_install_has_the_unit_completion_and_settings(staged):
    root, proc = staged
    venv, link = root / "opt" / "gq" / "venv", root / "usr" / "local" / "bin" / "gq"
    assert link.resolve() == (venv / "bin" / "gq").resolve()
    assert f"installed for every user: {link} -> {venv}/bin/gq" in proc.stdout
    assert "nothing enabled or started" in proc.stdout
    unit = root / "etc" / "systemd" / "system" / "gq.service"
    text = unit.read_text()
    assert f"ExecStart={venv}/bin/gq daemon run --system\n" in text
    assert f"Environment=GQ_SYSTEM_ROOT={root}\n" in text
    verify_unit(unit)
    for shell, path in (("bash", "usr/share/bash-completion/completions/gq"),
                        ("zsh", "usr/local/share/zsh/site-functions/_gq"),
                        ("fish", "usr/share/fish/vendor_completions.d/gq.fish")):
        assert (root / path).read_text() == (ROOT / "completions" / f"gq.{shell}").read_text()
    # The example settings are all commented out: the same as no file.
    config = root / "etc" / "gq" / "config.toml"
    assert [r["value"] for r in effective(load_config(config))] == [
        r["value"] for r in effective(load_config(root / "absent.toml"))]
    for path, mode in ((venv, 0o755), (venv / "bin" / "gq", 0o755), (unit, 0o644)):
        assert os.stat(path).st_mode & 0o777 == mode, path  # every user runs what root put


def test_a_system_install_keeps_the_settings_and_refuses_a_python_others_cannot_run(
        staged, tmp_path):
    root, _ = staged
    config = root / "etc" / "gq" / "config.toml"
    config.write_text(config.read_text() + "[access]\nqueue = \"own\"\n")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    (closed / "python3").symlink_to(user_python()[0])
    proc = run_checked(["bash", str(INSTALL), "--system"],
                user_env(tmp_path, GQ_SYSTEM_ROOT=str(root), GQ_PYTHON=str(closed / "python3")),
                check=False)
    assert proc.returncode == 1
    assert "is not usable by other users" in proc.stderr and "GQ_PYTHON" in proc.stderr
    assert config.read_text().endswith('queue = "own"\n')


def test_the_installed_system_daemon_runs_a_users_job_as_that_user(staged):
    require_root()
    root, _ = staged
    users = Users()
    daemon = None
    try:
        ann = users.user("i")
        env = {**os.environ, "GQ_SYSTEM_ROOT": str(root), "GQ_SIM_GPUS": "1x80G"}
        env.pop("GQ_HOME", None)
        gq = str(root / "usr" / "local" / "bin" / "gq")
        (root / "etc" / "gq" / "config.toml").write_text('[daemon]\ntick = "0.2s"\n')
        daemon = subprocess.Popen([gq, "daemon", "run", "--system"], env=env,  # as the unit
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        sock = root / "run" / "gq" / "gq.sock"
        wait_for(lambda: sock.exists(), what="the installed daemon's socket")
        as_ann = dict(user=ann.uid, group=ann.gid, extra_groups=ann.groups(), cwd=ann.home,
                      env={"PATH": "/usr/bin:/bin", "HOME": ann.home,
                           "GQ_SYSTEM_ROOT": str(root)},
                      capture_output=True, text=True, timeout=60)
        proc = subprocess.run([gq, "submit", "-g", "0", "--", "id", "-un"], **as_ann)
        assert proc.returncode == 0, proc.stderr
        assert "started the daemon" not in proc.stderr
        waited = subprocess.run([gq, "wait", "@"], **as_ann)
        assert waited.stdout == "job 1: completed (exit 0)\n", waited.stderr
        assert subprocess.run([gq, "logs", "@"], **as_ann).stdout == f"{ann.name}\n"
        with Connection(sock) as conn:
            assert conn.call("ping")["system"] is True
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=20)
        users.remove()
