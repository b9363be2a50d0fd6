"""One root daemon for every user: jobs run as their submitters, nobody touches what is not
theirs, identity comes from the kernel, and log paths cannot be turned against root."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.hosts import wait_for
from tests.support.cgroupfs import cgroup_dir
from tests.support.hung_mount import blocked_in_fuse, hung_mount
from tests.support.jobs import gated

from tests.support.paths import ROOT
from gq.protocol import VERSION
from tests.support.sysmode import SystemHost, User, Users, group_id, readable_copy, require_root


@pytest.fixture(scope="module")
def users():
    require_root()
    made = Users()
    try:
        made.extra = made.group("x")  # a supplementary group of ann's alone
        made.admins = made.group("adm")
        made.ann = made.user("a", groups=(made.extra,))
        made.bob = made.user("b")
        made.cat = made.user("c", groups=(made.admins,))  # an admin by group
        yield made
    finally:
        made.remove()


@pytest.fixture(scope="module")
def cgroups():
    """A cgroup v2 directory for the jobs of the module's daemon; None where none can be made
    (the tests that need one skip)."""
    with cgroup_dir(required=False) as root:
        yield root


@pytest.fixture(scope="module")
def host(users, cgroups):
    # The daemon runs with supplementary groups of its own, which no job may inherit.
    h = SystemHost(config=f'[access]\nadmins = "{users.admins}"\n',
                   daemon_groups=[0, group_id(users.extra)], daemon='start_timeout = "2s"',
                   host=f'cgroups = "{cgroups}"\n' if cgroups else "")
    try:
        yield h.start()
    finally:
        h.close()


PING = json.dumps({"v": VERSION, "op": "ping", "args": {}}) + "\n"
ID_SCRIPT = 'id -u; id -g; id -G; umask; echo "$HOME $USER"; echo "$GQ_CHECKPOINT_DIR"'


def _identity(host: SystemHost, user: User, job_id: int) -> list[str]:
    assert host.wait_ended(job_id)["state"] == "completed", host.job(job_id)
    return host.user_file(user, "logs", f"{job_id}.out").read_text().splitlines()


def test_each_job_runs_as_its_submitter_with_exactly_their_groups_umask_and_home(host, users):
    ann, bob = users.ann, users.bob
    a = host.submit(ann, "-g", "0", "--", "sh", "-c", ID_SCRIPT, umask=0o027)
    b = host.submit(bob, "-g", "0", "--", "sh", "-c", ID_SCRIPT, umask=0o077)
    uid, gid, groups, umask, home, ckpt = _identity(host, ann, a)
    assert (int(uid), int(gid)) == (ann.uid, ann.gid)
    assert sorted(map(int, groups.split())) == ann.groups()  # with the extra group
    assert group_id(users.extra) in ann.groups()
    assert (umask, home) == ("0027", f"{ann.home} {ann.name}")
    uid, gid, groups, umask, home, ckpt_b = _identity(host, bob, b)
    assert (int(uid), int(gid), groups.split()) == (bob.uid, bob.gid, [str(bob.gid)])
    assert group_id(users.extra) not in map(int, groups.split())  # not the daemon's groups
    assert (umask, home) == ("0077", f"{bob.home} {bob.name}")
    # Output and checkpoints are the user's own, in a directory only they can enter.
    for user, job_id, path in ((ann, a, ckpt), (bob, b, ckpt_b)):
        for f in (host.user_file(user, "logs", f"{job_id}.out"), host.user_file(user),
                  host.user_file(user, "checkpoints", str(job_id))):
            st = os.lstat(f)
            assert (st.st_uid, st.st_gid) == (user.uid, user.gid), f
        assert stat.S_IMODE(os.stat(host.user_file(user)).st_mode) == 0o700
        assert path == str(host.user_file(user, "checkpoints", str(job_id)))
    assert stat.S_IMODE(os.stat(host.user_file(ann, "logs", f"{a}.out")).st_mode) == 0o600
    # The daemon's database, with everyone's environment in it, is root's alone.
    assert stat.S_IMODE(os.stat(host.state / "gq.db").st_mode) == 0o600
    assert host.gq(ann, "logs", str(a)).stdout.splitlines()[0] == str(ann.uid)
    denied = host.gq(bob, "logs", str(a), check=False)
    assert denied.returncode == 1
    assert denied.stderr == (f"gq: job {a} is {ann.name}'s: its output "
                             f"{host.user_file(ann, 'logs', f'{a}.out')} is readable by "
                             f"{ann.name} only\n")


@pytest.mark.parametrize("action", ["cancel", "hold", "release", "requeue"])
def test_another_user_cannot_act_on_a_job_and_the_refusal_is_recorded(host, users, action):
    ann, bob = users.ann, users.bob
    if action == "hold":  # a pending job: one that waits for a held one
        job = host.submit(ann, "--after", str(host.submit(ann, "--hold", "--", "true")), "--",
                          "true")
    elif action == "requeue":  # an ended job
        job = host.submit(ann, "-g", "0", "--", "true")
        host.wait_ended(job)
    else:
        job = host.submit(ann, "--hold", "--", "true")
    before = host.job(job)["state"]
    denied = host.gq(bob, action, str(job), check=False)
    assert denied.returncode == 1 and denied.stdout == ""
    assert denied.stderr == (f"gq: job {job} belongs to {ann.name}; only {ann.name} or an "
                             f"admin (root or a member of group {users.admins}) may {action} "
                             "it; nothing was done\n")
    after = host.job(job)
    assert after["state"] == before
    assert any(e["detail"] == f"refused: {bob.name} (uid {bob.uid}) may not {action} it"
               for e in after["events"])
    assert f"refused: {bob.name} (uid {bob.uid}) may not {action}" in host.daemon_log()


def test_only_the_owner_and_admins_read_the_environment_and_admins_act_on_all(host, users):
    ann, bob, cat = users.ann, users.bob, users.cat
    secret = {"PYTHONPATH": host.pythonpath, "API_TOKEN": "s3cret"}
    job = host.submit(ann, "--hold", "-g", "0", "--", "sleep", "600",
                      env=host.user_env(ann, **secret))
    assert "env" not in json.loads(host.gq(bob, "show", "--json", str(job)).stdout)
    assert json.loads(host.gq(ann, "show", "--json", str(job)).stdout)["env"]["API_TOKEN"] == \
        "s3cret"
    assert json.loads(host.gq(cat, "show", "--json", str(job)).stdout)["env"]["API_TOKEN"] == \
        "s3cret"
    # Everyone sees the queue (the default), with the owner of each job.
    listed = json.loads(host.gq(bob, "ls", "--json").stdout)
    assert {(j["id"], j["user"]) for j in listed} >= {(job, ann.name)}
    assert host.gq(cat, "release", str(job)).stdout == f"job {job}: released\n"
    assert host.gq(cat, "cancel", str(job)).stdout == f"job {job}: cancelled\n"
    assert host.wait_ended(job)["reason"] == f"cancelled by {cat.name}"


def test_a_user_field_in_a_raw_request_is_ignored(host, users):
    ann, bob = users.ann, users.bob
    spoof = {"user": ann.name, "uid": ann.uid, "caller": ann.name}
    replies = host.raw(bob, [
        {"v": VERSION, "op": "ping", "args": spoof},
        {"v": VERSION, "op": "submit", "user": ann.name, "uid": ann.uid, "args": {
            **spoof, "command": ["sh", "-c", "id -u"], "cwd": bob.home, "gpus": 0,
            "env": {"PATH": "/usr/bin:/bin"}}},
    ])
    assert replies[0]["result"]["user"] == bob.name and replies[0]["result"]["uid"] == bob.uid
    job = replies[1]["result"]
    assert job["user"] == bob.name
    assert host.wait_ended(job["id"])["state"] == "completed"
    assert host.user_file(bob, "logs", f"{job['id']}.out").read_text() == f"{bob.uid}\n"
    # ... and acting on another's job while claiming to be them changes nothing.
    theirs = host.submit(ann, "--hold", "--", "true")
    (reply,) = host.raw(bob, [{"v": VERSION, "op": "cancel", "user": ann.name,
                               "args": {**spoof, "ids": [str(theirs)]}}])
    assert not reply["ok"] and f"belongs to {ann.name}" in reply["error"]
    assert host.job(theirs)["state"] == "held"


def user_logs(host: SystemHost, user: User) -> Path:
    """The user's logs directory, made by a first job of theirs if there is none yet."""
    logs = host.user_file(user, "logs")
    if not logs.is_dir():
        host.wait_ended(host.submit(user, "-g", "0", "--", "true"))
    return logs


