"""Where things are: the checkout, the tests' support files and their failure-log corpus."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parent.parent  # the checkout
TRIAGE = ROOT / "tests" / "data" / "triage"  # real failure logs, labelled (manifest.csv, docs/triage.md)
FAILURES = TRIAGE / "dev"  # the part the rules were written with
