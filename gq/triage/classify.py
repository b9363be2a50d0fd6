"""Why a job died: its class, the evidence it rests on, and what to do, from its log and what
the daemon saw. Pure: text and facts in, a Triage out; the daemon and `gq triage` share it."""

from __future__ import annotations

from dataclasses import dataclass, field

from gq.triage.advice import suggest  # noqa: F401  (callers import it from here)
from gq.triage.rules import HOST_OOM, IMPORT_ENV, RULES, SEGFAULT, TIMEOUT_SIGNAL, UNKNOWN, WARNING

EVIDENCE_LINES = 3  # at most this many lines of evidence
LINE_CHARS = 300  # and each cut to this length
# The tail worth reading: a dying process prints its cause last, and a long log of progress
# bars above it says nothing more.
TAIL_BYTES = 64 << 10
TAIL_LINES = 400

# Signals by number (Linux), as the shim records them and shells report them (128 + N).
_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV",
            15: "SIGTERM"}
# What a signal alone says, with the priority that evidence has among the log's rules: a
# SIGKILL nobody in gq sent is almost always the kernel's OOM killer.
_SIGNAL_CLASS = {9: (HOST_OOM, 60), 11: (SEGFAULT, 80), 7: (SEGFAULT, 80), 6: (SEGFAULT, 25),
                 15: (TIMEOUT_SIGNAL, 40), 1: (TIMEOUT_SIGNAL, 40), 2: (TIMEOUT_SIGNAL, 40)}


@dataclass(frozen=True)
class EndFacts:
    """What is known of a run's end besides its log. `signal`: the number of the signal that
    ended it; `stopped_by`: 'time_limit' when gq itself stopped it at its time limit;
    `kernel_oom`: the line of the kernel log or cgroup that says its OOM killer struck."""

    exit_code: int | None = None
    signal: int | None = None
    stopped_by: str | None = None
    kernel_oom: str | None = None


@dataclass(frozen=True)
class Triage:
    failure: str
    evidence: list[str] = field(default_factory=list)

    def as_json(self, suggestion: str) -> dict:
        return {"failure": self.failure, "evidence": self.evidence, "suggestion": suggestion}


def classify(text: str, facts: EndFacts | None = None) -> Triage:
    """The class of a failed run: what killed it, not the first error it printed."""
    facts = facts or EndFacts()
    if facts.stopped_by == "time_limit":
        return Triage(TIMEOUT_SIGNAL, ["gq: time limit reached (--time)"])
    if facts.kernel_oom:
        return Triage(HOST_OOM, [_cut(facts.kernel_oom)])
    best_priority, found = -1, {}  # class -> the lines of its best priority, in log order
    for line in tail_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        warning = WARNING.search(stripped) is not None
        for rule in RULES:
            if (warning and not rule.in_warning) or not rule.pattern.search(stripped):
                continue
            if rule.priority > best_priority:
                best_priority, found = rule.priority, {}
            if rule.priority == best_priority:
                found.setdefault(rule.failure, []).append(_cut(stripped))
            break  # RULES are ordered by priority: the first that matches is this line's
    signal = _signal_of(facts)
    if signal in _SIGNAL_CLASS:
        failure, priority = _SIGNAL_CLASS[signal]
        said = f"killed by signal {signal} ({_SIGNALS[signal]})"
        if priority > best_priority:
            return Triage(failure, [said])
        if priority == best_priority:
            found.setdefault(failure, []).append(said)
    if not found:
        if facts.exit_code in (126, 127):
            return Triage(IMPORT_ENV, [f"exit code {facts.exit_code}: the shell could not "
                                       "find or run the command"])
        return Triage(UNKNOWN, [])
    # Several classes at one priority: the one whose evidence came last killed the process.
    failure = max(found, key=lambda c: _last_position(found[c], text))
    lines = list(dict.fromkeys(found[failure]))  # each distinct line once, in order
    return Triage(failure, lines[-EVIDENCE_LINES:])


def tail_lines(text: str) -> list[str]:
    return text[-TAIL_BYTES:].splitlines()[-TAIL_LINES:]


def _signal_of(facts: EndFacts) -> int | None:
    if facts.signal:
        return facts.signal
    code = facts.exit_code
    if code is not None and 128 < code < 160:  # a shell's report of its child's signal
        return code - 128
    return None


def _last_position(lines: list[str], text: str) -> int:
    return max(text.rfind(line) for line in lines)


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"