@pytest.mark.parametrize("log", ["out", "err"])
def test_a_link_planted_at_a_log_path_is_not_followed(host, users, log):
    ann = users.ann
    victim = host.root / f"victim-{log}"  # root's, readable by all: root must not write it
    victim.write_text("precious\n")
    victim.chmod(0o644)
    user_logs(host, ann)
    job = host.submit(ann, "--hold", "-g", "0", "--", "echo", "overwritten")
    logs = host.user_file(ann, "logs")
    planted = logs / f"{job}.{log}"
    code = f"import os; os.symlink({str(victim)!r}, {str(planted)!r})"
    assert host.run_as(ann, [host.python, "-c", code]).returncode == 0
    assert planted.is_symlink()
    host.gq(ann, "release", str(job))
    ended = host.wait_ended(job)
    assert (ended["state"], ended["exit_code"]) == ("failed", 127)
    assert victim.read_text() == "precious\n"
    assert ended["reason"] == (f"could not start the job: {planted}: not a regular file (a "
                               "symbolic link); remove it and submit again")
    if log == "out":  # the other log was opened (as ann), and says why
        assert "could not start the job" in (logs / f"{job}.err").read_text()


def test_a_fifo_planted_at_a_log_path_fails_the_run_and_frees_its_cards(host, users):
    """Before #34 the job's process blocked in open() of the FIFO, and its shim waiting for
    it: the job showed running and its four cards stayed held, also after `gq cancel`."""
    ann = users.ann
    logs = user_logs(host, ann)
    job = host.submit(ann, "--hold", "-g", "4", "--", "true")
    planted = logs / f"{job}.out"
    code = f"import os; os.mkfifo({str(planted)!r})"
    assert host.run_as(ann, [host.python, "-c", code]).returncode == 0
    host.gq(ann, "release", str(job))
    ended = host.wait_ended(job)
    assert ended["state"] == "failed", ended
    assert "not a regular file (a FIFO or a device)" in ended["reason"], ended["reason"]
    after = host.submit(ann, "-g", "4", "--", "true")  # the four cards are free
    assert host.wait_ended(after)["state"] == "completed"


