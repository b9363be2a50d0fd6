"""`gq top` driven with Textual's Pilot: every key, against a real daemon where it acts on jobs
(refusals included), against fixed data where it only changes the view."""

from __future__ import annotations

import asyncio
import signal
import sys
import time

from textual.widgets import Log, Static

from gq.tui.app import make_app
from gq.tui.job_screen import JobScreen
from gq.tui.source import NOT_RUNNING
from tests.support import tui_data
from tests.support.hosts import wait_for
from tests.support.jobs import gated


async def settle(pilot) -> None:
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def until(pilot, predicate, what: str, timeout: float = 20.0):
    """Refresh (as the poller would) until predicate() holds."""
    deadline = time.monotonic() + timeout
    while True:
        pilot.app.poll_now()
        await settle(pilot)
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def open_job(pilot, job_id: int) -> JobScreen:
    """Enter on the queue's first job, which must be `job_id`: its screen."""
    await until(pilot, lambda: pilot.app.main.queue.jobs, "the job")
    await pilot.press("enter")
    screen = pilot.app.screen
    assert isinstance(screen, JobScreen) and screen.job.id == job_id
    return screen


async def select(pilot, job_id: int) -> None:
    """Move the cursor with the arrow keys onto the job."""
    queue = pilot.app.main.queue
    await pilot.press("home")
    for _ in range(len(queue.jobs)):
        if queue.current.id == job_id:
            return
        await pilot.press("down")
    assert queue.current.id == job_id


def said(app, text: str, severity: str = "information") -> bool:
    return (text, severity) in app.said


def test_actions_go_through_the_daemon_and_its_refusals_are_shown(host):
    gate = host.work / "gate"
    running = host.submit("-g", "4", "-n", "big", *gated(gate))
    host.wait_state(running, "running")
    waiting = host.submit("-n", "small", *gated(gate))
    other = host.submit("-n", "other", *gated(gate))
    host.wait_reason(other, "Resources")

    async def scenario():
        app = make_app(home=str(host.home), poll=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: len(app.main.queue.jobs) == 3, "the three jobs")

            await select(pilot, waiting)
            await pilot.press("h")
            await until(pilot, lambda: host.job(waiting)["state"] == "held", "hold")
            assert said(app, f"job {waiting}: held")
            await pilot.press("r")
            await until(pilot, lambda: host.job(waiting)["state"] == "pending", "release")

            await pilot.press("p", "h")  # tier: high
            await until(pilot, lambda: host.job(waiting)["priority"] == "high", "tier")
            assert said(app, f"job {waiting}: -p normal -> high")
            # The cursor followed the job to its new place in the queue.
            assert app.main.queue.current.id == waiting

            await select(pilot, running)  # refused as the CLI refuses it
            await pilot.press("h")
            await until(pilot, lambda: said(app, f"gq: job {running}: is running; only pending "
                                                 "jobs can be held", "error"), "the refusal")
            await pilot.press("p", "l")
            await until(pilot, lambda: said(app, f"gq: job {running}: is running; only --time "
                                                 "can change for a running job, not -p", "error"),
                        "the tier refusal")

            # Cancel asks first, and acts on the job it named even if the cursor moves meanwhile.
            await select(pilot, other)
            await pilot.press("c")
            await pilot.press("n")
            await settle(pilot)
            assert host.job(other)["state"] == "pending"
            await pilot.press("c")
            app.main.queue.select(0)  # a refresh moves the cursor under the open dialog
            await pilot.press("y")
            await until(pilot, lambda: host.job(other)["state"] == "cancelled", "cancel")
            assert host.job(app.main.queue.jobs[0].id)["state"] in ("running", "pending")

            await select(pilot, running)  # requeue: confirmed, then stopped and queued again
            await pilot.press("R", "y")
            await until(pilot, lambda: host.job(running)["restarts"] == 1, "requeue")

    asyncio.run(scenario())
    gate.touch()


def test_job_screen_and_logs_follow_the_job(host):
    gate = host.work / "gate"
    job = host.submit("-n", "talker", *gated(gate, echo="hello-from-the-job"))
    host.wait_state(job, "running")

    async def scenario():
        app = make_app(home=str(host.home), poll=False)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await open_job(pilot, job)
            why = screen.query_one("#job-why", Static)
            await until(pilot, lambda: f"Job {job} is running" in str(why.render()), "why")
            log = screen.query_one(Log)
            await until(pilot, lambda: "hello-from-the-job" in "\n".join(log.lines), "the log")
            (host.work / "more").write_text("")
            with open(host.home / "logs" / f"{job}.out", "a") as out:
                out.write("appended later\n")  # followed: a later refresh shows it
            await until(pilot, lambda: "appended later" in "\n".join(log.lines), "following")
            await pilot.press("escape", "l")  # the log alone
            assert isinstance(app.screen, JobScreen) and app.screen.has_class("-logs-only")
            await pilot.press("escape")
            assert app.screen is app.main

    asyncio.run(scenario())
    gate.touch()


