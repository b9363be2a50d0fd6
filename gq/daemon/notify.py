"""Telling people a job ended: the submitter's `--notify` command, `--mail`, the host's hook.

Notifications run beside the daemon's loop, never in its way: each is a child process the
loop awaits, at most a few at a time, killed after `[notify] timeout`. One that fails, hangs
or cannot start is written to the daemon's log and to the job's history, and that is all.

What each one sees: the submitter's own command and mail run with the job's environment (it is
theirs). The host's `on_finish` hook is the daemon owner's and may serve every user of a
system daemon, so it gets a clean environment with the `GQ_*` facts of the job, never the
environment the job was submitted with. Under a system daemon the submitter's command and mail
run as the submitter (gq/daemon/identity.py) and open their output file themselves; only the
hook runs as root.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
import signal
from pathlib import Path
from typing import Any, Callable

from gq.config import NotifyConfig
from gq.daemon.context import Context
from gq.daemon.identity import identity_of, prepare_user_dir
from gq.daemon.jobfiles import open_job_file
from gq.daemon.oom import run_log
from gq.daemon.userfiles import job_file_owner
from gq.daemon.views import failure_json, largest_card
from gq.model import ENDED_STATES, Job, Notify
from gq.protocol import BadInput
from gq.units import iso

log = logging.getLogger("gq.daemon")

CONCURRENCY = 4  # notifications running at once; the rest wait their turn
SENDMAIL_DIRS = ("/usr/sbin", "/usr/lib")  # where sendmail lives when not on PATH
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


def find_sendmail(config: NotifyConfig) -> str | None:
    if config.sendmail:
        return config.sendmail
    path = os.pathsep.join([os.environ.get("PATH", CLEAN_PATH), *SENDMAIL_DIRS])
    return shutil.which("sendmail", path=path)


def check_notify(args: dict[str, Any], config: NotifyConfig) -> Notify | None:
    """The `notify` and `mail` of a submit request, checked."""
    command, mail = args.get("notify"), args.get("mail")
    if command is None and mail is None:
        return None
    if command is not None and (not isinstance(command, str) or not command.strip()
                                or "\0" in command):
        raise BadInput("--notify: expected a shell command")
    if mail is not None:
        if (not isinstance(mail, str) or not mail or mail.startswith("-")
                or any(c.isspace() or ord(c) < 32 or c in ",<>\"'" for c in mail)):
            raise BadInput(f"--mail {mail!r}: expected one user name or mail address")
        if find_sendmail(config) is None:
            raise BadInput("--mail: this host has no sendmail (install an MTA such as msmtp-mta "
                           "or postfix, or set [notify] sendmail in config.toml)")
    return Notify(command=command, mail=mail)


def facts(job: Job, layout, largest_card: int | None = None) -> dict[str, str]:
    """The GQ_* variables every notification gets; the advice checked against the host's
    largest card."""
    out = {
        "GQ_JOB_ID": str(job.id),
        "GQ_JOB_NAME": job.name,
        "GQ_JOB_USER": job.user,
        "GQ_HOST": job.host,
        "GQ_STATE": str(job.state),
        "GQ_EXIT_CODE": "" if job.exit_code is None else str(job.exit_code),
        "GQ_REASON": job.reason or "",
        "GQ_COMMAND": shlex.join(job.command),
        "GQ_SUBMITTED_AT": iso(job.submitted_at) or "",
        "GQ_STARTED_AT": iso(job.started_at) or "",
        "GQ_ENDED_AT": iso(job.ended_at) or "",
        "GQ_RUN_SECONDS": ("" if job.started_at is None or job.ended_at is None
                           else str(round(job.ended_at - job.started_at))),
        "GQ_STDOUT": str(layout.stdout(job.id, job.user)),
        "GQ_STDERR": str(layout.stderr(job.id, job.user)),
    }
    if job.array is not None:
        out.update(GQ_ARRAY_ID=str(job.array.id), GQ_ARRAY_INDEX=str(job.array.index))
    if job.failure is not None:  # why it failed (docs/triage.md)
        out.update(GQ_FAILURE=job.failure, GQ_FAILURE_EVIDENCE="\n".join(job.failure_evidence),
                   GQ_FAILURE_SUGGESTION=failure_json(job, largest_card)["failure_suggestion"],
                   GQ_LOG_TAIL=log_tail(job, layout))
    return out


TAIL_LINES = 10  # of the job's stderr, in a failure's notifications
TAIL_CHARS = 2000


def log_tail(job: Job, layout) -> str:
    """The last lines of the job's stderr (its own file: read as gq/daemon/oom.py reads)."""

    text = run_log(layout.stderr(job.id, job.user), None, *job_file_owner(layout, job))
    return "\n".join(text.splitlines()[-TAIL_LINES:])[-TAIL_CHARS:]