def test_every_users_burn_registers_on_the_simulated_cards_counted_to_its_job(host, users):
    """Before #34 a burn in a system daemon's job could not register (the simulator's files
    are root's): no memory, OOM or offender could be rehearsed. Now the daemon registers it,
    as the process the kernel says is calling, and no user writes the simulation's files."""
    ann, bob = users.ann, users.bob
    burn = [host.python, "-m", "gq.sim.burn", "--util", "50", "--mem"]
    a = host.submit(ann, "--mem", "30G", "--", *burn, "20G")
    b = host.submit(bob, "--mem", "30G", "--", *burn, "10G")

    def held() -> dict:
        return {j["id"]: j["used"] for card in host.call("gpus") for j in card["jobs"]}

    wait_for(lambda: held() == {a: 20 << 30, b: 10 << 30}, what="both burns on the cards")
    cards = json.loads(host.gq(bob, "gpus", "--json").stdout)  # what gq gpus shows bob
    assert {j["id"]: j["used"] for c in cards for j in c["jobs"]} == {a: 20 << 30, b: 10 << 30}
    card = next(c for c in cards if any(j["id"] == a for j in c["jobs"]))
    ann_pid = next(p["pid"] for p in card["processes"] if p["used_memory"] == 20 << 30)
    # Bob can neither write the simulation's files nor register a process not his own.
    sim = host.state / "sim"
    write = f"open({str(sim / 'procs' / f'{ann_pid}.json')!r}, 'w')"
    assert host.run_as(bob, [host.python, "-c", write]).returncode != 0
    claim = {"visible": str(card["index"]), "mem": 1 << 30, "pid": ann_pid}
    over = {"visible": str(card["index"]), "mem": 81 << 30}
    mine, oom = [r["result"] for r in host.raw(bob, [
        {"v": VERSION, "op": "sim_register", "args": claim},
        {"v": VERSION, "op": "sim_register", "args": over}])]
    assert mine["pid"] != ann_pid  # his own client process, gone with it
    assert oom["oom"].startswith("torch.OutOfMemoryError: CUDA out of memory.")
    assert held() == {a: 20 << 30, b: 10 << 30}
    host.call("cancel", ids=[str(a), str(b)])
    assert {host.wait_ended(a)["state"], host.wait_ended(b)["state"]} == {"cancelled"}


