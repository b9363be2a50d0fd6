"""A damaged or vanished gq.db: the daemon refuses to start, naming the newest backup, and
never starts an empty queue over the user's; `gq daemon restore` puts the backup back."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.hosts import wait_for
from tests.support.hostile import integrity_check

from gq.store import Store
from gq.store.backup import list_backups, take_backup
from gq.store.integrity import read_wal


def _truncate_half(db):
    os.truncate(db, db.stat().st_size // 2)


def _cut_last_page(db):
    os.truncate(db, db.stat().st_size - 4096)


def _garbage_header(db):
    with open(db, "r+b") as f:
        f.write(b"\x00garbage" * 8)


def _garbage_inside(db):
    with open(db, "r+b") as f:  # page 2 holds the jobs table's root (see test below)
        f.seek(4096 + 8)
        f.write(random.Random(10).randbytes(256))


def _empty(db):
    os.truncate(db, 0)


def _missing(db):
    db.unlink()


DAMAGE = {"truncated to half": _truncate_half, "last page cut off": _cut_last_page,
          "garbage header": _garbage_header, "garbage in a table page": _garbage_inside,
          "emptied": _empty, "deleted": _missing}


def _jobs_in(backup) -> int:
    conn = sqlite3.connect(backup)
    try:
        return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
    finally:
        conn.close()


def _queue_and_back_up(host, jobs: int) -> list[int]:
    ids = [host.submit("--hold", "-n", f"kept{i}", "--", "echo", str(i)) for i in range(jobs)]
    host.stop_daemon()
    host.start()  # a starting daemon backs up the queue as it found it
    wait_for(lambda: list_backups(host.home / "gq.db"), what="the backup taken at start")
    return ids


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_database_is_refused_naming_the_newest_backup(make_host, damage):
    host = make_host("1x80G")
    kept = _queue_and_back_up(host, 5)
    lost = host.submit("--hold", "--", "echo", "after the backup")
    # Stopped cleanly, so that every page is in gq.db (a -wal file could mend a damaged one).
    host.stop_daemon()
    db = host.home / "gq.db"
    assert not (host.home / "gq.db-wal").exists()
    damage(db)
    damaged = db.read_bytes() if db.exists() else None

    newest = list_backups(db)[0]
    proc = host.gq("ls", check=False)  # the CLI starts the daemon, which refuses
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(
        "gq: the daemon failed to start: ")
    assert str(newest) in proc.stderr and "5 jobs" in proc.stderr, proc.stderr
    assert "gq daemon restore" in proc.stderr
    # Nothing was started over the user's queue: the file is as it was.
    assert (db.read_bytes() if db.exists() else None) == damaged

    out = host.gq("daemon", "restore").stdout
    assert str(newest) in out
    host.start()
    jobs = {j["id"]: j for j in host.call("list", all=True)["jobs"]}
    assert sorted(jobs) == kept and lost not in jobs
    assert [jobs[i]["name"] for i in kept] == [f"kept{i}" for i in range(5)]
    assert integrity_check(db) == ["ok"]
    if damaged is not None:  # the damaged file is kept, not deleted
        (old,) = host.home.glob("gq.db.damaged-*Z")
        assert old.read_bytes()[:100] == damaged[:100]


def test_a_damaged_database_without_a_backup_is_refused_too(make_host):
    host = make_host("1x80G")
    host.submit("--hold", "--", "true")
    host.stop_daemon()  # every page in gq.db: after a kill -9 the WAL would mend it
    shutil.rmtree(host.home / "backups")
    _truncate_half(host.home / "gq.db")
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "there is no backup" in proc.stderr and ".recover" in proc.stderr


def test_restore_refuses_while_a_daemon_runs_and_continues_ids_above_the_logs(make_host):
    host = make_host("1x80G")
    kept = _queue_and_back_up(host, 2)
    ran = host.submit("--", "echo", "after the backup")  # leaves logs/ID.out behind
    host.wait_ended(ran)
    proc = host.gq("daemon", "restore", check=False)
    assert proc.returncode == 1 and "stop it first" in proc.stderr
    host.stop_daemon()
    host.gq("daemon", "restore")
    host.start()
    assert sorted(j["id"] for j in host.call("list", all=True)["jobs"]) == kept
    # A new job does not take the id, and the log, of the one the backup does not know.
    assert host.submit("--hold", "--", "true") > ran


def test_backups_rotate_while_the_queue_changes(make_host):
    host = make_host("1x80G", start=False)
    with open(host.home / "config.toml", "a") as config:
        config.write('\n[backup]\nevery = "1s"\nkeep = 2\n')
    host.start()
    db = host.home / "gq.db"
    ids = []

    def backed_up_lately():
        ids.append(host.submit("--hold", "--", "true"))
        newest = list_backups(db)[:1]
        return bool(newest) and _jobs_in(newest[0]) >= 3

    began = time.monotonic()
    wait_for(backed_up_lately, timeout=30, interval=0.3, what="a backup holding 3 jobs")
    assert len(list_backups(db)) <= 2
    print(f"\nbackup with {len(ids)} jobs after {time.monotonic() - began:.1f}s")


def test_the_backup_schedule_follows_new_jobs_and_time(tmp_path):
    import asyncio

    from gq.config import BackupConfig
    from gq.daemon.backups import BackupSchedule
    from gq.model import Job, JobState
    from gq.store import Store

    db = tmp_path / "gq.db"
    store = Store(db)
    schedule = BackupSchedule(store, db, BackupConfig(every=3600.0, jobs=3, keep=2))
    loop = asyncio.new_event_loop()

    def queue(n: int) -> None:
        for _ in range(n):
            store.insert_job(Job(id=0, user="ann", uid=1000, host="h", command=["true"],
                                 cwd="/", state=JobState.HELD), 0.0)

    def back_up(now: float) -> None:
        assert schedule.due(now)
        schedule.tick(loop, now)
        loop.run_until_complete(schedule.running)

    try:
        back_up(1000.0)  # at start, whatever the queue
        assert not schedule.due(5000.0)  # nothing changed since, however long ago
        queue(3)
        assert not schedule.due(1030.0)  # 3 new jobs, but at most one backup a minute
        back_up(1061.0)
        queue(1)
        assert not schedule.due(2000.0)  # one new job: wait for `every`
        back_up(1061.0 + 3600)
        assert [_jobs_in(b) for b in list_backups(db)] == [4, 3]  # the newest two kept
    finally:
        loop.close()
        store.close()


def test_the_check_at_start_changes_nothing_it_checks(make_host):
    """A damaged gq.db beside a WAL: the check reads both and leaves both as they were (it
    once checkpointed the WAL into the damaged file and deleted it)."""
    host = make_host("1x80G")
    host.submit("--hold", "--", "true")
    host.stop_daemon()  # every page in gq.db ...
    host.start()
    host.submit("--hold", "--", "true")  # ... and the newest in a WAL
    host.kill_daemon(signal.SIGKILL)
    db, wal = host.home / "gq.db", host.home / "gq.db-wal"
    in_wal = read_wal(wal).holds
    assert in_wal
    with open(db, "r+b") as f:  # garbage in the pages the WAL cannot mend
        for page in [p for p in range(2, db.stat().st_size // 4096 + 1) if p not in in_wal]:
            f.seek((page - 1) * 4096 + 8)
            f.write(random.Random(page).randbytes(256))
    before = db.read_bytes(), wal.read_bytes()
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and "is damaged" in proc.stderr, proc.stderr
    assert (db.read_bytes(), wal.read_bytes()) == before


def test_the_advice_names_the_backup_that_holds_the_jobs(make_host):
    host = make_host("1x80G")
    kept = _queue_and_back_up(host, 3)
    ran = host.submit("--", "echo", "after the backup")  # leaves logs/ID.out behind
    host.wait_ended(ran)
    host.stop_daemon()
    db = host.home / "gq.db"
    with_jobs = list_backups(db)[0]  # the one taken at the second start
    # A newer backup of an empty queue: a daemon started once over an emptied gq.db.
    empty = Path(tempfile.mkdtemp(dir=host.home)) / "gq.db"
    Store(empty).close()
    later = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() + 3600))
    newest = take_backup(empty, keep=1).rename(with_jobs.parent / f"gq-{later}.db")
    _truncate_half(db)

    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"`gq daemon restore {with_jobs}`" in proc.stderr and "3 jobs" in proc.stderr
    assert f"it lacks job {ran}," in proc.stderr, proc.stderr
    assert str(newest) not in proc.stderr
    host.gq("daemon", "restore")  # the one the line names, not the newest
    host.start()
    assert sorted(j["id"] for j in host.call("list", all=True)["jobs"]) == kept
    host.stop_daemon()

    # No backup with a job: the line says so, and restore puts back none of them.
    for backup in list_backups(db):
        if backup != newest:
            backup.unlink()
    _truncate_half(db)
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and "no backup in" in proc.stderr, proc.stderr
    assert "holds a job" in proc.stderr and ".recover" in proc.stderr
    proc = host.gq("daemon", "restore", check=False)
    assert proc.returncode == 1 and "holds a job" in proc.stderr, proc.stderr