def mail_message(job: Job, to: str, env: dict[str, str]) -> bytes:
    code = f", exit {job.exit_code}" if job.exit_code is not None else ""
    lines = [
        f"To: {to}",
        f"Subject: gq: job {job.id} ({job.name}) {job.state}{code}"
        + (f": {job.failure}" if job.failure else ""),
        "",
        f"Job {job.id} ({job.name}) of {job.user} on {job.host} ended: {job.state}{code}"
        + (f" ({job.reason})." if job.reason else "."),
        "",
        f"command:   {env['GQ_COMMAND']}",
        f"submitted: {env['GQ_SUBMITTED_AT']}",
        f"started:   {env['GQ_STARTED_AT'] or '-'}",
        f"ended:     {env['GQ_ENDED_AT']}",
        f"output:    {env['GQ_STDOUT']}",
        f"errors:    {env['GQ_STDERR']}",
    ]
    if env.get("GQ_FAILURE"):
        lines += ["", f"failure:   {env['GQ_FAILURE']}",
                  *(f"  {line}" for line in env["GQ_FAILURE_EVIDENCE"].splitlines()),
                  f"what to do: {env['GQ_FAILURE_SUGGESTION']}",
                  "", "last lines of its errors:", env["GQ_LOG_TAIL"] or "(none)"]
    return ("\n".join(lines) + "\n").encode()