def test_an_ended_job_that_wrote_nothing_shows_no_output_not_none_yet(host):
    """Its empty log may be gone, given to a later job (docs/daemon.md, How a job runs): the
    log pane says there is no output, not that none has come yet."""
    gate = host.work / "gate"
    job = host.submit("-g", "0", *gated(gate))
    host.wait_state(job, "running")

    async def scenario():
        app = make_app(home=str(host.home), poll=False)
        async with app.run_test(size=(100, 30)) as pilot:
            title = (await open_job(pilot, job)).query_one("#job-log-title", Static)
            await until(pilot, lambda: "stdout:" in str(title.render()), "the log's title")
            assert "(no output" not in str(title.render())  # its empty log, while it runs
            gate.touch()
            host.wait_ended(job)
            await until(pilot, lambda: "(no output)" in str(title.render()), "the end's note")

    asyncio.run(scenario())


def test_selection_stays_on_its_job_and_a_gone_daemon_is_shown_not_restarted(host):
    gate = host.work / "gate"
    host.submit("-g", "4", *gated(gate))
    first = host.submit("-p", "low", *gated(gate))

    async def scenario():
        app = make_app(home=str(host.home), poll=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: len(app.main.queue.jobs) == 2, "the jobs")
            await select(pilot, first)
            row = app.main.queue.cursor
            # A job that sorts ahead of it arrives: the cursor moves with the selected job.
            host.submit("-p", "high", *gated(gate))
            await until(pilot, lambda: len(app.main.queue.jobs) == 3, "the new job")
            assert app.main.queue.current.id == first and app.main.queue.cursor == row + 1

            host.kill_daemon(signal.SIGTERM)
            heading = lambda: app.main.snapshot.hosts[0]  # noqa: E731
            await until(pilot, lambda: heading().error == NOT_RUNNING, "the daemon's absence")
            assert len(app.main.queue.jobs) == 3  # the last picture stays
            for _ in range(3):  # it retries, and never starts a daemon itself
                app.poll_now()
                await settle(pilot)
            assert not (host.home / "gq.sock").exists()
            host.start()
            await until(pilot, lambda: heading().error is None, "reconnecting")
            assert app.main.queue.current.id == first

    asyncio.run(scenario())
    gate.touch()


def test_filter_mine_sort_and_help_change_the_view():
    async def scenario():
        app = make_app([tui_data.source()], clock=lambda: tui_data.NOW, poll=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            ids = lambda: [j.id for j in app.main.queue.jobs]  # noqa: E731
            assert len(ids()) == len(tui_data.JOBS)
            await pilot.press("slash", *"sweep")
            assert ids() == [21, 22, 23]
            await pilot.press("enter")  # the filter stays, the queue has the keys again
            assert app.main.queue.has_focus and ids() == [21, 22, 23]
            await pilot.press("escape")
            assert len(ids()) == len(tui_data.JOBS)
            await pilot.press("m")  # ann's jobs only: the daemon said she runs gq top
            assert ids() == [12, 31]
            await pilot.press("m", "s")  # sort by id
            assert ids() == sorted(ids())
            await pilot.press("s")  # by user
            assert [j.user for j in app.main.queue.jobs] == sorted(j["user"] for j in
                                                                   tui_data.JOBS)
            await pilot.press("question_mark")
            assert app.screen.query("HelpPanel")
            await pilot.press("c", "y")  # a recorded snapshot refuses, as a daemon would
            await settle(pilot)
            assert any(severity == "error" for _, severity in app.said)

    asyncio.run(scenario())


def test_the_map_draws_what_each_job_holds_inside_its_reservation(host):
    job = host.submit("--mem", "20G", "--", sys.executable, "-m", "gq.sim.burn", "--mem", "5G",
                      "--seconds", "60")
    held = lambda: next((j for c in host.call("gpus") for j in c["jobs"]  # noqa: E731
                         if j["id"] == job and j["used"]), None)
    slot = wait_for(held, what="the burn process on its card")
    assert (slot["mem"], slot["used"]) == (20 << 30, 5 << 30)
    host.call("cancel", ids=[str(job)])
