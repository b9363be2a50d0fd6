"""Group commit (gq/daemon/group_commit.py): every submit is answered only once a flush that
began after its commit has finished, and submits that come together share flushes."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gq.daemon.group_commit import GroupCommit


class Disk:
    """Commits counted as made; a flush makes those made before it began durable."""

    def __init__(self, fail_first: int = 0):
        self.made = 0
        self.durable = 0
        self.flushes = 0
        self.fail_first = fail_first
        self.lock = threading.Lock()

    def flush(self) -> None:
        with self.lock:
            seen = self.made
        time.sleep(0.005)  # the fsync
        with self.lock:
            self.flushes += 1
            if self.flushes <= self.fail_first:
                raise OSError("EIO")
            self.durable = max(self.durable, seen)


def test_each_answer_waits_for_its_own_commit_and_flushes_are_shared():
    disk = Disk()
    group = GroupCommit(lambda: disk.made, disk.flush)
    answered_before_durable = []

    async def client() -> None:
        for _ in range(25):
            disk.made += 1  # a submit's commit (on the loop's thread)
            mine = disk.made
            await group.covering(mine)
            if disk.durable < mine:
                answered_before_durable.append(mine)
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(*(client() for _ in range(8))), 30)

    asyncio.run(main())
    assert answered_before_durable == []
    assert disk.durable == disk.made == 200
    assert disk.flushes < 200  # waiters that came together shared a flush


def test_a_failed_flush_fails_its_waiters_and_the_next_request_flushes_again():
    disk = Disk(fail_first=1)
    group = GroupCommit(lambda: disk.made, disk.flush)

    async def main() -> None:
        disk.made += 1
        with pytest.raises(OSError):
            await group.covering(1)
        await group.covering(1)  # asked again: a new flush
        assert disk.durable == 1

    asyncio.run(main())


@pytest.mark.timeout(20)
def test_a_flush_that_finished_before_its_callbacks_ran_is_taken_into_account():
    # A request that comes between a flush's end and its callbacks finds it done: awaiting
    # it would not yield, so a loop that waited for its callbacks would spin for ever.
    group = GroupCommit(lambda: 5, lambda: None)

    async def main() -> None:
        flush = asyncio.get_running_loop().create_future()
        flush.set_result(None)  # done; its callbacks not run yet
        group._running = (flush, 5)
        await group.covering(5)
        assert group.synced == 5

    asyncio.run(main())


def test_quick_flushes_run_on_the_loops_thread_and_a_slow_one_sends_them_back():
    """While the last two flushes took less than inline_below, a submit is flushed where it
    is (no worker thread, no wake-up of the loop); one slow flush sends the next two back to
    the worker, and every answer still waits for its own commit's flush."""
    threads: list[bool] = []
    delays = [0.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.0]  # what each flush takes
    now = [0.0]  # the clock the group commit times flushes with
    disk = Disk()

    def flush() -> None:
        threads.append(threading.current_thread() is threading.main_thread())
        now[0] += delays[len(threads) - 1]
        with disk.lock:
            disk.durable = disk.made

    group = GroupCommit(lambda: disk.made, flush, inline_below=0.02, clock=lambda: now[0])

    async def main() -> None:
        for _ in range(len(delays)):
            disk.made += 1
            await group.covering(disk.made)
            assert disk.durable == disk.made

    asyncio.run(main())
    # Two on the worker (no flush measured yet), then on the loop's thread until the slow
    # fourth, then the worker until two quick ones have been seen again.
    assert threads == [False, False, True, True, False, False, True, True]
