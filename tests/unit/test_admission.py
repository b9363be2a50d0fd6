"""Requests are served in turns per user, so a flood by one user waits behind itself."""

from __future__ import annotations

import asyncio

from gq.daemon.admission import ConnectionCap, Turns


def test_a_user_with_many_requests_waiting_does_not_delay_another_more_than_one_turn():
    served: list[str] = []

    async def main() -> None:
        turns = Turns()
        server = asyncio.create_task(turns.serve())
        flood = [turns.run(1000, lambda i=i: served.append(f"ann{i}")) for i in range(50)]
        flooding = asyncio.gather(*flood)
        await asyncio.sleep(0)  # ann's 50 are in line before bob asks
        await turns.run(1001, lambda: served.append("bob"))
        await flooding
        server.cancel()

    asyncio.run(main())
    assert len(served) == 51
    assert served.index("bob") <= 2  # one of ann's may be under way; then bob's turn
    assert [s for s in served if s != "bob"] == [f"ann{i}" for i in range(50)]  # in order


def test_a_failing_request_fails_for_its_caller_only():
    async def main() -> tuple[str, int]:
        turns = Turns()
        server = asyncio.create_task(turns.serve())
        bad = asyncio.ensure_future(turns.run(1, lambda: 1 / 0))
        good = await turns.run(2, lambda: 42)
        try:
            await bad
        except ZeroDivisionError as e:
            outcome = type(e).__name__
        server.cancel()
        return outcome, good

    assert asyncio.run(main()) == ("ZeroDivisionError", 42)


def test_connections_are_capped_per_user_and_root_is_not():
    cap = ConnectionCap(2)
    assert cap.admit(1000) and cap.admit(1000) and not cap.admit(1000)
    assert cap.admit(1001)
    assert all(cap.admit(0) for _ in range(10))
    cap.release(1000)
    assert cap.admit(1000)
