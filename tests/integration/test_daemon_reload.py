"""`gq daemon reload` (and SIGHUP) applies config.toml without touching running jobs, listing what
changed, and refuses a bad file keeping the old settings; `gq daemon restart` restarts."""

from __future__ import annotations

import signal

from tests.support.hosts import wait_for
from tests.support.jobs import gated


def _setting(host, section: str, key: str):
    rows = host.call("config")["settings"]
    return next(r["value"] for r in rows if (r["section"], r["key"]) == (section, key))


def test_reload_applies_the_file_lists_the_changes_and_keeps_jobs_running(host):
    gate = host.work / "gate"
    job = host.submit(*gated(gate))
    host.wait_state(job, "running")
    config = host.home / "config.toml"
    config.write_text(config.read_text() + 'max_request = "1M"\n\n[limits]\nhigh_share = 0.5\n')

    out = host.gq("daemon", "reload").stdout.splitlines()
    assert out == [f"reloaded {config}: 1 change(s) applied",
                   "  [limits] high_share: 0.2 -> 0.5",
                   "  [daemon] max_request: 4M -> 1M (at the next gq daemon restart)"]
    assert _setting(host, "limits", "high_share") == 0.5
    assert host.submit("-p", "high", "-g", "2", "--hold", "--", "true")  # 2 of 4 cards: allowed
    assert host.job(job)["state"] == "running"
    assert host.gq("daemon", "reload").stdout.splitlines() == [
        f"reloaded {config}: no changes applied",
        "  [daemon] max_request: 4M -> 1M (at the next gq daemon restart)"]

    config.write_text(config.read_text().replace("high_share = 0.5", "high_share = 2"))
    bad = host.gq("daemon", "reload", check=False)
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1
    assert bad.stderr.startswith(f"gq: {config} line ") and "high_share = 2" in bad.stderr
    assert bad.stderr.rstrip().endswith("the daemon keeps its settings (fix the file, then gq "
                                        "daemon reload)")
    assert _setting(host, "limits", "high_share") == 0.5

    config.write_text(config.read_text().replace("high_share = 2", "high_share = 0.25"))
    host.daemon.send_signal(signal.SIGHUP)
    wait_for(lambda: _setting(host, "limits", "high_share") == 0.25, what="SIGHUP to reload")
    gate.touch()
    assert host.wait_ended(job)["state"] == "completed"


def test_restart_starts_a_new_daemon_that_re_adopts_running_jobs(host):
    gate = host.work / "gate"
    job = host.submit(*gated(gate))
    host.wait_state(job, "running")
    old = host.call("ping")["pid"]
    out = host.gq("daemon", "restart").stdout.strip()
    new = host.call("ping")["pid"]
    try:
        assert new != old
        assert out == (f"restarted (pid {old} -> {new}, {host.home}); 1 running job(s) kept "
                       "running")
        assert host.job(job)["state"] == "running"
        gate.touch()
        assert host.wait_ended(job)["state"] == "completed"
    finally:
        host.gq("daemon", "stop")
