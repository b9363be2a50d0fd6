#!/usr/bin/env python3
"""Run every marked console block of docs/ again (tests/support/doc_output.py) and write what gq
printed into the docs; `--check` prints the differences and fails instead."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.support.doc_output import blocks, differences, run_all, unmarked, write_back

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail on a difference, write nothing")
    parser.add_argument("docs", nargs="*", type=Path, help="only these files (default: docs/*.md)")
    args = parser.parse_args()
    for where in unmarked(args.docs or None):
        print(f"{where}: a console block with no <!-- doc-output: SESSION --> mark "
              "(or <!-- doc-output: not run (WHY) -->)", file=sys.stderr)
    found = blocks([p.resolve() for p in args.docs] or None)
    run_all(found)
    diffs = differences(found)
    if args.check:
        print("\n\n".join(diffs))
        return 1 if diffs else 0
    for path in write_back(found):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
