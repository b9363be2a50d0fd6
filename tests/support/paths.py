"""Where things are: the checkout, the tests' support files and their failure-log corpus."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parent.parent  # the checkout
FAILURES = SUPPORT / "data" / "failures"  # real failure logs, by kind (docs/triage.md)
