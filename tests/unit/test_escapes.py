"""The one escaping of a user's text for a terminal (gq/escapes.py): as `ls -b` shows it."""

from __future__ import annotations

from gq.escapes import escape_controls, escape_lines

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[H\x1b]52;c;ZWNobyBvd25lZAo=\x07\x9b7m[b]markup"


def test_the_escapes_are_those_of_ls_b():
    assert escape_controls(HOSTILE) == (
        "\\033]0;owned\\a\\033[2J\\033[H\\033]52;c;ZWNobyBvd25lZAo=\\a\\302\\2337m[b]markup")
    assert escape_controls("a\tb\nc\\d") == "a\\tb\\nc\\d"  # a backslash as it is
    assert escape_controls("x\u202ey") == "x\\342\\200\\256y"  # bidirectional override
    assert escape_controls("n\udcff") == "n\\377"  # a byte that was not UTF-8
    assert escape_controls("a\nb\x1b", keep="\n") == escape_lines("a\nb\x1b") == "a\nb\\033"
    assert escape_controls("café ✓ 日本") == "café ✓ 日本"
    assert escape_controls(escape_controls(HOSTILE)) == escape_controls(HOSTILE)
