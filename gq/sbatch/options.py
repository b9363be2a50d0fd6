"""Each `#SBATCH` option's verdict: mapped to gq's submit options (as typed strings, gq's
names), accepted with a warning (it only tunes a cluster), or refused in one line that names
the script's line and what to do. Options mean what they mean to sbatch: `-n` is tasks, `-p`
a partition, `--mem` host RAM (never gq's GPU `--mem`). Later options win, as in sbatch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gq.sbatch.block import Directive, directives

ONE_HOST = ("gq runs a job on one host; submit it to a Slurm peer (gq submit --host NAME) or "
            "remove the line")
ONE_TASK = ("gq runs one task per job; start more processes from the script (torchrun, "
            "mpirun), submit it to a Slurm peer (gq submit --host NAME), or remove the line")
CLUSTER_ONLY = "only tunes a Slurm cluster; gq ignores it"

# long name -> (short, takes a value)
OPTIONS: dict[str, tuple[str | None, bool]] = {
    "job-name": ("J", True), "cpus-per-task": ("c", True), "mem": (None, True),
    "mem-per-cpu": (None, True), "mem-per-gpu": (None, True), "gres": (None, True),
    "gpus": ("G", True), "gpus-per-node": (None, True), "gpus-per-task": (None, True),
    "cpus-per-gpu": (None, True), "time": ("t", True), "array": ("a", True),
    "output": ("o", True), "error": ("e", True), "chdir": ("D", True),
    "dependency": ("d", True), "signal": (None, True), "requeue": (None, False),
    "no-requeue": (None, False), "mail-type": (None, True), "mail-user": (None, True),
    "export": (None, True), "hold": ("H", False), "begin": ("b", True),
    "partition": ("p", True), "qos": ("q", True), "account": ("A", True),
    "nodes": ("N", True), "ntasks": ("n", True), "ntasks-per-node": (None, True),
    "distribution": ("m", True), "constraint": ("C", True), "exclusive": (None, False),
    "nodelist": ("w", True), "exclude": ("x", True), "reservation": (None, True),
    "open-mode": (None, True), "comment": (None, True), "nice": (None, True),
    "gpu-bind": (None, True), "cpu-bind": (None, True), "hint": (None, True),
    "mem-bind": (None, True), "threads-per-core": (None, True), "tmp": (None, True),
    "licenses": ("L", True), "wckey": (None, True), "time-min": (None, True),
    "oversubscribe": ("s", False), "no-kill": ("k", False), "propagate": (None, True),
    "get-user-env": (None, False), "parsable": (None, False), "quiet": ("Q", False),
    "verbose": ("v", False), "wait": ("W", False), "clusters": ("M", True),
    "wrap": (None, True), "ntasks-per-gpu": (None, True), "kill-on-invalid-dep": (None, True),
}
_SHORT = {short: name for name, (short, _) in OPTIONS.items() if short}
WARNED = {"distribution", "constraint", "exclusive", "nodelist", "exclude", "reservation",
          "comment", "nice", "gpu-bind", "cpu-bind", "hint", "mem-bind", "threads-per-core",
          "tmp", "licenses", "wckey", "time-min", "oversubscribe", "no-kill", "propagate",
          "get-user-env", "parsable", "quiet", "verbose", "kill-on-invalid-dep"}
REFUSED = {
    "begin": "gq has no start time; submit it later (at, cron) or with --hold and gq release "
             "it then, or remove the line",
    "wait": "gq submit does not wait; follow it with gq wait ID, or remove the line",
    "clusters": ONE_HOST, "wrap": "a script has its command already; remove the line",
}


@dataclass
class Verdict:
    line: int
    written: str  # the option as written: `--nodes=2`, `-c 4`
    kind: str  # "mapped", "warned" or "refused"
    says: str  # what gq understood, or why not

    def sentence(self, script: str) -> str:
        return f"{script} line {self.line}: #SBATCH {self.written}: {self.says}"


@dataclass
class Understood:
    """What a script's #SBATCH block asks of gq."""

    script: str  # its name, in messages
    values: dict[str, Any] = field(default_factory=dict)  # gq submit options, as typed
    verdicts: list[Verdict] = field(default_factory=list)
    job: dict[str, Any] = field(default_factory=dict)  # -o/-e, --export, --signal scope...
    block: list[str] = field(default_factory=list)  # the #SBATCH lines, as the author wrote them

    @property
    def has_block(self) -> bool:
        return bool(self.verdicts)

    @property
    def refusals(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind == "refused"]

    @property
    def warnings(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind == "warned"]


def split_options(d: Directive) -> list[tuple[str | None, str | None, str]]:
    """(long name or None if unknown, value, as written) of each option on a directive."""
    out = []
    words = list(d.words)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("--"):
            flag, eq, value = word[2:].partition("=")
            name = _long(flag)
            takes = name is not None and OPTIONS[name][1]
            if takes and not eq and i < len(words):
                value, eq = words[i], " "
                i += 1
            written = f"--{flag}{'=' if eq == '=' else ' ' if eq else ''}{value}"
            out.append((name, value if eq else None, written))
        elif word.startswith("-") and len(word) > 1:
            name = _SHORT.get(word[1])
            takes = name is not None and OPTIONS[name][1]
            value = word[2:] or None
            if takes and value is None and i < len(words):
                value = words[i]
                i += 1
            out.append((name, value, f"{word[:2]} {value}" if value is not None and
                        len(word) == 2 else word))
        else:
            out.append((None, None, word))
    return out


def _long(flag: str) -> str | None:
    if flag in OPTIONS:
        return flag
    matches = [n for n in OPTIONS if n.startswith(flag)] if flag else []
    return matches[0] if len(matches) == 1 else None  # getopt_long takes a unique prefix


def understand(script: str, text_lines: list[str], compat=None, user: str | None = None,
               account: str | None = None) -> Understood:
    """The verdict on each #SBATCH option of a script, and the gq options they make."""
    from gq.sbatch.compat import SlurmCompat
    from gq.sbatch.mapping import Mapper

    u = Understood(script)
    try:
        found = directives(text_lines)
    except ValueError as e:
        number, _, rest = str(e).partition(": ")
        u.verdicts.append(Verdict(int(number.split()[1]), rest, "refused",
                                  "cannot split it as a shell would; check its quotes"))
        return u
    u.block = [d.text for d in found]
    mapper = Mapper(u, compat or SlurmCompat(), user, account)
    for d in found:
        for name, value, written in split_options(d):
            mapper.option(d.line, name, value, written)
    mapper.finish()
    return u


def block_sets(block: list[str]) -> set[str]:
    """The long names of the options an author's #SBATCH lines set (unknown ones left out)."""
    try:
        found = directives(block)
    except ValueError:  # refused where it was read (gq/cli/sbatch_script.py)
        return set()
    return {name for d in found for name, _, _ in split_options(d) if name}
