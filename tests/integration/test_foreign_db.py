"""A gq.db this gq must not take as it is: written by a newer gq, closed to the daemon by its
owner or mode, or set back behind the jobs whose files are under GQ_HOME."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.support.hosts import wait_for
from tests.support.sysmode import Users, require_root, user_python

from sqlite_utils import Database

from gq import __version__
from gq.store.schema import migrations


def _stop(host) -> None:
    host.stop_daemon()


def test_a_database_of_a_newer_gq_is_refused_naming_both_versions(make_host):
    host = make_host("1x80G")
    job = host.submit("--hold", "--", "true")
    _stop(host)
    db = host.home / "gq.db"
    with sqlite3.connect(db) as conn:  # what a newer gq leaves: a change this one lacks
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                     "VALUES ('gq', 'm099_from_the_future', '2031-01-01')")
        conn.execute("UPDATE meta SET value = '9.1.0' WHERE key = 'written_by'")
    conn.close()
    before = db.read_bytes()
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "written by gq 9.1.0 (schema m099_from_the_future)" in proc.stderr, proc.stderr
    newest = migrations.pending(Database(memory=True))[-1].name
    assert f"this gq {__version__} (schema {newest})" in proc.stderr
    assert "install gq 9.1.0 or later" in proc.stderr
    assert db.read_bytes() == before
    with sqlite3.connect(db) as conn:  # the newer gq's change undone: taken again
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm099_from_the_future'")
    conn.close()
    host.start()
    assert [j["id"] for j in host.call("list", all=True)["jobs"]] == [job]


def test_a_queue_set_back_behind_its_logs_says_so_and_reuses_no_id(make_host):
    """A WAL cut from outside loses the jobs it held: the next daemon says the queue went
    backwards, and no new job takes a lost one's id, nor appends to its log."""
    host = make_host("1x80G")
    kept = host.submit("--hold", "--", "true")
    wal = host.home / "gq.db-wal"
    cut = wal.stat().st_size
    lost = host.submit("--", "echo", "the lost job")
    host.wait_ended(lost)
    host.kill_daemon()
    os.truncate(wal, cut)
    (host.home / "gq.db-shm").unlink()
    host.start()
    assert [j["id"] for j in host.call("list", all=True)["jobs"]] == [kept]
    said = f"the queue went backwards: job {lost} left files under {host.home}"
    assert said in host.gq("daemon", "status").stdout
    assert said in (host.home / "daemon.test.log").read_text()
    new = host.submit("--", "echo", "a new job")
    host.wait_ended(new)
    assert new > lost
    assert host.log(lost) == "the lost job\n"


@pytest.fixture(scope="module")
def user():
    require_root()
    made = Users()
    try:
        yield made.user("o")
    finally:
        made.remove()


def test_a_database_closed_to_the_daemon_names_owner_and_mode_and_the_fix(user):
    """Not damage: the file is whole, the daemon (running as the user) may not write it. The
    line says whose it is and with which mode, and the command it names mends it."""
    python, pythonpath = user_python()
    home = Path(user.home) / "gqh"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": user.home, "USER": user.name,
           "GQ_HOME": str(home), "GQ_SIM_GPUS": "1x80G", "PYTHONPATH": pythonpath}

    def gq(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([python, "-m", "gq", *args], user=user.uid, group=user.gid,
                              env=env, cwd=user.home, capture_output=True, text=True,
                              timeout=60)

    job = int(gq("submit", "--hold", "--", "true").stdout)
    assert gq("daemon", "stop").returncode == 0
    db = home / "gq.db"
    wait_for(lambda: not (home / "gq.db-wal").exists(), what="the daemon to be gone")
    os.chown(db, 0, 0)  # e.g. a `sudo gq` that made it root's
    proc = gq("ls")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    mode = f"{db.stat().st_mode & 0o777:04o}"
    assert f"{db} belongs to root with mode {mode}" in proc.stderr, proc.stderr
    assert "damaged" not in proc.stderr and "restore" not in proc.stderr
    fix = f"`sudo chown {user.name} {db}`"
    assert fix in proc.stderr
    subprocess.run(fix.strip("`").split()[1:], check=True)  # as root already: no sudo
    os.chmod(db, 0o400)
    proc = gq("ls")
    assert proc.returncode == 1 and f"`chmod u+rw {db}`" in proc.stderr, proc.stderr
    assert subprocess.run(["chmod", "u+rw", str(db)], user=user.uid).returncode == 0
    assert str(job) in gq("ls", "--all").stdout
    gq("daemon", "stop")
