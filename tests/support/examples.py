"""How many examples a property test draws: all of them in the full suite (the README's
command), a fifth in the quick loop (`pytest -m "not soak"`, as tests/conftest.py tells)."""

from __future__ import annotations

QUICK_SHARE = 5
quick = False  # set by tests/conftest.py before the test modules are imported


def examples(n: int) -> int:
    return max(10, n // QUICK_SHARE) if quick else n
