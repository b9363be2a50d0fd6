"""Benchmark failure triage: how often the classifier is right on real logs, per class, on the
part of the corpus the rules were written with (dev) and on the part they never saw (heldout);
and what classifying costs against reading the log."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _harness import machine, print_table, round_options, verdict

from gq.daemon.oom import run_log
from gq.triage.classify import EndFacts, classify

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.triage_corpus import SPLITS, corpus, score, table  # noqa: E402

TARGET_HELDOUT = 0.90  # right on logs the rules were not built from
# A long run's log: this many progress lines, then the traceback that ended it.
LONG_LINES = 200_000
TARGET_RATIO = 1.0  # triaging a long log at most as costly as reading it once (what `gq logs` does)


def read_all(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def best(fn, rounds: int) -> float:
    """Median seconds of fn() over `rounds` runs."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def long_log(directory: str) -> Path:
    path = Path(directory) / "train.err"
    with open(path, "w") as f:
        for step in range(LONG_LINES):
            f.write(f"step {step:>7}  loss {1.0 / (step + 1):.5f}  lr 3.0e-04  "
                    f"grad_norm {0.5 + step % 7 / 10:.2f}  tokens/s 48213\n")
        f.write("Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n"
                "    loss = criterion(out, y)\nValueError: Expected input batch_size (60) to "
                "match target batch_size (10).\n")
    return path


def main() -> int:
    opts, rounds, _ = round_options(__doc__)
    from tests.support.triage_corpus import CORPUS

    scores = {split: score(corpus(split)) for split in SPLITS}
    logs = [CORPUS / log.file for log in corpus()]
    classify_t, read_t = [], []
    for path in logs:  # each corpus log: reading it (from the page cache) and classifying it
        text = read_all(path)
        read_t.append(best(lambda: read_all(path), rounds))
        classify_t.append(best(lambda: classify(text, EndFacts(exit_code=1)), rounds))
    with tempfile.TemporaryDirectory(prefix="gq-triage-") as d:
        path = long_log(d)
        size = path.stat().st_size
        whole = best(lambda: read_all(path), max(3, rounds // 4))
        # what the daemon does as a run ends: read the tail, classify it
        daemon = best(lambda: classify(run_log(path, 0), EndFacts(exit_code=1)), rounds)
        assert classify(run_log(path, 0)).failure == "data_error"
    per_log_ms = statistics.median(classify_t) * 1e3
    per_read_ms = statistics.median(read_t) * 1e3
    ratio = daemon / whole
    figures = {**machine(), "rounds": rounds, "corpus_logs": len(logs),
               "classify_median_ms": round(per_log_ms, 3),
               "classify_max_ms": round(max(classify_t) * 1e3, 3),
               "read_median_ms": round(per_read_ms, 3),
               "corpus_ratio": round(per_log_ms / per_read_ms, 2),
               "long_log_bytes": size, "long_read_ms": round(whole * 1e3, 2),
               "long_triage_ms": round(daemon * 1e3, 2), "long_ratio": round(ratio, 3),
               "target_ratio": TARGET_RATIO, "target_heldout": TARGET_HELDOUT,
               "accuracy": {split: {"logs": len(sc.pairs), "right": sc.right,
                                    "per_class": {c: {"logs": n, "right": r,
                                                      "precision": p, "recall": rc}
                                                  for c, n, r, p, rc in sc.per_class()}}
                            for split, sc in scores.items()}}
    held = scores["heldout"].accuracy
    ok = ratio <= TARGET_RATIO and held >= TARGET_HELDOUT
    if opts.json:
        print(json.dumps(figures))
        return 0 if ok else 1
    print(f"gq triage: right per class (n logs, right, precision %, recall %), "
          "tests/data/triage/manifest.csv")
    print(table(scores))
    print(f"held out: {100 * held:.1f}% right, target >= {100 * TARGET_HELDOUT:.0f}%: "
          f"{verdict(held >= TARGET_HELDOUT)}")
    print()
    print(f"gq triage benchmark, {figures['date']}; python {figures['python']}; "
          f"{figures['cores']} cores; {len(logs)} corpus logs, median of {rounds} runs each")
    print_table([
        ("corpus logs (a few KiB each)", "", ""),
        ("classify, median", f"{per_log_ms:.3f} ms", f"max {figures['classify_max_ms']} ms"),
        ("read the file, median", f"{per_read_ms:.3f} ms", "open + read, page cache"),
        ("ratio", f"{figures['corpus_ratio']:.1f}x", "classify / read"),
        (f"a long log ({size / 2**20:.1f} MiB, {LONG_LINES} lines + a traceback)", "", ""),
        ("read it whole", f"{whole * 1e3:.2f} ms", "what `gq logs` costs"),
        ("tail + classify", f"{daemon * 1e3:.2f} ms", "what the daemon does at a failed end"),
        ("ratio", f"{ratio:.3f}x", f"target <= {TARGET_RATIO:g}x: "
                                    f"{verdict(ratio <= TARGET_RATIO)}"),
    ])
    return 0 if ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
