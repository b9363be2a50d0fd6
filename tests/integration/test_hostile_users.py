"""A system daemon's worst user: their files, links, FIFOs and paths cannot make root read,
list or wait on anything of anyone else's (docs/admin.md, "What root opens for a user")."""

from __future__ import annotations

import base64
import json
import os

import pytest

from tests.support.hosts import wait_for
from gq.protocol import VERSION
from tests.support.sysmode import SystemHost, User, two_users

# One request per line on one connection, each answer within 20 s or the script says so.
RAW = (
    "import json, socket, sys\n"
    "s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])\n"
    "f = s.makefile('rw')\n"
    "for line in sys.stdin:\n"
    "    f.write(line); f.flush()\n"
    "    try: print(f.readline(), end='', flush=True)\n"
    "    except TimeoutError: print(json.dumps({'timeout': True}), flush=True)\n"
)


@pytest.fixture(scope="module")
def users():
    with two_users("h", "i") as made:
        yield made


@pytest.fixture(scope="module")
def host(users):
    h = SystemHost()
    try:
        yield h.start()
    finally:
        h.close()


def raw(host: SystemHost, user: User, *requests: tuple[str, dict]) -> list[dict]:
    lines = "".join(json.dumps({"v": VERSION, "op": op, "args": args}) + "\n"
                    for op, args in requests)
    proc = host.run_as(user, [host.python, "-c", RAW, str(host.socket)], input=lines)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _ended_job(host: SystemHost, user: User) -> int:
    job = host.submit(user, "-g", "0", "--", "echo", "mine")
    assert host.wait_ended(job)["state"] == "completed"
    return job


def _as_user(host: SystemHost, user: User, code: str) -> None:
    proc = host.run_as(user, [host.python, "-c", code])
    assert proc.returncode == 0, proc.stderr


def test_the_log_request_never_follows_a_link_the_user_planted(host, users):
    ann = users.ann
    secret = host.root / "secret"  # root's alone: stands for /etc/shadow
    secret.write_text("root:hash\n")
    secret.chmod(0o600)
    job = _ended_job(host, ann)
    out = host.user_file(ann, "logs", f"{job}.out")
    (reply,) = raw(host, ann, ("log", {"id": str(job)}))
    assert base64.b64decode(reply["result"]["data"]) == b"mine\n"
    _as_user(host, ann, f"import os; os.unlink({str(out)!r}); "
                        f"os.symlink({str(secret)!r}, {str(out)!r})")
    # ... nor a link at the directory above it, to root's state directory.
    other = _ended_job(host, ann)
    logs = host.user_file(ann, "logs")
    _as_user(host, ann, f"import os; os.rename({str(logs)!r}, {str(logs)!r} + '.old'); "
                        f"os.symlink({str(host.state)!r}, {str(logs)!r})")
    try:
        replies = raw(host, ann, ("log", {"id": str(job)}), ("log", {"id": str(job), "offset": 5}),
                      ("log", {"id": str(other)}))
    finally:
        _as_user(host, ann, f"import os; os.unlink({str(logs)!r}); "
                            f"os.rename({str(logs)!r} + '.old', {str(logs)!r})")
    for reply in replies:
        assert reply["ok"] and reply["result"]["data"] == "", reply
    # The database, by a link to it named as the job's log: not read either.
    os.link(host.state / "gq.db", host.root / "db-link")  # root may; ann's link goes to it
    _as_user(host, ann, f"import os; os.unlink({str(out)!r}); "
                        f"os.symlink({str(host.root / 'db-link')!r}, {str(out)!r})")
    (reply,) = raw(host, ann, ("log", {"id": str(job)}))
    assert reply["result"]["data"] == ""


