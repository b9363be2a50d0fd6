"""unit/: no daemon and no process of its own; a test that starts one belongs in integration/."""

from __future__ import annotations

import os
import subprocess

import pytest


@pytest.fixture(autouse=True)
def no_processes(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("a unit test started a process: it belongs in tests/integration/")

    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
    monkeypatch.setattr(os, "fork", refused)
    monkeypatch.setattr(os, "posix_spawn", refused)
