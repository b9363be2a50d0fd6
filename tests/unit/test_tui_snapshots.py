"""`gq top` as a person sees it, from injected snapshots with the poller off and the clock frozen.

The expected screens are the SVGs under tests/unit/__snapshots__/; after a deliberate change of the
look, review the new ones and update with `pytest tests/unit/test_tui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import pytest

from gq.tui.app import make_app
from gq.tui.source import NOT_RUNNING, StaticSource
from tests.support import tui_data

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])


def app(source=None, clock=tui_data.NOW):
    return make_app([source or tui_data.source()], clock=lambda: clock, poll=False)


async def settle(pilot) -> None:
    """Let the fetch worker land its snapshot and the screen redraw."""
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def press(*keys: str):
    async def run(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
    return run


@SIZES
def test_main_screen(snap_compare, size):
    assert snap_compare(app(), terminal_size=size, run_before=settle)


@SIZES
def test_job_screen(snap_compare, size):
    # The cursor starts on the high-tier job; one down is job 12, on two whole cards.
    assert snap_compare(app(), terminal_size=size, run_before=press("down", "enter"))


def test_daemon_gone_keeps_the_last_picture_with_its_age(snap_compare):
    gone = StaticSource(tui_data.host().failed(NOT_RUNNING))
    assert snap_compare(app(gone, clock=tui_data.NOW + 42), terminal_size=(80, 24),
                        run_before=settle)


def test_hosts_are_groups_and_a_slow_one_says_how_old_its_data_is(snap_compare):
    # Peers are not there yet; the snapshot already has a list of hosts.
    sources = [tui_data.source(), StaticSource(tui_data.host("lab2", tui_data.NOW - 17))]
    app = make_app(sources, clock=lambda: tui_data.NOW, poll=False)
    assert snap_compare(app, terminal_size=(160, 50), run_before=settle)


def test_cancel_asks_first_naming_the_job(snap_compare):
    assert snap_compare(app(), terminal_size=(80, 24), run_before=press("down", "c"))


def test_the_queue_takes_the_rows_it_needs_and_the_offenders_follow_it():
    """At 45 rows a queue of 8 jobs leaves no empty rows between its last job and the
    offenders; once it is longer than the room, it gets every row (and scrolls to its last)."""
    import asyncio

    from textual.widgets import Footer

    from gq.tui.panels import OffendersPanel
    from gq.tui.snapshot import host_snapshot

    jobs = tui_data.JOBS + [tui_data.job(100 + i, "erin", f"queued-{i}", "pending",
                                         reason="Priority") for i in range(60)]
    longer = host_snapshot("lab1", tui_data.NOW - 0.4, ping={"host": "lab1", "backend": "sim"},
                           jobs=jobs, gpus=tui_data.GPUS, offenders=tui_data.OFFENDERS)

    async def scenario():
        source = tui_data.source()
        top = app(source)
        async with top.run_test(size=(120, 45)) as pilot:
            await settle(pilot)
            queue, offenders = top.main.queue, top.main.query_one(OffendersPanel)
            assert len(queue.jobs) == 8 and queue.region.height == 8
            assert offenders.region.y == queue.region.bottom
            source.host = longer  # the queue grows
            top.poll_now()
            await press("end")(pilot)
            assert queue.region.height < len(queue.jobs) == 68
            assert offenders.region.y == queue.region.bottom
            assert offenders.region.bottom == top.main.query_one(Footer).region.y
            assert queue.current.id == 31  # the last job of the queue, scrolled to
            assert queue.scroll_offset.y == len(queue.jobs) - queue.region.height

    asyncio.run(scenario())
