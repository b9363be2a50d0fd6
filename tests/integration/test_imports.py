"""Layering by import: the policy is pure, the hot path is light, no layer pulls in the TUI."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gq
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
        "gq.triage", "gq.triage.classify", "gq.triage.rules", "gq.triage.advice", "gq.units"}


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


def _gq_modules() -> dict[str, Path]:
    root = Path(gq.__file__).parent
    out = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(tree: ast.AST, modules: dict[str, Path], in_functions: bool) -> list[tuple[str, int]]:
    """(module, line) of each `import gq...` in the tree: those run when the module loads (not
    under TYPE_CHECKING, not in a function), or only those inside functions."""
    found = []

    def visit(nodes, inside: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gq"):
                if inside == in_functions:
                    for alias in node.names:
                        full = f"{node.module}.{alias.name}"
                        found.append((full if full in modules else node.module, node.lineno))
            elif isinstance(node, ast.Import) and inside == in_functions:
                found.extend((a.name, node.lineno) for a in node.names if a.name.startswith("gq"))
            for field in ("body", "orelse", "finalbody", "handlers"):
                child = getattr(node, field, None)
                if isinstance(child, list) and not isinstance(node, (ast.ImportFrom, ast.Import)):
                    visit(child, inside or isinstance(
                        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree.body, False)
    return found


def test_no_import_cycle_between_gq_modules():
    """What a module imports when it loads never comes back to it: no cycle held together by
    import order."""
    modules = _gq_modules()
    graph = {name: {m for m, _ in _imports(ast.parse(path.read_text()), modules, False)
                    if m in modules and m != name} for name, path in modules.items()}
    assert len(graph["gq.daemon.ops"]) > 10  # the scan sees imports: it can fail
    cycles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


# Imports inside functions that stay, for weight only: paramiko (the SSH transport), the
# daemon's own start (gq daemon run), loaded only by the commands that need them, and the
# /metrics endpoint (prometheus_client, an extra), only with [metrics] listen.
HEAVY = {"gq.remote.ssh", "gq.daemon.core", "gq.daemon.server", "gq.daemon.reload",
         "gq.daemon.main", "gq.daemon.diskfull", "gq.daemon.metrics", "gq.daemon.metrics_http"}


def test_no_import_inside_a_function_dodges_a_cycle():
    """The daemon, peers, Slurm and the transport import each other at the top of the module;
    an import inside a function is for weight only (HEAVY)."""
    modules = _gq_modules()
    hidden = []
    for name, path in modules.items():
        if not name.startswith(("gq.daemon", "gq.slurm", "gq.remote")):
            continue
        for module, line in _imports(ast.parse(path.read_text()), modules, True):
            if module.startswith(("gq.daemon", "gq.slurm", "gq.remote")) and module not in HEAVY:
                hidden.append(f"{path}:{line}: {module}")
    assert not hidden, "\n".join(hidden)


# Every hot command, run for real against a daemon: what it loaded by the time it exited.
HOT_LINES = ["ls", "ls -a", "ls --all --json", "ps", "show {j}", "show {j} --json", "why {j}",
             "logs {j}", "wait {j}", "cancel {j}", "hold {j}", "release {j}", "requeue {j}",
             "update {j} -n x", "gpus", "gpus --json", "offenders", "offenders --json", "clean",
             "submit --hold -- true", "run -g 0 -- true"]
LOADS = {"typer", "click", "rich", "textual", "pydantic", "sqlite_utils", "sqlite3", "psutil",
         "pynvml", "asyncio", "paramiko", "gq.cli.app", "gq.daemon", "gq.store", "gq.model",
         "gq.sbatch"}  # the #SBATCH parser: only for a script that has #SBATCH lines


def test_hot_commands_are_light(host, tmp_path):
    job = host.submit("-g", "0", "--", "true")
    host.wait_ended(job)
    report = tmp_path / "modules.json"
    code = ("import atexit, json, sys\n"
            f"atexit.register(lambda: open({str(report)!r}, 'w').write(json.dumps("
            "sorted(sys.modules))))\n"
            "from gq.cli.entry import main\nmain(sys.argv[1:])")
    heavy = {}
    for line in HOT_LINES:
        argv = line.format(j=job).split()
        report.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-c", code, *argv], env=host.env, capture_output=True,
                       timeout=60)
        loaded = set(json.loads(report.read_text()))
        found = {m for m in loaded if m in LOADS or m.split(".")[0] in LOADS
                 or ".".join(m.split(".")[:2]) in LOADS}
        if found:
            heavy[line] = sorted(found)
    assert heavy == {}


def test_importing_the_backends_package_stays_light():
    code = "import sys, gq.gpu; print(sorted(m for m in ('pynvml', 'psutil') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=True).stdout
    assert out.strip() == "[]"


def test_a_daemon_starts_without_building_typers_commands(host, tmp_path):
    """`gq daemon run`, as the CLI and systemd run it, is served beside Typer; here against
    a home whose daemon runs already, so that it ends at once, refused."""
    report = tmp_path / "modules.json"
    code = ("import atexit, json, sys\n"
            f"atexit.register(lambda: open({str(report)!r}, 'w').write(json.dumps("
            "sorted(sys.modules))))\n"
            "from gq.cli.entry import main\nmain(sys.argv[1:])")
    proc = subprocess.run([sys.executable, "-c", code, "daemon", "run"], env=host.env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "already runs" in proc.stderr
    assert not {"typer", "gq.cli.app"} & set(json.loads(report.read_text()))
