"""install.sh in a throwaway HOME: the environment of a user who has nothing installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.support.paths import ROOT

INSTALL = ROOT / "install.sh"


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """A user with an empty HOME, but the real pip configuration and download cache."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GQ_", "XDG_", "VIRTUAL_ENV", "PYTHON"))}
    real_home = Path(os.path.expanduser("~"))
    # The user's own configuration directory (install.sh writes fish's completion there),
    # with a copy of the real pip configuration.
    real_pip = Path(os.environ.get("XDG_CONFIG_HOME", str(real_home / ".config"))) / "pip"
    if real_pip.is_dir():
        shutil.copytree(real_pip, home / ".config" / "pip", dirs_exist_ok=True)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME", str(real_home / ".cache"))
    env["HOME"] = str(home)
    env.update(extra)
    return env


def run_checked(args, env, timeout=300, check=True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def verify_unit(unit: Path) -> None:
    """systemd's own check of a unit file where systemd-analyze exists, else a parse."""
    if shutil.which("systemd-analyze"):
        # `verify` also checks that ExecStart's program exists. (Not --user: that needs a
        # running user manager; the directives of a user unit are checked the same way.)
        proc = run_checked(["systemd-analyze", "verify", str(unit)], os.environ, check=False)
        assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    import configparser

    parsed = configparser.ConfigParser(strict=True, interpolation=None)
    parsed.read_string(unit.read_text())
    assert parsed["Service"]["KillMode"] == "process"  # jobs outlive a stop or restart
    if "--system" in parsed["Service"]["ExecStart"]:  # a cgroup for each job below the unit's
        assert parsed["Service"]["Delegate"] == "yes"
    assert Path(parsed["Service"]["ExecStart"].split()[0]).exists()
    assert parsed["Install"]["WantedBy"]