def test_a_job_whose_start_hangs_on_a_mount_frees_its_cards_on_cancel_or_in_time(host, users):
    """A job whose directory is on a hung mount: its process, as its user, blocks entering it.
    Before #34 its shim blocked reading the child's start report: `gq cancel` answered
    "cancelled", and the four cards stayed held until the mount came back. Now a cancel ends
    it within kill_wait (2s). A job whose #SBATCH -o log is there (its shim, as root, looked
    the path up itself, and blocked) fails once [daemon] start_timeout (2s) has passed; both
    in one line, the cards freed."""
    ann = users.ann
    mount = host.root / "nfs"
    (mount / "data").mkdir(parents=True)
    mount.chmod(0o755)
    (mount / "data").chmod(0o777)
    where = str(mount / "data")
    cancelled = host.submit(ann, "--hold", "-g", "4", "--cwd", where, "--", "true")
    script = os.path.join(ann.home, "logged.sh")
    host.run_as(ann, ["sh", "-c", f"printf '#!/bin/sh\\n#SBATCH -o {where}/out.log\\ntrue\\n' "
                      f"> {script} && chmod +x {script}"])
    timed_out = host.submit(ann, "--hold", "-g", "4", script)
    with hung_mount(str(mount)):
        host.gq(ann, "release", str(cancelled))
        wait_for(blocked_in_fuse, what="the job's start to hang on the mount")
        host.gq(ann, "cancel", str(cancelled))
        ended = host.wait_ended(cancelled, timeout=15)
        assert (ended["state"], ended["exit_code"]) == ("cancelled", 137), ended
        host.gq(ann, "release", str(timed_out))  # the four cards are free for it
        ended = host.wait_ended(timed_out, timeout=20)
        assert ended["state"] == "failed", ended
        assert ended["reason"] == (f"the job did not start within 2s: opening its logs, "
                                   f"entering {ann.home} or starting {script!r} hangs (a hung "
                                   "mount?); killed"), ended
    after = host.submit(ann, "-g", "4", "--", "true")
    assert host.wait_ended(after)["state"] == "completed"


def test_a_users_job_cannot_leave_its_cgroup_nor_make_one(host, users, cgroups):
    """Under the system daemon each job runs in a cgroup of its own, root's: its processes,
    as its user, can neither move themselves out (the parent's and the top's cgroup.procs are
    root's) nor make cgroups of their own in it, so `pids.max` and the cancel reach them all."""
    if cgroups is None:
        pytest.skip("no cgroup v2 hierarchy for the daemon's jobs here")
    top = os.path.dirname(cgroups)
    script = (f"echo $$ > {cgroups}/cgroup.procs && echo left-for-the-parent; "
              f"echo $$ > {top}/cgroup.procs && echo left-for-the-top; "
              f"mkdir {cgroups}/job-$GQ_JOB_ID/mine && echo made-one; "
              "grep '^0::' /proc/self/cgroup")
    job = host.submit(users.ann, "-g", "0", "--", "sh", "-c", script)
    assert host.wait_ended(job)["state"] == "completed"
    out = host.user_file(users.ann, "logs", f"{job}.out").read_text()
    err = host.user_file(users.ann, "logs", f"{job}.err").read_text()
    assert out.strip().endswith(f"/job-{job}"), out  # where it ran, to its end
    assert "left-for" not in out and "made-one" not in out, out
    assert err.count("Permission denied") == 3, err
    assert not os.path.exists(os.path.join(cgroups, f"job-{job}"))  # gone with the run


