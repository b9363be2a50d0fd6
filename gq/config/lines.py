"""Where in config.toml a setting is written: a light reading of TOML, enough to point at a
line (tomllib says nothing of where values were)."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r'^\s*("[^"]*"|[A-Za-z0-9_.\-]+)\s*=')
# Messages of gq/config/settings.py start with the setting they are about: "[daemon] tick = ...",
# "[limits.users.ann] max_running_gpus = ...", "unknown setting [host] cores".
_NAMED = re.compile(r"\[([^\]]+)\](?: ([A-Za-z0-9_.\-]+))?")


def setting_lines(text: str) -> dict[str, int]:
    """"section.key" -> the line that sets it, and "section" -> its header's line. A light
    reading of TOML, enough to point at a line: tomllib says nothing of where values were."""
    out: dict[str, int] = {}
    table = ""
    for n, line in enumerate(text.splitlines(), 1):
        if m := _HEADER.match(line):
            table = ".".join(p.strip().strip('"') for p in m[1].split("."))
            out.setdefault(table, n)
        elif m := _KEY.match(line):
            key = ".".join(p.strip().strip('"') for p in m[1].split("."))
            out.setdefault(f"{table}.{key}" if table else key, n)
    return out


def line_of(message: str, lines: dict[str, int]) -> int | None:
    """The line an error message of gq/config/settings.py is about, when it can be told."""
    m = _NAMED.search(message)
    if m is None:
        return None
    if m[2] and f"{m[1]}.{m[2]}" in lines:
        return lines[f"{m[1]}.{m[2]}"]
    return lines.get(m[1])
