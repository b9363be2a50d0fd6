"""The labelled failure-log corpus (tests/data/triage/manifest.csv): load it, classify each log
as the daemon would, and score the result per class. Shared by tests/unit/test_triage_corpus.py
and bench/triage.py."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gq.triage.classify import EndFacts, classify
from gq.triage.rules import CLASSES

CORPUS = Path(__file__).resolve().parent.parent / "data" / "triage"
SPLITS = ("dev", "heldout")  # dev: the rules were written with it in view; heldout: never


@dataclass(frozen=True)
class Log:
    file: str
    failure: str  # the label
    exit_code: int | None
    split: str
    source: str

    def text(self) -> str:
        return (CORPUS / self.file).read_text(errors="replace")

    def predict(self) -> str:
        return classify(self.text(), EndFacts(exit_code=self.exit_code)).failure


def corpus(split: str | None = None) -> list[Log]:
    with open(CORPUS / "manifest.csv", newline="") as f:
        rows = [Log(r["file"], r["failure"], int(r["exit_code"]) if r["exit_code"] else None,
                    r["split"], r["source"]) for r in csv.DictReader(f)]
    return [r for r in rows if split is None or r.split == split]


@dataclass(frozen=True)
class Score:
    pairs: list[tuple[str, str]]  # (label, predicted), one per log

    @property
    def right(self) -> int:
        return sum(t == p for t, p in self.pairs)

    @property
    def accuracy(self) -> float:
        return self.right / len(self.pairs) if self.pairs else 0.0

    def per_class(self) -> list[tuple[str, int, int, float | None, float | None]]:
        """(class, logs, right, precision, recall) for each class with a log or a guess."""
        out = []
        for c in CLASSES:
            n = sum(t == c for t, _ in self.pairs)
            guessed = sum(p == c for _, p in self.pairs)
            right = sum(t == p == c for t, p in self.pairs)
            if n or guessed:
                out.append((c, n, right, right / guessed if guessed else None,
                            right / n if n else None))
        return out


def score(logs: list[Log]) -> Score:
    return Score([(log.failure, log.predict()) for log in logs])


def confusion_matrix(pairs: list[tuple[str, str]]) -> str:
    counts = Counter(pairs)
    width = max(len(c) for c in CLASSES)
    head = " " * width + " " + " ".join(c[:5].rjust(5) for c in CLASSES)
    rows = [f"{c.ljust(width)} " + " ".join(str(counts[(c, p)] or ".").rjust(5)
                                          for p in CLASSES) for c in CLASSES]
    return "\n".join(["true \\ predicted", head, *rows])


def table(scores: dict[str, Score]) -> str:
    """Per class and split: logs, right, precision and recall (in %), then the totals."""
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.0f}"

    names = list(scores)
    head = f"{'class':<15}" + "".join(f"{s + ' n/right/P/R':>26}" for s in names)
    lines = [head]
    for c in CLASSES:
        cells = []
        for s in names:
            row = {r[0]: r for r in scores[s].per_class()}.get(c)
            cells.append(f"{'-':>26}" if row is None else
                         f"{row[1]:>8}{row[2]:>6}{pct(row[3]):>6}{pct(row[4]):>6}")
        lines.append(f"{c:<15}" + "".join(cells))
    lines.append(f"{'all':<15}" + "".join(
        f"{len(scores[s].pairs):>8}{scores[s].right:>6}{'':>6}{pct(scores[s].accuracy):>6}"
        for s in names))
    return "\n".join(lines)