def test_notifications_of_a_user_run_as_that_user(host, users):
    ann = users.ann
    job = host.submit(ann, "-g", "0", "--notify", "id -u; id -G", "--", "true")
    host.wait_ended(job)
    out = host.user_file(ann, "logs", f"{job}.notify")
    wait_for(lambda: out.exists() and out.read_text().count("\n") == 2,
             what="the notification's output")
    uid, groups = out.read_text().splitlines()
    assert int(uid) == ann.uid and sorted(map(int, groups.split())) == ann.groups()
    assert os.lstat(out).st_uid == ann.uid


def test_config_show_names_where_each_setting_came_from(host, users):
    shown = host.gq(users.bob, "config", "show").stdout
    assert f"# its file: {host.config} (read)" in shown
    assert f'admins = "{users.admins}"' in shown and f"# {host.config}:" in shown
    rows = json.loads(host.gq(users.bob, "config", "show", "--json").stdout)["settings"]
    by_key = {(r["section"], r["key"]): r for r in rows}
    assert by_key["daemon", "tick"] == {"section": "daemon", "key": "tick", "value": "0.2s",
                                        "source": f"{host.config}:6"}
    assert by_key["access", "queue"]["source"] == "default"


def test_the_cli_finds_the_system_daemon_and_starts_none_of_its_own(users):
    bob = users.bob
    h = SystemHost()
    try:
        status = h.gq(bob, "daemon", "status", check=False)
        assert status.returncode == 3 and "the system daemon" in status.stdout
        h.start()
        status = h.gq(bob, "daemon", "status").stdout
        assert status.startswith("running: the system daemon for every user, pid")
        assert h.gq(bob, "daemon", "stop", check=False).stderr == \
            "gq: only root can stop the system daemon\n"
        # gq top reads it too, as gq rpc relays to it
        assert _top_sees(h, bob).startswith("4x SimGPU-80G")
        assert json.loads(h.gq(bob, "rpc", input=PING).stdout)["result"]["system"]
        # A daemon of one's own on the real cards would hand them out a second time: refused.
        own = h.user_env(bob, GQ_HOME=f"{bob.home}/gqh")
        second = h.gq(bob, "daemon", "start", env=own, check=False)
        assert second.returncode == 1 and "handed out by its system daemon" in second.stderr
        assert not os.path.exists(f"{bob.home}/gqh/gq.sock")
        assert "unset GQ_HOME" in h.gq(bob, "daemon", "stop", env=own, check=False).stderr
        h.stop()
        down = h.gq(bob, "ls", check=False)
        assert down.returncode == 1 and "the system daemon does not answer" in down.stderr
        assert not os.path.exists(os.path.join(bob.home, ".local", "state", "gq"))
        # No advice anywhere to start a daemon of one's own while the system one is down.
        relayed = h.gq(bob, "rpc", input=PING).stdout
        for said in (down.stderr, _top_sees(h, bob), relayed):
            assert "the system daemon does not answer" in said, said
            assert "gq daemon start" not in said and "GQ_HOME" not in said, said
        # GQ_HOME with simulated cards asks for a daemon of one's own, as before.
        own["GQ_SIM_GPUS"] = "1x10G"
        started = h.gq(bob, "ls", env=own)
        assert "started the daemon" in started.stderr
        h.gq(bob, "daemon", "stop", env=own)
        refused = h.gq(bob, "daemon", "run", "--system", check=False)
        assert refused.returncode == 1 and "must run as root" in refused.stderr
    finally:
        h.close()


def _top_sees(host: SystemHost, user: User) -> str:
    """What `gq top` run by `user` reads from its daemon: its cards, or why it cannot."""
    code = ("from gq.cli.top_cmd import top_app\n"
            "snap = next(iter(top_app().sources.values())).fetch(0)\n"
            "print(snap.error or f'{len(snap.cards)}x ' + ' '.join(c.name for c in snap.cards))")
    return host.run_as(user, [host.python, "-c", code]).stdout


