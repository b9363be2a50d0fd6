"""Text a user gave (a command, a directory, a name, a reason quoting them), made safe to print
to a terminal: its control characters escaped as `ls -b` shows them. Standard library only,
for every command's hot path (and `gq top`, and `gq run`'s status line).

What is escaped: the C0 controls, DEL and the C1 controls (ESC, CSI... everything a terminal
acts on: titles, screen clears, OSC 52 clipboard writes), the bidirectional overrides and
isolates and the line and paragraph separators (text that reorders or breaks what follows), and
lone surrogates. As `ls -b`: \\a \\b \\t \\n \\v \\f \\r by name, anything else as the octal
of its bytes in UTF-8 (ESC is \\033, U+202E is \\342\\200\\256), and a byte that was not UTF-8
(an argument decoded with surrogateescape, PEP 383) as its own octal (\\377). Unlike `ls -b`,
a backslash is left as it is, so that an ordinary command reads as it was typed; the escaping
is then idempotent, and text escaped twice reads the same. JSON output is not escaped here: its
encoder escapes every control character already (\\u001b).
"""

from __future__ import annotations

import re

_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE: dict[str, re.Pattern] = {}  # by the C0 controls kept
_NAMED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
          "\r": "\\r"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    data = (bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF  # a byte that was not UTF-8
            else char.encode("utf-8", "surrogatepass"))
    return "".join(f"\\{b:03o}" for b in data)


def escape_controls(text: str, keep: str = "") -> str:
    """`text` with its control characters escaped (the module's docstring); those in `keep`
    (C0 controls: "\\n" for text of several lines) are left as they are."""
    if text.isascii() and text.isprintable():  # nearly always: no copy, no regex
        return text
    unsafe = _UNSAFE.get(keep)
    if unsafe is None:
        c0 = "".join(f"\\x{i:02x}" for i in range(0x20) if chr(i) not in keep)
        unsafe = _UNSAFE[keep] = re.compile(f"[{c0}{_BEYOND_C0}]")
    return unsafe.sub(_escaped, text)


def escape_lines(text: str) -> str:
    """Text of several lines (a reason, `gq why`'s answer): each escaped, the newlines kept."""
    return escape_controls(text, keep="\n")
