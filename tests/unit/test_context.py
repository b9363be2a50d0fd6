"""The handlers' view of the daemon (gq/daemon/context.py): declared, kept to, and provided.

Read from the source, as the import contracts are: every function of gq/daemon/ that takes the
daemon as `daemon`, outside the loop's own modules, declares it a Context and reaches only what
Context names (also through `self.daemon` in a class built with one); the Daemon has each of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gq.daemon.context import Context
from gq.daemon.core import Daemon
from tests.support.paths import ROOT

DAEMON_DIR = ROOT / "gq" / "daemon"
# The loop's own: they hold the whole Daemon.
LOOP = {"core.py", "server.py", "main.py"}


def members() -> set[str]:
    declared = set(Context.__annotations__)
    return declared | {name for name in vars(Context) if not name.startswith("_")}


def handler_side() -> list[Path]:
    return [p for p in sorted(DAEMON_DIR.rglob("*.py"))
            if p.relative_to(DAEMON_DIR).as_posix() not in LOOP]


def uses_of(node: ast.AST, name: str) -> set[str]:
    """X of every `name.X` under node; with name "self.daemon", of every `self.daemon.X`."""
    out = set()
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Attribute):
            continue
        if name == "self.daemon":
            inner = sub.value
            if (isinstance(inner, ast.Attribute) and inner.attr == "daemon"
                    and isinstance(inner.value, ast.Name) and inner.value.id == "self"):
                out.add(sub.attr)
        elif isinstance(sub.value, ast.Name) and sub.value.id == name:
            out.add(sub.attr)
    return out


def functions_taking_the_daemon(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                if arg.arg == "daemon":
                    yield node, arg


def test_the_handler_side_declares_a_context_and_uses_only_what_it_names():
    allowed, wrong = members(), []
    for path in handler_side():
        tree = ast.parse(path.read_text())
        where = path.relative_to(ROOT)
        for fn, arg in functions_taking_the_daemon(tree):
            annotation = ast.unparse(arg.annotation) if arg.annotation else None
            if annotation != "Context":
                wrong.append(f"{where}:{fn.lineno} {fn.name}(daemon: {annotation})")
            wrong += [f"{where}:{fn.lineno} {fn.name} uses daemon.{a}"
                      for a in sorted(uses_of(fn, "daemon") - allowed)]
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            wrong += [f"{where}:{cls.lineno} {cls.name} uses self.daemon.{a}"
                      for a in sorted(uses_of(cls, "self.daemon") - allowed)]
    assert wrong == []


def test_the_handlers_get_a_context():
    from gq.daemon.ops import HANDLERS

    for op, handler in HANDLERS.items():
        assert handler.__annotations__.get("daemon") == "Context", op


def test_the_daemon_has_all_of_the_context():
    init = next(n for n in ast.walk(ast.parse((DAEMON_DIR / "core.py").read_text()))
                if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assigned = {t.attr for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                and t.value.id == "self"}
    missing = {m for m in members() if m not in assigned and not hasattr(Daemon, m)}
    assert missing == set()


def test_the_check_sees_a_reach_past_the_context(tmp_path):
    """The source check above finds a use Context does not name, and an undeclared daemon."""
    tree = ast.parse("def op(daemon: Context):\n    daemon.supervisor.locked()\n"
                     "def helper(daemon):\n    daemon.store.queue()\n")
    found = [(fn.name, ast.unparse(arg.annotation) if arg.annotation else None,
              uses_of(fn, "daemon") - members())
             for fn, arg in functions_taking_the_daemon(tree)]
    assert found == [("op", "Context", {"supervisor"}), ("helper", None, set())]