def test_private_queues_hide_others_jobs_and_admins_see_all(users):
    ann, bob, cat = users.ann, users.bob, users.cat
    h = SystemHost(config=f'[access]\nqueue = "own"\nadmins = "{users.admins}"\n').start()
    try:
        job = h.submit(ann, "--hold", "--", "true")
        running = h.submit(ann, "--mem", "10G", "--", "sleep", "600")
        wait_for(lambda: h.job(running)["state"] == "running", what="ann's job to start")
        assert json.loads(h.gq(bob, "ls", "--json").stdout) == []
        assert json.loads(h.gq(bob, "ls", "--json", "-u", ann.name).stdout) == []
        shown = h.gq(bob, "show", str(job), check=False)
        assert shown.returncode == 2 and shown.stderr == f"gq: job id {job}: no such job of yours\n"
        assert {j["id"] for j in json.loads(h.gq(cat, "ls", "--json").stdout)} == {job, running}
        cards = json.loads(h.gq(bob, "gpus", "--json").stdout)
        (slot,) = [j for c in cards for j in c["jobs"]]
        assert (slot["id"], slot["user"], slot["mem"]) == (None, None, 10 << 30)
    finally:
        h.close()


def test_connections_are_capped_per_user_idle_ones_dropped_and_requests_bounded(users):
    bob = users.bob
    h = SystemHost(daemon='max_connections_per_user = 3\nidle_timeout = "1s"\n'
                          'max_request = "64K"\n').start()
    code = (
        "import socket, sys, time\n"
        "def conn():\n"
        "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); return s\n"
        "held = [conn() for _ in range(3)]\n"
        "extra = conn(); print('4th:', extra.makefile().readline().strip())\n"
        "t = time.monotonic(); print('idle closed:', held[0].recv(1) == b'', "
        "round(time.monotonic() - t) <= 3)\n"
        "big = conn(); big.sendall(b'{' + b' ' * (100 << 10) + b'}\\n')\n"
        "print('big:', big.makefile().readline().strip())\n"
    )
    try:
        out = h.run_as(bob, [h.python, "-c", code, str(h.socket)]).stdout.splitlines()
        assert out[0].startswith('4th: {"ok":false,"error":"' + bob.name + " already has 3 "
                                 "connections open to the daemon")
        assert out[1] == "idle closed: True True"
        assert "request larger than 64K refused ([daemon] max_request)" in out[2]
        assert h.gq(bob, "ls").returncode == 0  # all closed again: bob is served
        assert h.call("ping")  # root is never capped
    finally:
        h.close()


def test_an_unsafe_or_bad_configuration_is_refused_at_start_with_its_line(users):
    h = SystemHost(config='[access]\nqueue = "everyone"\n')
    try:
        with pytest.raises(AssertionError, match=rf"{h.config} line 9: \[access\] queue = "
                                                 r"'everyone': expected \"all\""):
            h.start()
        h.config.write_text("")
        h.config.chmod(0o666)  # anyone could make themselves an admin
        with pytest.raises(AssertionError, match="with mode 0666: whoever can write it could "
                                                 "act as root through gq"):
            h.start()
    finally:
        h.close()


def test_a_job_cannot_enter_a_directory_its_user_cannot(host, users):
    ann, bob = users.ann, users.bob
    private = os.path.join(ann.home, "private")
    assert host.run_as(ann, ["mkdir", "-m", "0711", private]).returncode == 0
    os.chmod(ann.home, 0o711)  # bob may pass through ann's home, not into private/
    os.chmod(private, 0o700)
    job = host.submit(bob, "-g", "0", "--cwd", private, "--", "pwd")
    ended = host.wait_ended(job)
    assert (ended["state"], ended["exit_code"]) == ("failed", 127)
    assert ended["reason"] == f"cannot enter {private}: Permission denied"


