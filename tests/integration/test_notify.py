"""Notifications when a job ends: --notify, --mail and the host's on_finish hook, on a real daemon."""

from __future__ import annotations

import shutil

import psutil
import pytest

from tests.support.hosts import wait_for
from tests.support.jobs import env_file, gated


def events(host, job_id: int) -> list[str]:
    return [e["detail"] or "" for e in host.job(job_id)["events"]]


def wait_note(host, job_id: int, needle: str) -> str:
    return wait_for(lambda: next((d for d in events(host, job_id) if needle in d), None),
                    what=f"a note {needle!r} on job {job_id}")


def with_config(make_host, text: str, **kw):
    host = make_host("1x80G", start=False, **kw)
    with open(host.home / "config.toml", "a") as config:
        config.write(text)
    host.start()
    return host


def test_notify_runs_with_the_facts_of_the_end_and_the_submitters_environment(host):
    out = host.work / "notified"
    job = host.submit("--gpus", "0", "--env", "MINE=yes", "--notify", f"env -0 > {out}", "-n",
                      "fails", "--", "sh", "-c", "exit 3")
    env = env_file(wait_for(lambda: out.exists() and out.stat().st_size and out,
                            what="the notification"))
    assert (env["GQ_JOB_ID"], env["GQ_STATE"], env["GQ_EXIT_CODE"]) == (str(job), "failed", "3")
    assert env["GQ_JOB_NAME"] == "fails" and env["MINE"] == "yes"
    assert env["GQ_STDOUT"].endswith(f"/logs/{job}.out") and env["GQ_ENDED_AT"].endswith("Z")
    wait_note(host, job, "notification --notify: sent")
    assert host.job(job)["notify"] == {"command": f"env -0 > {out}", "mail": None}


def test_a_notified_jobs_empty_logs_stay_for_its_notification(host):
    """A reused shim gives a run's empty logs to its next run (gq/daemon/shim.py), but never
    those of a job whose notification may read them."""
    quiet = host.submit("--gpus", "0", "--", "true")
    host.wait_ended(quiet)
    notified = host.submit("--gpus", "0", "--notify", "true", "--", "true")
    host.wait_ended(notified)
    wait_note(host, notified, "notification --notify: sent")
    after = host.submit("--gpus", "0", "--", "true")
    host.wait_ended(after)
    logs = host.home / "logs"
    assert not (logs / f"{quiet}.out").exists()  # the notified job's run took it
    assert (logs / f"{notified}.out").exists() and (logs / f"{notified}.err").exists()
    assert host.gq("logs", str(quiet)).stdout == ""
    assert f"logs/{quiet}.out (empty, not kept)" in host.gq("show", str(quiet)).stdout
    assert f"logs/{notified}.out\n" in host.gq("show", str(notified)).stdout


def test_the_hook_gets_the_facts_but_never_the_jobs_environment(make_host):
    # The hook runs in GQ_HOME.
    host = with_config(make_host, '\n[notify]\non_finish = "env -0 > hooks/$GQ_JOB_ID.env"\n')
    (host.home / "hooks").mkdir()
    running = host.submit("--gpus", "0", "--env", "SECRET=hunter2", "--", "true")
    held = host.submit("--hold", "--env", "SECRET=hunter2", "--", "true")
    host.gq("cancel", str(held))
    for job, state in ((running, "completed"), (held, "cancelled")):
        path = host.home / "hooks" / f"{job}.env"
        env = env_file(wait_for(lambda: path.exists() and path.stat().st_size and path,
                                what=f"the hook for job {job}"))
        assert env["GQ_STATE"] == state and env["GQ_JOB_ID"] == str(job)
        assert "SECRET" not in env and "PYTHONPATH" not in env and "GQ_HOME" not in env
        assert set(env) - {"PATH", "HOME", "LANG", "PWD", "SHLVL", "_"} == {
            k for k in env if k.startswith("GQ_")}
        wait_note(host, job, "notification on_finish: sent")


