"""`#GQ` lines at the top of a submitted script: its resource requests, as Slurm's `#SBATCH`.

`gq submit train.sh` reads the lines starting `#GQ` in the script's leading comment block (after
an optional `#!` line, up to the first line that is neither blank nor a comment) and parses
them with the same option table as the command line. Options on the command line win: one
given there replaces the script's; `--env` and `--sweep` merge by name, the command line's
value winning. Light: `gq submit` runs this on its fast path.
"""

from __future__ import annotations

import os
from typing import Any

from gq.protocol import BadInput

PREFIX = "#GQ"
MAX_HEADER = 64 * 1024  # bytes of the script read for directives
_MERGED_BY_NAME = ("env", "sweep")


def working_dir(given: str | None) -> str:
    """The job's directory: --cwd made absolute, or the caller's current one; one line (bad
    input) when the current directory was removed, as `mkdir d && cd d && rmdir "$PWD"` does."""
    try:
        here = os.getcwd()
    except FileNotFoundError:
        if given and os.path.isabs(given):
            return os.path.normpath(given)
        raise BadInput("the current directory no longer exists (removed after the shell "
                       "entered it): cd to one that does, or give --cwd DIR") from None
    return os.path.normpath(os.path.join(here, given or "."))


def find_script(command: list[str], cwd: str) -> str | None:
    """The script the command runs, when its first word is a file by path: `train.sh`,
    `./train.sh`, `/abs/train.sh`. A bare word that is a program on PATH is not a script."""
    if not command or not command[0]:
        return None
    word = command[0]
    path = os.path.join(cwd, word)
    if not os.path.isfile(path):
        return None
    if "/" not in word and _on_path(word):
        return None
    return os.path.abspath(path)


def _on_path(word: str) -> bool:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(d or ".", word)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def read_header(path: str) -> list[str] | None:
    """The script's leading lines (shebang, blanks, comments); None for a binary file."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_HEADER)
    except OSError as e:
        raise BadInput(f"{path}: cannot read the script: {e.strerror}") from None
    if b"\0" in head:
        return None
    lines = []
    for line in head.decode(errors="replace").splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        lines.append(line)
    return lines


def directives(path: str, lines: list[str]) -> dict[str, Any]:
    """The option values of the `#GQ` lines, parsed as on the command line."""
    import shlex

    from gq.cli.submit_args import parse_argv

    values: dict[str, Any] = {}
    name = os.path.basename(path)
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped.startswith(PREFIX) or stripped[len(PREFIX):][:1] not in ("", " ", "\t"):
            continue
        where = f"{name}:{number}: {stripped}"
        try:
            words = shlex.split(stripped[len(PREFIX):], comments=True)
            found, rest = parse_argv(words)
        except ValueError as e:
            raise BadInput(f"{where}: {e}") from None
        except BadInput as e:
            raise BadInput(f"{where}: {e.message}") from None
        if rest or "--" in words:
            raise BadInput(f"{where}: only options go on a #GQ line, not {(rest or ['--'])[0]!r}")
        for key, value in found.items():
            values[key] = values.get(key, []) + value if isinstance(value, list) else value
    return values


def _by_name(items: list[str]) -> dict[str, str]:
    return {item.partition("=")[0]: item for item in items}


def merge(from_script: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Command-line values over the script's."""
    out = {**from_script, **given}
    for key in _MERGED_BY_NAME:
        if key in from_script and key in given:
            out[key] = list({**_by_name(from_script[key]), **_by_name(given[key])}.values())
    return out


def script_command(path: str, command: list[str], header: list[str] | None) -> list[str]:
    """The command with the script by absolute path (the job may run elsewhere); a script
    without its executable bit runs through its #! interpreter, or sh."""
    if os.access(path, os.X_OK):
        return [path, *command[1:]]
    first = header[0] if header else ""
    interpreter = first[2:].split(None, 1) if first.startswith("#!") else []
    return [*(interpreter or ["sh"]), path, *command[1:]]


def apply_directives(values: dict[str, Any], command: list[str]) -> tuple[dict, list[str]]:
    """(values, command) of a submit, with the script's directives merged in."""
    return apply_script(values, command)[:2]


def apply_script(values: dict[str, Any], command: list[str]) -> tuple[dict, list[str], Any]:
    """(values, command, its #SBATCH block understood or None) of a submit, with the
    script's directives merged in: the command line over #GQ lines over #SBATCH lines."""
    cwd = working_dir(values.get("cwd"))
    path = find_script(command, cwd)
    if path is None:
        return values, command, None
    header = read_header(path)
    if header is None:  # a program, not a script
        return values, command, None
    sbatch = None
    if any(line.startswith("#SBATCH") for line in header):  # the parser only where it is used
        from gq.cli.sbatch_script import read_sbatch

        sbatch = read_sbatch(path, header, values.get("host") not in (None, "local"))
    script = merge(sbatch.values, directives(path, header)) if sbatch else \
        directives(path, header)
    return merge(script, values), script_command(path, command, header), sbatch