class Notifier:
    def __init__(self, daemon: Context):
        self.daemon = daemon
        self._sent: dict[tuple[int, float | None], None] = {}  # (job, ended_at) told already
        self._slots: asyncio.Semaphore | None = None

    def jobs_ended(self, job_ids: list[int]) -> None:
        """Called whenever jobs may have ended; starts their notifications once per end.
        Only those with a notification are read (gq cancel of an array ends 10,000 at once)."""
        try:
            if not self.daemon.config.notify.on_finish:
                job_ids = self.daemon.store.with_notify(job_ids)
        except Exception:  # a notification must never take the daemon down
            log.exception("jobs %s: notifications could not be looked up", job_ids[:10])
            return
        for job_id in job_ids:
            try:
                self._job_ended(job_id)
            except Exception:  # a notification must never take the daemon down
                log.exception("job %s: notifications could not be started", job_id)

    def _job_ended(self, job_id: int) -> None:
        daemon = self.daemon
        config = daemon.config.notify
        job = daemon.store.get_job(job_id)
        if (job is None or job.state not in ENDED_STATES or daemon.store.is_holding(job_id)
                or daemon.loop is None):
            return
        if job.notify is None and not config.on_finish:
            return
        key = (job.id, job.ended_at)
        if key in self._sent:
            return
        self._sent[key] = None
        if len(self._sent) > 10_000:
            del self._sent[next(iter(self._sent))]
        env = facts(job, daemon.layout, largest_card(daemon.cards))
        mine = {**job.env, **env}
        if job.notify and job.notify.command:
            self._spawn(job, "--notify", ["/bin/sh", "-c", job.notify.command], mine, job.cwd)
        if job.notify and job.notify.mail:
            sendmail = find_sendmail(config)
            if sendmail is None:
                self._record(job, "--mail", "no sendmail on this host any more")
            else:
                self._spawn(job, "--mail", [sendmail, "-t", "-i"], mine, job.cwd,
                            mail_message(job, job.notify.mail, env))
        if config.on_finish:
            clean = {"PATH": CLEAN_PATH, "HOME": os.path.expanduser("~"), "LANG": "C.UTF-8",
                     **env}
            self._spawn(job, "on_finish", ["/bin/sh", "-c", config.on_finish], clean,
                        str(daemon.layout.home))

    def _spawn(self, job: Job, kind: str, argv: list[str], env: dict[str, str], cwd: str,
               stdin: bytes | None = None) -> None:
        try:
            argv, run_as = self._as_submitter(job, kind, argv)
        except Exception as e:  # no such user any more, say
            return self._record(job, kind, f"could not start: {e}")
        if run_as:  # the command's shell enters the directory as the submitter
            cwd = "/"
        self.run(argv, env, cwd, self._output_path(job, kind),
                 lambda outcome: self._record(job, kind, outcome), stdin, run_as)

    def run(self, argv: list[str], env: dict[str, str], cwd: str, output: Path,
            record: Callable[[str], None], stdin: bytes | None = None,
            run_as: dict | None = None) -> None:
        """Run a notification command in the background: at most CONCURRENCY at once, killed
        after [notify] timeout, its output appended to `output` (by the command itself when
        `run_as` names another user: see _as_submitter); `record` gets the outcome in words
        ("sent", "failed with exit code 1 ...")."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(CONCURRENCY)
        self.daemon.loop.create_task(
            self._run(argv, env, cwd, output, record, stdin, run_as or {}))

    def _output_path(self, job: Job, kind: str) -> Path:
        if kind == "on_finish":
            return self.daemon.layout.logs / "on_finish.log"
        return self.daemon.layout.stdout(job.id, job.user).with_suffix(".notify")

    def _as_submitter(self, job: Job, kind: str, argv: list[str]) -> tuple[list[str], dict]:
        """A system daemon runs the submitter's own notification as them: their uid and
        groups, and a shell of theirs opens the output file, so root never writes it, and
        enters the job's directory, so root never does: CPython's subprocess changes
        directory before it drops privileges, which would let the command list a directory
        its user cannot enter. The process starts in `/` (see _spawn)."""
        if kind == "on_finish" or not self.daemon.layout.system:
            return argv, {}
        who = identity_of(job.uid)
        prepare_user_dir(self.daemon.layout, who)
        wrapped = ["/bin/sh", "-c", 'exec >>"$0" 2>&1 && cd -- "$1" && shift && exec "$@"',
                   str(self._output_path(job, kind)), job.cwd, *argv]
        return wrapped, {"user": who.uid, "group": who.gid, "extra_groups": list(who.groups),
                         "umask": 0o077 if job.umask is None else job.umask}

    async def _run(self, argv: list[str], env: dict[str, str], cwd: str, output: Path,
                   record: Callable[[str], None], stdin: bytes | None, run_as: dict) -> None:
        try:
            async with self._slots:
                outcome = await self._execute(argv, env, cwd, output, stdin, run_as)
        except Exception as e:
            log.exception("notification %s failed", argv[-1])
            outcome = f"failed: {e.__class__.__name__}: {e}"
        try:
            record(outcome)
        except Exception:
            log.exception("could not record the outcome of notification %s", argv[-1])

    async def _execute(self, argv: list[str], env: dict[str, str], cwd: str, path: Path,
                       stdin: bytes | None, run_as: dict) -> str:
        try:
            fd = (os.open(os.devnull, os.O_WRONLY) if run_as else
                  open_job_file(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND))
        except OSError as e:
            return f"could not open {path}: {e.strerror or e}"
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=fd, stderr=fd, cwd=cwd, env=env, start_new_session=True, **run_as,
            )
        except OSError as e:
            return f"could not start: {e.strerror or e}"
        finally:
            os.close(fd)
        timeout = self.daemon.config.notify.timeout
        try:
            await asyncio.wait_for(proc.communicate(stdin), timeout)
        except asyncio.TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
            return f"killed after {timeout:g}s (see {path})"
        if proc.returncode != 0:
            return f"failed with exit code {proc.returncode} (see {path})"
        return "sent"

    def _record(self, job: Job, kind: str, outcome: str) -> None:
        detail = f"notification {kind}: {outcome}"
        (log.info if outcome == "sent" else log.warning)("job %s: %s", job.id, detail)
        try:
            self.daemon.store.note(job.id, self.daemon.clock(), detail)
        except Exception:
            log.exception("job %s: could not record %r", job.id, detail)
