"""The output pasted in docs/, run again: every console block is marked with the session it
belongs to (or why it is not run), and a session's blocks run in order, as one reader would type
them, on one daemon of simulated cards in a fresh HOME (as sqlite-utils checks its docs with cog).

    <!-- doc-output: quickstart -->
    ```console
    $ gq submit -- true
    1
    ```

    <!-- doc-output: not run (it installs a virtual environment) -->

Each `$ ` line is a command; the lines up to the next one are what it printed (stderr, then
stdout). `export NAME=VALUE` sets the session's environment; a plain `gq ...` runs in this process
(tests/support/cli.py), anything else in `bash -c` with this checkout's gq first on PATH;
`cat FILE` of a file the reader is told to write creates it from the block. Before a command
that reads the queue the session waits for the daemon to settle (no job waiting for its first
pass, the list unchanged over a tick). Compared after `normalise`: times, pids and durations
differ from run to run, and so do column widths with them. `scripts/gen_doc_output.py` writes
the real output back in place of what a block shows.
"""

from __future__ import annotations

import difflib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.cli import gq_in_process
from tests.support.paths import ROOT

DOCS = ROOT / "docs"
DOC_HOME = "/home/alice"  # the HOME every pasted path is shown under
DOC_HOST = "vm"
MARK = re.compile(r"^<!-- doc-output: (.+?) -->\n```console\n(.*?)^```[ \t]*$", re.M | re.S)
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"not run \(.+\)")
READS = ("ls", "ps", "gpus", "why", "show", "offenders", "stats")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_PID = re.compile(r"\bpid \d+")
_DURATION = re.compile(r"(?<![\w.])-?(?=\d+(?:\.\d+)?[dhms]\b|\d+[dhm]\d)"
                       r"(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+(?:\.\d+)?s)?(?![\w.])")


@dataclass
class Block:
    path: Path
    session: str
    span: tuple[int, int]  # of the block's body in the file's text
    steps: list[tuple[str, str]]  # (command, what it printed)
    actual: list[str] = field(default_factory=list)


def parse_steps(body: str) -> list[tuple[str, str]]:
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        else:
            raise ValueError(f"a console block starts with output, not a command: {line!r}")
    return [(command, "\n".join(out)) for command, out in steps]


def blocks(paths=None) -> list[Block]:
    """The marked blocks that run, in file order."""
    found = []
    for path in paths or sorted(DOCS.glob("*.md")):
        text = path.read_text()
        for m in MARK.finditer(text):
            if not NOT_RUN.fullmatch(m[1]):
                found.append(Block(path, m[1], m.span(2), parse_steps(m[2])))
    return found


def unmarked(paths=None) -> list[str]:
    """Console blocks (and blocks of `$ ` commands) marked neither with a session nor with why
    they are not run: 'FILE:LINE' each."""
    missing = []
    for path in paths or sorted(DOCS.glob("*.md")):
        text = path.read_text()
        for m in FENCE.finditer(text):
            if m[1].strip() != "console" and not m[2].startswith("$ "):
                continue
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if not before.startswith("<!-- doc-output: "):
                missing.append(f"{path.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}")
    return missing


def normalise(text: str) -> str:
    text = _TIME.sub("<time>", text)
    text = _PID.sub("pid <pid>", text)
    text = _DURATION.sub("<dur>", text)
    return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.strip().splitlines())


