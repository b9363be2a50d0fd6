"""The failure classifier against real log tails from public issue threads
(tests/support/data/failures/index.csv cites each one): at least 95% right, with the confusion matrix."""

from __future__ import annotations

import csv
from collections import Counter
from gq.triage.classify import EndFacts, classify
from gq.triage.rules import CLASSES
from tests.support.paths import FAILURES as CORPUS


def corpus() -> list[dict]:
    with open(CORPUS / "index.csv", newline="") as f:
        return list(csv.DictReader(f))


def predict(row: dict) -> str:
    text = (CORPUS / row["file"]).read_text()
    code = int(row["exit_code"]) if row["exit_code"] else None
    return classify(text, EndFacts(exit_code=code)).failure


def confusion_matrix(pairs: list[tuple[str, str]]) -> str:
    counts = Counter(pairs)
    width = max(len(c) for c in CLASSES)
    head = " " * width + " " + " ".join(c[:5].rjust(5) for c in CLASSES)
    rows = [f"{c.ljust(width)} " + " ".join(str(counts[(c, p)] or ".").rjust(5)
                                          for p in CLASSES) for c in CLASSES]
    return "\n".join(["true \\ predicted", head, *rows])


def test_corpus_is_large_and_cited():
    rows = corpus()
    assert len(rows) >= 100
    per_class = Counter(r["failure"] for r in rows)
    assert set(per_class) <= set(CLASSES)
    assert all(per_class[c] >= 8 for c in CLASSES), per_class
    for row in rows:
        assert row["source"].startswith("https://github.com/"), row
        assert (CORPUS / row["file"]).is_file(), row


def test_classifier_gets_95_percent_of_the_corpus_right():
    rows = corpus()
    pairs = [(r["failure"], predict(r)) for r in rows]
    print()
    print(confusion_matrix(pairs))
    wrong = [(r["file"], p) for r, (t, p) in zip(rows, pairs) if t != p]
    for name, predicted in wrong:
        print(f"wrong: {name} -> {predicted}")
    right = len(rows) - len(wrong)
    print(f"{right}/{len(rows)} right ({100 * right / len(rows):.1f}%)")
    assert right / len(rows) >= 0.95, wrong
