"""Which lines of a script are `#SBATCH` directives, as sbatch reads them: those at the start
of a line in the leading comment block (a `#!` line, blank lines and comments), up to the
first command line; `##SBATCH` and `# SBATCH` are comments. Each directive is split as a
shell splits words (quotes work; a `#` after the options starts a comment)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

PREFIX = "#SBATCH"


@dataclass(frozen=True)
class Directive:
    line: int  # 1-based, in the script
    text: str  # the line as written, stripped
    words: tuple[str, ...]


def leading_block(text_lines: list[str]) -> list[str]:
    """The script's leading lines: everything before the first command line."""
    out = []
    for line in text_lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        out.append(line)
    return out


def directives(text_lines: list[str]) -> list[Directive]:
    """The #SBATCH lines of the leading block; ValueError (with the line) for unsplittable."""
    found = []
    for number, line in enumerate(leading_block(text_lines), 1):
        if not line.startswith(PREFIX) or line[len(PREFIX):][:1] not in (" ", "\t"):
            continue
        try:
            words = shlex.split(line[len(PREFIX):], comments=True)
        except ValueError as e:
            raise ValueError(f"line {number}: {line.strip()}: {e}") from None
        found.append(Directive(number, line.strip(), tuple(words)))
    return found
