"""Layering by import: the policy is pure, the hot path is light, no layer pulls in the TUI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


IO_AND_CLOCK = {"sqlite3", "sqlite_utils", "socket", "subprocess", "psutil", "pynvml",
                "paramiko", "asyncio", "textual", "typer", "time", "select", "selectors"}


def test_policy_imports_no_io_and_no_clock():
    baseline = modules_after("")
    loaded = modules_after("import gq.policy")
    assert (loaded - baseline) & IO_AND_CLOCK == set()


def test_submit_path_is_light():
    loaded = modules_after("import gq.cli.entry, gq.cli.submit_args, gq.cli.client")
    heavy = {"typer", "click", "rich", "textual", "sqlite_utils", "sqlite3", "psutil", "pynvml",
             "asyncio", "subprocess", "dataclasses", "datetime", "gq.cli.app"}
    assert loaded & heavy == set()


@pytest.mark.parametrize("module", ["gq.cli.app", "gq.daemon.main", "gq.daemon.core",
                                    "gq.daemon.server"])
def test_cli_and_daemon_never_import_the_tui(module):
    loaded = modules_after(f"import {module}")
    assert "textual" not in loaded and "gq.tui" not in loaded


def test_gpu_package_does_not_load_nvml_until_asked():
    assert {"pynvml", "psutil"} & modules_after("import gq.gpu") == set()


def test_policy_sources_import_no_io_or_clock_module():
    # `time` is loaded at interpreter start, so sys.modules cannot show it: read the sources.
    import ast

    policy = ROOT / "gq" / "policy"
    for path in policy.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in IO_AND_CLOCK | {"os", "datetime"}, (path, name)


def test_triage_is_pure():
    # The classifier runs in the daemon and offline (`gq triage`): text in, a class out.
    baseline = modules_after("")
    loaded = modules_after("import gq.triage.classify")
    assert (loaded - baseline) & IO_AND_CLOCK == set()
    assert {m for m in loaded - baseline if m.startswith("gq.")} <= {
        "gq.triage", "gq.triage.classify", "gq.triage.rules"}


def test_the_import_contracts_hold():
    """pyproject.toml's [tool.importlinter] contracts: the policy pure, no Textual below the
    TUI, the TUI through the protocol, the store and card backends below the daemon."""
    import shutil

    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable))
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([lint, "--no-cache"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_importing_the_backends_package_stays_light():
    code = "import sys, gq.gpu; print(sorted(m for m in ('pynvml', 'psutil') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=True).stdout
    assert out.strip() == "[]"