class Session:
    """One reader's shell: a HOME of their own, the environment their `export`s made."""

    def __init__(self, name: str):
        self.name = name
        self.root = Path(tempfile.mkdtemp(prefix="gq-doc-", dir="/tmp"))
        self.home = self.root / "home" / "alice"
        self.cwd = self.home / "gq"  # the checkout, as the docs show it
        self.cwd.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("GQ_", "XDG_", "PYTEST", "COLUMNS"))}
        self.env.update(HOME=str(self.home), USER="root", LOGNAME="root", COLUMNS="100",
                        PATH=f"{Path(sys.executable).parent}:{self.env.get('PATH', '/usr/bin:/bin')}",
                        PYTHONPATH=str(ROOT), GQ_TIMEOUT="60")

    def shown(self, text: str) -> str:
        """Output as the docs show it: under /home/alice, on host vm."""
        text = text.expandtabs().replace(str(self.home), DOC_HOME).replace(str(self.root), "")
        text = re.sub(rf"\b{re.escape(socket.gethostname())}\b", DOC_HOST, text)
        me = pwd.getpwuid(os.getuid()).pw_name  # the docs were run as root
        return text if me == "root" else re.sub(rf"\b{re.escape(me)}\b", "root", text)

    def run(self, command: str, expected: str) -> str:
        export = re.fullmatch(r"export (\w+)=(\S+)", command)
        if export:
            value = export[2].strip("'\"").replace("$HOME", str(self.home))
            self.env[export[1]] = value.replace("$PATH", self.env["PATH"])
            return ""
        words = _words(command)
        if words and words[0] == "cat" and len(words) == 2:
            target = self.cwd / words[1]
            if not target.exists():  # a file the reader is told to write: the block says it
                target.write_text(expected + "\n")
        if words and words[0] == "gq" and len(words) > 1 and words[1] in READS:
            self.settle()
        if words is not None and words[:1] == ["gq"]:
            done = gq_in_process(words[1:], self.env, self.cwd)
        else:
            done = subprocess.run(["bash", "-c", command], env=self.env, cwd=self.cwd,
                                  capture_output=True, text=True, timeout=120)
        return self.shown((done.stderr + done.stdout).rstrip("\n"))

    def settle(self, timeout: float = 30.0) -> None:
        """Until no job waits for its first scheduling pass and the list stays the same over a
        tick: what a reader typing at human speed would see."""
        from gq.protocol import Connection

        if not os.path.exists(self.socket):
            return
        deadline, last = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            with Connection(self.socket, timeout=30) as conn:
                jobs = conn.call("list", all=True)["jobs"]
            now = [(j["id"], j["state"], j.get("reason"), j.get("exit_code")) for j in jobs]
            first_pass = any(j["state"] == "pending" and j.get("reason") == "Priority"
                             for j in jobs)
            dying = any(j["ended_at"] and j["started_at"] and j["exit_code"] is None
                        for j in jobs)  # cancelled, its processes not yet gone
            if now == last and not first_pass and not dying:
                return
            last = now
            time.sleep(0.1)

    @property
    def socket(self) -> str:
        home = self.env.get("GQ_HOME") or f"{self.home}/.local/state/gq"
        return f"{home}/gq.sock"

    def close(self) -> None:
        from gq.protocol import Connection

        try:
            with Connection(self.socket, timeout=10) as conn:
                active = [str(j["id"]) for j in conn.call("list")["jobs"]]
                if active:
                    conn.call("cancel", ids=active)
                conn.call("shutdown")
        except OSError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def _words(command: str) -> list[str] | None:
    """The words of a plain command; None where a shell is needed (an operator, an expansion
    outside single quotes, a backslash)."""
    quote = None
    for c in command:
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\":
            return None
        elif quote == '"':
            if c in "$`":
                return None
            quote = None if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in ";&|<>()$`*?~{}[]":
            return None
    return shlex.split(command)


def run_all(found: list[Block]) -> None:
    """Run every session's blocks in order, each session in a HOME of its own; fills `actual`."""
    sessions: dict[str, Session] = {}
    try:
        for block in found:
            session = sessions.get(block.session) or sessions.setdefault(
                block.session, Session(block.session))
            block.actual = [session.run(command, out) for command, out in block.steps]
    finally:
        for session in sessions.values():
            session.close()


def _this_host(text: str) -> str:
    """Without what depends on this host alone: where bash-completion is installed, gq says
    nothing of its absence (the docs were run where it is not)."""
    loader = any(os.path.exists(p) for p in ("/usr/share/bash-completion/bash_completion",
                                             "/etc/bash_completion"))
    if not loader:
        return text
    return "\n".join(line for line in text.splitlines()
                     if "bash-completion is not installed" not in line)


def differences(found: list[Block]) -> list[str]:
    """A unified diff of each command whose normalised output differs from the doc's."""
    diffs = []
    for block in found:
        for (command, expected), actual in zip(block.steps, block.actual):
            if normalise(_this_host(expected)) != normalise(_this_host(actual)):
                diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                            "docs", "gq", lineterm="", n=1)
                diffs.append(f"{block.path.name} ({block.session}) $ {command}\n"
                             + "\n".join(list(diff)[2:]))
    return diffs


def write_back(found: list[Block]) -> list[Path]:
    """Put what gq printed in place of what each block shows (where it differs, normalised)."""
    changed = []
    for path in dict.fromkeys(b.path for b in found):
        text = path.read_text()
        for block in sorted((b for b in found if b.path == path), key=lambda b: -b.span[0]):
            if all(normalise(e) == normalise(a) for (_, e), a in zip(block.steps, block.actual)):
                continue
            body = "".join(f"$ {command}\n" + (f"{actual}\n" if actual else "")
                           for (command, _), actual in zip(block.steps, block.actual))
            text = text[:block.span[0]] + body + text[block.span[1]:]
        if text != path.read_text():
            path.write_text(text)
            changed.append(path)
    return changed
