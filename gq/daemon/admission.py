"""Who is served when: each user's requests wait in a line of their own and the lines are
served in turn, so that a user who floods the daemon waits behind themselves, not others.
Connections are capped per user; idle ones are closed by the server (server.py)."""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from typing import Any, Callable


class Turns:
    """One request of each waiting user in turn (round robin over users, not connections:
    opening more connections buys a user nothing). Requests run one at a time, on the loop,
    as they did before; only their order changes."""

    def __init__(self) -> None:
        self._lines: dict[int, deque[tuple[Callable[[], Any], asyncio.Future]]] = {}
        self._order: deque[int] = deque()  # users with a request waiting, next first
        self._wake = asyncio.Event()

    async def run(self, uid: int, fn: Callable[[], Any]) -> Any:
        fut = asyncio.get_running_loop().create_future()
        line = self._lines.get(uid)
        if line is None:
            line = self._lines[uid] = deque()
            self._order.append(uid)
        line.append((fn, fut))
        self._wake.set()
        return await fut

    async def serve(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._order:
                uid = self._order.popleft()
                line = self._lines[uid]
                fn, fut = line.popleft()
                if line:
                    self._order.append(uid)
                else:
                    del self._lines[uid]
                if not fut.cancelled():
                    try:
                        fut.set_result(fn())
                    except Exception as e:  # the caller's to handle, as if it had run fn
                        fut.set_exception(e)
                # Let requests that arrived meanwhile join their lines before the next turn.
                await asyncio.sleep(0)


class ConnectionCap:
    """At most `cap` open connections per user; root is not capped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: Counter[int] = Counter()

    def admit(self, uid: int) -> bool:
        if uid != 0 and self.open[uid] >= self.cap:
            return False
        self.open[uid] += 1
        return True

    def release(self, uid: int) -> None:
        self.open[uid] -= 1
        if self.open[uid] <= 0:
            del self.open[uid]
