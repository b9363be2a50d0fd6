"""Tables and values for people; JSON stays as the daemon sends it."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Callable

from gq.escapes import escape_controls, escape_lines


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))


def table(headers: list[str], rows: list[list[str]],
          paint: Callable[[int, str], str] | None = None,
          widths: list[int] | None = None) -> str:
    """Columns padded to their widest cell; `paint(column, cell)` may colour a body cell after
    its padding is counted. Each cell's control characters are escaped (gq/escapes.py) before
    it is counted. `widths`: each column's widest cell, headers included, where the caller
    counted them already (gq ls counts a page's while the daemon reads the next), of cells it
    escaped (gq/wording/jobs.py cells)."""
    n = len(headers)
    if widths is None:
        rows = [[escape_controls(c) for c in row] for row in rows]
    if paint is None and all(len(row) == n for row in rows):  # 10,000 rows: a call a row
        if widths is None:
            widths = [max(map(len, column)) for column in zip(headers, *rows)]
        line = "  ".join(f"%-{w}s" for w in widths)
        return "\n".join([(line % tuple(row)).rstrip() for row in [headers, *rows]])
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    lines = []
    for i, row in enumerate([headers, *rows]):
        cells = [c.ljust(w) for c, w in zip(row, widths)]
        if paint is not None and i:
            cells = [paint(k, cell) for k, cell in enumerate(cells)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def widest(widths: list[int], rows: list[list[str]]) -> list[int]:
    """`widths` grown to the widest cell of each column of these rows."""
    if not rows:
        return widths
    return [max(w, max(map(len, column))) for w, column in zip(widths, zip(*rows))]


# An ended job's outcome at a glance, as pueue colours Success and Failed.
_OUTCOME_COLOURS = {"completed": "32", "failed": "31", "oom": "31", "lost": "31",
                    "timeout": "33", "cancelled": "33"}


def colour_wanted() -> bool:
    """On a terminal, unless NO_COLOR is set (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def state_painter(headers: list[str]) -> Callable[[int, str], str] | None:
    """Colours the STATE column's outcome words (an array's counts too), on a terminal."""
    if not colour_wanted() or "STATE" not in headers:
        return None
    column = headers.index("STATE")

    def paint(i: int, cell: str) -> str:
        if i != column:
            return cell
        for word, code in _OUTCOME_COLOURS.items():
            cell = re.sub(rf"\b{word}\b", f"\033[{code}m{word}\033[0m", cell)
        return cell

    return paint


def echo_err(message: str) -> None:
    print(escape_lines(message), file=sys.stderr)


def did_you_mean(given: str, flags: Any) -> str:
    """'; did you mean --gpus?' for a mistyped option, the nearest of `flags` (long ones
    for a long one), or '' when none is near."""
    import difflib

    near = difflib.get_close_matches(
        given, [f for f in flags if f.startswith("--") == given.startswith("--")], n=1,
        cutoff=0.6)
    return f"; did you mean {near[0]}?" if near else ""


def say(text: str, file: Any = None) -> None:
    """Print text for people that may quote a user's (a name, a command, a reason): its
    control characters escaped, its lines kept (gq/escapes.py)."""
    print(escape_lines(text), file=file)
