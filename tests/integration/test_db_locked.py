"""Another process's lock on the daemon's database (an admin's sqlite3 in BEGIN EXCLUSIVE):
every request says in one line who holds it, and a submit is queued once when it lets go."""

from __future__ import annotations

import subprocess
import sys

# A real SQLite client holding the write lock until its stdin closes, as `sqlite3 gq.db` with
# `BEGIN EXCLUSIVE;` typed and left there does.
HOLD = ("import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
        "c.execute('COMMIT')\n")


def test_an_outside_lock_is_named_and_a_submit_is_queued_once_when_it_lets_go(make_host):
    host = make_host("1x80G")
    first = host.submit("--hold", "--", "true")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(host.home / "gq.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        who = f"is locked by another process (pid {holder.pid}, "
        refused = host.gq("release", str(first), check=False)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
        assert who in refused.stderr and refused.stderr.endswith(": not done; try again once it lets go\n")
        assert "internal error" not in refused.stderr
        submit = subprocess.Popen([sys.executable, "-m", "gq", "submit", "--", "true"],
                                  env=host.env, cwd=host.work, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        said = submit.stderr.readline()  # the lock, named, and the submit sent again
        assert who in said and "sending the submit again" in said, said
    finally:
        holder.stdin.close()
        holder.wait(timeout=20)
    out, err = submit.communicate(timeout=60)
    assert submit.returncode == 0, err
    jobs = [j["id"] for j in host.call("list", all=True)["jobs"]]
    assert jobs == [first, int(out)], jobs  # the retries with its key queued it once
    assert host.job(first)["state"] == "held"  # the refused release changed nothing