def test_a_failing_or_hanging_notification_is_noted_and_never_blocks(make_host):
    host = with_config(make_host, '\n[notify]\ntimeout = "5s"\n')
    failing = host.submit("--gpus", "0", "--notify", "echo oops; exit 7", "--", "true")
    note = wait_note(host, failing, "notification --notify: failed with exit code 7")
    assert note.endswith(f"(see {host.home}/logs/{failing}.notify)")
    assert (host.home / "logs" / f"{failing}.notify").read_text() == "oops\n"

    pid_file = host.work / "hanging.pid"
    hanging = host.submit("--gpus", "0", "--notify", f"echo $$ > {pid_file}; exec sleep 30",
                          "--", "true")
    pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(),
                       what="the hanging notification"))
    assert host.gq("ls").returncode == 0  # the daemon answers while the notification hangs:
    assert psutil.pid_exists(pid)  # had it waited for it, the notification would be killed
    assert not any("notification" in d for d in events(host, hanging))
    wait_note(host, hanging, "notification --notify: killed after 5s")

    # A job whose directory is gone when it ends: its notification cannot start there.
    gone = host.work / "gone"
    gone.mkdir()
    homeless = host.submit("--gpus", "0", "--cwd", str(gone), "--notify", "true",
                           *gated(gone / "gate"))
    host.wait_state(homeless, "running")
    gone.rmdir()  # the gated job exits when its directory goes
    wait_note(host, homeless, "notification --notify: could not start: No such file")
    later = host.submit("--gpus", "0", "--", "true")
    assert host.wait_ended(later)["state"] == "completed"  # the daemon carries on


def test_mail_goes_through_sendmail(make_host):
    host = make_host("1x80G", start=False)
    fake = host.work / "bin"
    fake.mkdir()
    inbox = host.work / "inbox"
    (fake / "sendmail").write_text(f'#!/bin/sh\necho "$@" > {inbox}.args\ncat > {inbox}\n')
    (fake / "sendmail").chmod(0o755)
    host.env["PATH"] = f"{fake}:{host.env['PATH']}"
    host.start()
    gate = host.work / "gate"
    job = host.submit("--gpus", "0", "--mail", "alice", "-n", "train", *gated(gate, exit_code=1))
    gate.touch()
    wait_note(host, job, "notification --mail: sent")
    message = inbox.read_text()
    assert (inbox.parent / "inbox.args").read_text().strip() == "-t -i"
    assert message.startswith(f"To: alice\nSubject: gq: job {job} (train) failed, exit 1: "
                              "unknown\n\n")
    assert f"logs/{job}.out" in message
    # why it failed (docs/triage.md): the class, what to do, the end of its errors
    assert "\nfailure:   unknown\n" in message and "\nwhat to do: " in message
    assert "\nlast lines of its errors:\n" in message


def test_mail_without_sendmail_is_refused(make_host):
    path = "/usr/bin:/bin"
    if shutil.which("sendmail", path=f"{path}:/usr/sbin:/usr/lib"):
        pytest.skip("this machine has a sendmail")
    host = make_host("1x80G", start=False)
    host.env["PATH"] = path
    host.start()
    proc = host.gq("submit", "--mail", "alice", "--", "true", check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("gq: --mail: this host has no sendmail")
    assert host.count_jobs() == 0


@pytest.mark.parametrize("argv, message", [
    (["--notify", "", "--", "true"], "--notify: expected a shell command"),
    (["--mail", "-oi", "--", "true"], "expected one user name or mail address"),
    (["--mail", "a b", "--", "true"], "expected one user name or mail address"),
])
def test_bad_notifications_are_refused(host, argv, message):
    proc = host.gq("submit", *argv, check=False)
    assert proc.returncode == 2 and message in proc.stderr and host.count_jobs() == 0