def test_a_fifo_in_place_of_a_log_does_not_block_the_daemon(host, users):
    ann, bob = users.ann, users.bob
    job = _ended_job(host, ann)
    err = host.user_file(ann, "logs", f"{job}.err")
    _as_user(host, ann, f"import os; os.unlink({str(err)!r}); os.mkfifo({str(err)!r}, 0o600)")
    try:
        (reply,) = raw(host, ann, ("log", {"id": str(job), "err": True}))
        assert reply.get("ok") and reply["result"]["data"] == "", reply
        assert json.loads(host.gq(bob, "ls", "--json").stdout) is not None  # still serving
    finally:  # today's daemon waits in open(): a writer lets it go on
        try:
            os.close(os.open(err, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_a_submit_does_not_tell_whether_a_path_the_user_cannot_reach_exists(host, users):
    ann, bob = users.ann, users.bob
    private = os.path.join(ann.home, "private2")
    os.makedirs(os.path.join(private, "exists"))
    os.chmod(ann.home, 0o711)
    os.chmod(private, 0o700)
    answers = []
    for path in (os.path.join(private, "exists"), os.path.join(private, "missing")):
        (reply,) = raw(host, bob, ("submit", {"command": ["true"], "cwd": path, "gpus": 0,
                                              "hold": True, "env": {}}))
        answers.append((reply["ok"], reply.get("result", {}).get("state")))
    assert answers[0] == answers[1] == (True, "held")


def test_a_notification_enters_the_jobs_directory_as_its_user(host, users):
    ann, bob = users.ann, users.bob
    private = os.path.join(ann.home, "private3")
    os.makedirs(private)
    (private_file := os.path.join(private, "diary.txt")) and open(private_file, "w").close()
    os.chmod(ann.home, 0o711)
    os.chmod(private, 0o700)
    (reply,) = raw(host, bob, ("submit", {
        "command": ["true"], "cwd": private, "gpus": 0, "env": {"PATH": "/usr/bin:/bin"},
        "notify": "pwd; ls"}))
    job = reply["result"]["id"]
    ended = host.wait_ended(job)
    assert ended["reason"] == f"cannot enter {private}: Permission denied"
    wait_for(lambda: any((e["detail"] or "").startswith("notification --notify:")
                         for e in host.job(job)["events"]), what="the notification's end")
    (event,) = [e["detail"] for e in host.job(job)["events"]
                if (e["detail"] or "").startswith("notification --notify:")]
    assert event.startswith("notification --notify: failed with exit code 2"), event
    said = host.user_file(bob, "logs", f"{job}.notify").read_text()
    assert "diary.txt" not in said and f"can't cd to {private}" in said, said


def test_only_admins_force_checks_of_peers_and_anyone_reads_the_last_ones(host, users):
    bob = users.bob
    refused = host.gq(bob, "peers", "check", check=False)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        "gq: only an admin (root, the daemon's owner or a member of group gq-admin) may force "
        f"checks of peers (gq peers ls shows the last check of each); {bob.name} is none of "
        "these\n")
    assert host.gq(bob, "peers", "ls").returncode == 0
    assert host.call("peer_check") == []  # root may


def test_another_users_escapes_reach_the_terminal_escaped(host, users):
    """ann's command and directory hold a window title, a screen clear and an OSC 52
    clipboard write: bob's `gq show`, `gq ls` and `gq why` print them escaped, as `ls -b`
    would (gq/escapes.py; the same over every command: test_terminal_escapes.py)."""
    ann, bob = users.ann, users.bob
    hostile = "\x1b]0;owned\x07\x1b[2J\x1b[H\x1b]52;c;ZWNobyBvd25lZAo=\x07"
    cwd = f"{ann.home}/d{hostile}"
    _as_user(host, ann, f"import os; os.mkdir({cwd!r}, 0o755)")
    job = host.submit(ann, "--hold", "-g", "0", "--cwd", cwd, "--", "sh", "-c", "true", hostile)
    try:
        shown = {args: host.gq(bob, *args) for args in (
            ("show", str(job)), ("ls",), ("ls", "--all"), ("why", str(job)))}
        for args, proc in shown.items():
            for c in proc.stdout + proc.stderr:
                assert c in "\n" or c.isprintable(), (args, proc.stdout)
        escaped = "\\033]0;owned\\a\\033[2J\\033[H\\033]52;c;ZWNobyBvd25lZAo=\\a"
        assert f"cwd  {ann.home}/d{escaped}" in shown[("show", str(job))].stdout
        assert f"command  sh -c true '{escaped}'" in shown[("show", str(job))].stdout
    finally:
        host.gq(ann, "cancel", str(job))
