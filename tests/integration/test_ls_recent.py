"""`gq ls` keeps listing your jobs that ended recently, their outcome coloured on a terminal,
until `gq clean` or [daemon] show_ended; `gq ls --all` takes --last N and --since DUR."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from tests.support.hosts import host_with


def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines()[1:]}


def test_ended_jobs_stay_in_ls_until_cleaned_and_all_takes_last_and_since(host):
    failed = host.submit("-n", "crashes", "--", "sh", "-c", "exit 3")
    done = host.submit("-n", "works", "--", "true")
    host.wait_ended(failed)
    host.wait_ended(done)
    rows = _rows(host.gq("ls").stdout)
    assert rows[str(failed)][3] == "failed" and rows[str(failed)][-3:] == ["exit", "3:", "unknown"]
    assert rows[str(done)][3] == "completed"
    assert host.call("list")["jobs"] == []  # scripts (and --json) see the active jobs, as before

    assert host.gq("ls", "--all", "--last", "1").stdout.splitlines()[1].split()[0] == str(done)
    assert set(_rows(host.gq("ls", "--all", "--since", "1h").stdout)) == {str(failed), str(done)}
    bad = host.gq("ls", "--all", "--since", "lately", check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("gq: --since ")

    assert host.gq("clean").stdout.strip() == "cleared 2 ended job(s) from gq ls"
    assert _rows(host.gq("ls").stdout) == {}
    assert set(_rows(host.gq("ls", "--all").stdout)) == {str(failed), str(done)}
    later = host.submit("--", "sh", "-c", "exit 1")
    host.wait_ended(later)
    assert set(_rows(host.gq("ls").stdout)) == {str(later)}


def test_show_ended_zero_lists_active_jobs_only(make_host):
    host = host_with(make_host, 'show_ended = "0s"\n')  # under [daemon], the file's last table
    job = host.submit("--", "true")
    host.wait_ended(job)
    assert _rows(host.gq("ls").stdout) == {}


def test_outcomes_are_coloured_on_a_terminal_only(host):
    job = host.submit("--", "sh", "-c", "exit 2")
    host.wait_ended(job)
    assert "\033[" not in host.gq("ls").stdout  # a pipe: no colour
    assert "\033[31mfailed\033[0m" in _on_a_terminal(host, host.env)
    assert "\033[" not in _on_a_terminal(host, {**host.env, "NO_COLOR": "1"})


def _on_a_terminal(host, env: dict) -> str:
    leader, follower = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "gq", "ls"], env=env, stdout=follower,
                          stderr=subprocess.PIPE, timeout=60)
    os.close(follower)
    out = os.read(leader, 1 << 16).decode()
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    return out