def test_the_users_gq_works_from_a_checkout_in_a_private_directory(host, users, tmp_path):
    """The README's test command must pass wherever a newcomer clones: a checkout in a 0700
    directory is closed to the test's users, so they run a readable copy of it."""
    private = tmp_path / "clone"
    (private / "gq").mkdir(parents=True)
    shutil.copytree(ROOT / "gq", private / "gq", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.chmod(tmp_path, 0o700)
    code = "import gq.cli.entry, typer, sqlite_utils, psutil; print('ok')"
    closed = host.run_as(users.ann, [host.python, "-c", code],
                         env=host.user_env(users.ann, PYTHONPATH=str(private)))
    assert closed.returncode != 0 and "No module named 'gq" in closed.stderr
    tree = readable_copy(private)
    opened = host.run_as(users.ann, [host.python, "-c", code],
                         env=host.user_env(users.ann, PYTHONPATH=f"{tree}:{tree}/site"))
    assert (opened.returncode, opened.stdout) == (0, "ok\n"), opened.stderr


def test_a_system_daemon_serves_metrics_to_other_hosts_only_when_public():
    from gq.protocol import GqError
    from tests.support.prometheus import fetch, free_port

    require_root()
    port = free_port()
    h = SystemHost(config=f'[metrics]\nlisten = "0.0.0.0:{port}"\n')
    try:
        with pytest.raises(AssertionError, match=r"\[metrics\] listen = '0\.0\.0\.0:\d+': a "
                                                 "system daemon serves its metrics on a "
                                                 "loopback address or a Unix socket only"):
            h.start()
        h.config.write_text(h.config.read_text() + "public = true\n")
        h.start()
        assert "gq_up{" in fetch(f"http://127.0.0.1:{port}/metrics")
        h.config.write_text(h.config.read_text().replace("public = true\n", ""))
        with pytest.raises(GqError, match=r"set \[metrics\] public = true to serve them to "
                                          "other hosts"):
            h.call("reload")  # refused whole: the endpoint is kept where it was
        assert "gq_up{" in fetch(f"http://127.0.0.1:{port}/metrics")
    finally:
        h.close()


# Another user's try at a run's channel, which /proc/net/unix names to everyone: as soon as it
# appears, connect, hand it this process's descriptors, and say whether the shim took them (it
# answers a caller it takes with {"started": 1}).
INTRUDER = """
import socket, sys, time
from gq.protocol.fdpass import receive, send
print("watching", flush=True)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    with open("/proc/net/unix") as f:
        if any(line.split()[-1] == "@" + sys.argv[1] for line in f):
            break
    time.sleep(0.005)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(b"\\0" + sys.argv[1].encode())
    send(s, {"hello": {"tty": False}}, [0, 1, 2])
    s.settimeout(10)
    print("taken" if receive(s)[0] is not None else "refused", flush=True)
except OSError:  # dropped unheard
    print("refused", flush=True)
"""


def test_gq_run_is_its_callers_alone(host, users):
    """gq run (docs/run.md): the job runs as its caller on the caller's pipes, and its channel,
    which anyone can see, takes no other user's descriptors."""
    ann, bob = users.ann, users.bob
    gate = host.root / "gate"
    blocker = host.submit(bob, "-g", "4", *gated(gate))
    wait_for(lambda: host.job(blocker)["state"] == "running", what="bob's job")

    def as_user(user, argv):
        return subprocess.Popen(argv, user=user.uid, group=user.gid, extra_groups=user.groups(),
                                env=host.user_env(user), cwd=user.home, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    run = as_user(ann, [host.python, "-m", "gq", "run", "--", "sh", "-c", "id -u; cat"])
    intruder = None
    try:
        [waiting] = wait_for(lambda: [j for j in host.call("list", states=["pending"],
                                                            user=ann.name)["jobs"]
                                      if j["name"] == "run:sh"], what="her run to wait")
        run.send_signal(signal.SIGSTOP)  # her run starts while she cannot attach yet
        # The channel's name, which only its shim and her gq run know (root reads it here).
        db = sqlite3.connect(f"file:{host.state / 'gq.db'}?mode=ro", uri=True)
        [(attach,)] = db.execute("SELECT attach FROM jobs WHERE id = ?", [waiting["id"]])
        db.close()
        intruder = as_user(bob, [host.python, "-c", INTRUDER,
                                 "gq-run-" + json.loads(attach)["key"]])
        assert intruder.stdout.readline() == b"watching\n"
        gate.touch()
        assert intruder.stdout.readline() == b"refused\n", intruder.communicate(timeout=30)
        run.send_signal(signal.SIGCONT)
        out, err = run.communicate(b"hers\n", timeout=30)
        assert run.returncode == 0, err
        assert out.decode().splitlines() == [str(ann.uid), "hers"]
    finally:
        for proc in (p for p in (run, intruder) if p is not None):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
