"""What a user's text may do to a terminal: nothing. A command, a directory and a stray
process's command line holding terminal escapes (a window title, a screen clear, an OSC 52
clipboard write, an 8-bit CSI) are printed by every command, and by `gq top`, with their control
characters escaped as `ls -b` shows them (gq/escapes.py); `--json` stays JSON. The system-mode
variant (another user's job) is in test_hostile_users.py."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys

from gq.tui.app import make_app
from gq.tui.job_screen import JobScreen
from tests.support.hosts import host_with, wait_for

TITLE = "\x1b]0;owned\x07"  # OSC 0: the window's title
CLEAR = "\x1b[2J\x1b[H"  # the screen cleared
CLIP = "\x1b]52;c;ZWNobyBvd25lZAo=\x07"  # OSC 52: written to the clipboard
CSI8 = "\x9b7m"  # the 8-bit CSI (reverse video), as one character
HOSTILE = TITLE + CLEAR + CLIP + CSI8 + "[b]markup"
SCRIPT = f"[b]x{CLEAR}run.sh"  # markup too: `gq top` shows it as it is
# Any control character but a newline (and a tab, which no line here has): raw, it is the
# terminal's to act on.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FAST = '[telemetry]\ninterval = "0.2s"\n\n[offenders]\nstray_after = "0s"\n'


def no_raw_controls(text: str, what: str) -> None:
    found = RAW.search(text)
    assert found is None, (f"{what}: raw {found.group()!r} in "
                           f"{text[max(0, found.start() - 60):found.end() + 60]!r}")


def hostile_jobs(host) -> tuple[int, int]:
    """A running job whose script, arguments and directory hold the escapes (on every card),
    and a pending one whose expected start quotes the running one's script."""
    cwd = host.work / f"dir{HOSTILE}"
    cwd.mkdir()
    gate = host.work / "gate"
    (cwd / SCRIPT).write_text(f'while [ ! -e "{gate}" ]; do sleep 0.02; done\n')
    running = host.submit("-g", "4", "--cwd", str(cwd), "--", "sh", SCRIPT, TITLE,
                          CLIP, CSI8)
    host.wait_state(running, "running")
    waiting = host.submit("-g", "4", "--", "true")
    host.wait_reason(waiting, "Resources")
    return running, waiting


def stray(host) -> subprocess.Popen:
    """A burn outside gq (an offender) whose command line holds the escapes: its first 120
    characters are what the daemon reports. It holds its memory once it has said so
    (stdout)."""
    code = (f"#{TITLE}{CLEAR}{CLIP}\nimport runpy, sys; sys.argv = ['burn', '--mem', '1G']; "
            "runpy.run_module('gq.sim.burn', run_name='__main__')")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            env={**host.env, "CUDA_VISIBLE_DEVICES": "3"})


def test_every_command_prints_a_users_escapes_escaped(make_host):
    host = host_with(make_host, FAST)
    outsider = stray(host)  # it starts while the jobs do
    try:
        running, waiting = hostile_jobs(host)
        outsider.stdout.readline()
        wait_for(lambda: any(o["kind"] == "stray" for o in host.call("offenders")),
                 what="the stray")
        # A sentence for people quoting the script escapes it, in JSON too.
        basis = wait_for(lambda: host.job(waiting)["expected_start_basis"], what="a basis")
        assert "no completed run of [b]x\\033[2J\\033[Hrun.sh" in basis, basis
        shown = host.gq("show", str(running)).stdout
        # Shown, escaped (not dropped), a backslash left as it is.
        assert f"cwd  {host.work}/dir\\033]0;owned\\a\\033[2J\\033[H\\033]52;c;" in shown
        assert "run.sh' '\\033]0;owned\\a'" in shown and "\\302\\2337m" in shown
        assert "no completed run of [b]x\\033[2J\\033[Hrun.sh" in shown
        for argv in (["ls"], ["ls", "--all", "--start"], ["show", str(running)],
                     ["show", str(waiting)], ["why", str(waiting)], ["why", str(running)],
                     ["gpus"], ["offenders"], ["stats"], ["wait", str(waiting), "--timeout", "0"],
                     ["hold", str(waiting)], ["release", str(waiting)],
                     ["show", CLEAR], ["cancel", f"{waiting}{TITLE}"],  # refusals quoting
                     ["submit", "--env", f"K{CLEAR}", "--", "true"], ["ls", "-u", TITLE]):
            proc = host.gq(*argv, check=False)
            no_raw_controls(proc.stdout + proc.stderr, f"gq {' '.join(argv)}")
        offenders = host.gq("offenders").stdout
        assert "#\\033]0;owned\\a\\033[2J" in offenders
        # JSON stays JSON: the text as it was, its control characters JSON's escapes.
        raw = host.gq("show", "--json", str(running)).stdout
        assert "\\u001b]0;owned\\u0007" in raw and json.loads(raw)["cwd"] == str(
            host.work / f"dir{HOSTILE}")
        no_raw_controls(raw, "gq show --json")
        top_screens_are_escaped(host, running)
    finally:
        outsider.send_signal(signal.SIGTERM)
        outsider.wait(timeout=10)
        (host.work / "gate").touch()


def top_screens_are_escaped(host, running: int) -> None:
    """`gq top`'s main screen (queue, cards, offenders) and the job's screen: what Textual
    would write to the terminal holds no raw control character, and markup in a command is
    shown as text."""

    async def scenario():
        app = make_app(home=str(host.home), poll=False)
        async with app.run_test(size=(160, 45)) as pilot:
            for _ in range(100):
                app.poll_now()
                await app.workers.wait_for_complete()
                await pilot.pause()
                if app.main.queue.jobs and any(h.offences for h in app.main.snapshot.hosts):
                    break
            main = app.export_screenshot()
            await pilot.press("enter")
            assert isinstance(app.screen, JobScreen) and app.screen.job.id == running
            for _ in range(100):
                app.poll_now()
                await app.workers.wait_for_complete()
                await pilot.pause()
                if app.screen.detail is not None:
                    break
            return main, app.export_screenshot()

    main, job = asyncio.run(scenario())
    assert "stray" in main
    for what, svg in (("the main screen", main), ("the job screen", job)):
        no_raw_controls(svg, f"gq top: {what}")
    assert "sh [b]x\\033[2J\\033[Hrun.sh" in job.replace("&#160;", " ")

