"""Clients name operations through the protocol (`Op.SHOW`), never by a string of their own: a
renamed or removed operation is then an error where it is named, not a request the daemon
refuses at run time (issue #40)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gq.protocol.op_names import Op
from gq.protocol.ops import SPECS

ROOT = Path(__file__).resolve().parents[2] / "gq"
CLIENTS = sorted([*(ROOT / "cli").rglob("*.py"), *(ROOT / "tui").rglob("*.py")])
# A request sent with the operation's wire name written out: call("show", ...).
BY_STRING = re.compile(r"\b(call|ask|action|send|_act)\(\s*\"([a-z_]+)\"")


def test_every_operation_a_client_names_exists_and_none_is_named_by_a_string():
    named = set()
    for path in CLIENTS:
        text = path.read_text()
        named |= set(re.findall(r"\bOp\.([A-Z_]+)\b", text))
        strings = [m.group(0) for m in BY_STRING.finditer(text) if m.group(2) in set(Op)]
        assert strings == [], f"{path.relative_to(ROOT.parent)}: {strings}"
    assert named <= set(Op.__members__), named - set(Op.__members__)
    assert len(named) > 20  # the scan finds them: the CLI and TUI name most operations


def test_every_operation_has_its_spec_and_the_names_stay_light():
    assert set(SPECS) == set(Op)
    tree = ast.parse((ROOT / "protocol" / "op_names.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module for node in ast.walk(tree)
                                           if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "annotations", "enum", "StrEnum"}, imported
