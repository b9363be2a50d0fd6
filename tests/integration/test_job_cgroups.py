"""Each job in a cgroup v2 of its own where one is given to the daemon (`[host] cgroups`;
under the system unit, its delegated cgroup): `pids.max` bounds a job's processes
(`[host] max_procs_per_job`), a cancel ends the whole cgroup at once, and the cgroup goes with
the run (issue #34 item 4). Without a cgroup the shim's SIGSTOP sweep does the same
(test_job_files.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gq.daemon.cgroups import prepare
from tests.support.paths import ROOT
from tests.support.cgroupfs import cgroup_dir, cgroup_of, has_pids_controller
from tests.support.hosts import wait_for

FORKER = ("import os, signal, sys, time\n"
          "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
          "made = 0\n"
          "for _ in range(int(sys.argv[1])):\n"
          "    try:\n"
          "        pid = os.fork()\n"
          "    except OSError as e:\n"
          "        print('fork:', e.strerror, flush=True); break\n"
          "    if pid == 0:\n"
          "        os.setsid(); time.sleep(600); os._exit(0)\n"  # out of its session, too
          "    made += 1\n"
          "print('forked', made, flush=True)\n"
          "time.sleep(600)\n")


@pytest.fixture
def cgroups():
    with cgroup_dir() as root:
        yield root


def _host(make_host, root: str, extra: str = ""):
    host = make_host("1x80G", start=False, kill_wait="0.3s")
    config = host.home / "config.toml"
    config.write_text(config.read_text().replace(
        "[host]\n", f'[host]\ncgroups = "{root}"\n{extra}', 1))
    host.start()
    return host


def test_a_job_runs_in_a_cgroup_of_its_own_and_a_cancel_ends_it_whole(make_host, cgroups):
    host = _host(make_host, cgroups)
    job = host.submit("--", sys.executable, "-c", FORKER, "8")
    wait_for(lambda: "forked 8" in host.log(job), what="the job's 8 children")
    group = os.path.join(cgroups, f"job-{job}")
    with open(os.path.join(group, "cgroup.procs")) as f:
        pids = [int(p) for p in f.read().split()]
    assert len(pids) == 9, pids  # the job's process and its children, setsid or not
    assert {cgroup_of(p).rsplit("/", 1)[-1] for p in pids} == {f"job-{job}"}
    host.gq("cancel", str(job))
    ended = host.wait_ended(job)
    assert (ended["state"], ended["exit_code"]) == ("cancelled", 137), ended
    assert [p for p in pids if cgroup_of(p) is not None] == []  # all gone
    assert not os.path.exists(group)  # and its cgroup with them
    after = host.submit("--", "true")  # which ran without leaving one
    assert host.wait_ended(after)["state"] == "completed"
    assert not os.path.exists(os.path.join(cgroups, f"job-{after}"))


def test_max_procs_per_job_bounds_a_fork_bomb_with_pids_max(make_host, cgroups):
    if not has_pids_controller(cgroups):
        pytest.skip("the pids controller is not in this host's cgroup v2 hierarchy (a hybrid "
                    "host keeps it in its v1 one): pids.max cannot be set")
    host = _host(make_host, cgroups, "max_procs_per_job = 8\n")
    job = host.submit("--", sys.executable, "-c", FORKER, "50")
    wait_for(lambda: "forked" in host.log(job), what="the job to stop forking")
    assert "fork: Resource temporarily unavailable" in host.log(job), host.log(job)
    assert "forked 7" in host.log(job)  # 8 processes: the job's own and 7 children
    host.gq("cancel", str(job))
    assert host.wait_ended(job)["state"] == "cancelled"


def test_the_system_daemon_takes_its_cgroup_only_where_it_is_delegated(cgroups):
    """`[host] cgroups = "auto"`: the system unit's cgroup, marked delegated by systemd
    (`Delegate=yes` sets the trusted.delegate xattr); the daemon moves itself into daemon/ and
    makes its jobs' cgroups in jobs/. Undelegated, it takes none: systemd owns that tree."""
    unit = os.path.join(cgroups, "gq.service")
    os.mkdir(unit)
    code = ("from gq.daemon.cgroups import own_cgroup, prepare\n"
            "found, said = prepare('auto', system=True)\n"
            "print(found and found.root, own_cgroup(), said, sep='\\n')\n")

    def in_unit() -> list[str]:
        def enter():
            with open(os.path.join(unit, "cgroup.procs"), "w") as f:
                f.write("0")

        done = subprocess.run([sys.executable, "-c", code], preexec_fn=enter, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    root, own, said = in_unit()
    assert (root, own) == ("None", unit), said
    assert "is not delegated to the daemon (Delegate=yes in gq.service)" in said
    os.setxattr(unit, "trusted.delegate", b"1")
    root, own, said = in_unit()
    assert (root, own) == (f"{unit}/jobs", f"{unit}/daemon"), said
    unit = f"{unit}/daemon"  # a daemon started by the last one, in its cgroup: the same
    assert in_unit()[:2] == [f"{unit[:-len('/daemon')]}/jobs", unit]


def test_a_cgroups_setting_that_is_no_cgroup_runs_jobs_without_one(tmp_path):
    found, said = prepare(str(tmp_path), system=True)
    assert found is None and said == (f"cgroups: {tmp_path} ([host] cgroups) is not a directory "
                                      "of a cgroup v2 hierarchy; jobs run without one")
    assert prepare("off", system=True)[0] is None
    assert prepare("auto", system=False)[0] is None  # a user's daemon: its user owns its cgroup
