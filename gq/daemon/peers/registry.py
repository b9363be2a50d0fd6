"""The daemon's peers: how each is reached, whether it answers, what was last seen of it.

One SSH connection per peer (transport.py) is kept and checked every [peers] check_every; a
peer that does not answer is marked down with the time it was last seen, and reconnects back
off up to [peers] backoff_max. Network calls run in worker threads; what they learn is written
(to memory and the store) on the daemon's loop."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gq.daemon.context import Context
from gq.daemon.peers.forwarding import forward_waiting
from gq.protocol import VERSION, BadInput, GqError
from gq.protocol.ops import listed_jobs
from gq.remote.spec import PeerSpec, Unreachable
from gq.slurm.link import SlurmLink
from gq.slurm.nodes import card_count
from gq.units import iso

log = logging.getLogger("gq.daemon")
WORKERS = 64  # threads for peer calls: a `gq wait` on a remote job holds one while it waits


@dataclass
class PeerState:
    spec: Any  # transport.PeerSpec
    up: bool | None = None  # None: not checked since the daemon started
    last_seen: float | None = None
    last_error: str | None = None
    version: str | None = None
    latency: float | None = None  # seconds, of the last ping
    snapshot: dict = field(default_factory=dict)  # {"jobs": [...], "gpus": [...]}, last seen
    failures: int = 0
    retry_at: float = 0.0  # time.monotonic() before which a down peer is not tried again

    def down_message(self) -> str:
        seen = f"last seen {iso(self.last_seen)}" if self.last_seen else "never seen"
        return f"{self.spec.name} is down ({seen}): {self.last_error}"

    def json(self) -> dict[str, Any]:
        jobs, gpus = self.snapshot.get("jobs") or [], self.snapshot.get("gpus") or []
        if self.spec.kind == "slurm":  # its GPU nodes (gq/slurm/nodes.py)
            count, names = card_count(gpus)
        else:
            count, names = len(gpus), sorted({g.get("name", "?") for g in gpus})
        return {
            "name": self.spec.name, "address": self.spec.where(),
            "state": {None: "unknown", True: "up", False: "down"}[self.up],
            "last_seen": iso(self.last_seen), "error": self.last_error, "version": self.version,
            "latency_ms": None if self.latency is None else round(self.latency * 1e3, 1),
            "gpus": count, "gpu_names": names,
            "running": sum(j["state"] == "running" for j in jobs),
            "pending": sum(j["state"] in ("pending", "held") for j in jobs),
            "gq_home": self.spec.gq_home, "gq_command": self.spec.gq_command,
            "kind": self.spec.kind,
        }


def spec_of(row: dict[str, Any]):
    return PeerSpec(row["name"], row["address"], row["port"], row["user"], row["identity"],
                    row["gq_home"], row["gq_command"] or "gq", row.get("kind") or "gq",
                    row.get("options"))


class Peers:
    def __init__(self, daemon: Context):
        self.daemon = daemon
        self.config = daemon.config.peers
        self.known_hosts = daemon.layout.home / "known_hosts"
        self.states: dict[str, PeerState] = {}
        for row in daemon.store.peers():
            self.states[row["name"]] = PeerState(
                spec_of(row), last_seen=row["last_seen"], last_error=row["last_error"],
                version=row["version"], snapshot=row["snapshot"] or {})
        self.links: dict[str, Any] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._task: asyncio.Task | None = None

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._task = loop.create_task(self._monitor())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for link in self.links.values():
            link.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def _monitor(self) -> None:
        while True:
            if self.states:
                await asyncio.gather(*(self.check(n) for n in list(self.states)),
                                     return_exceptions=True)
                try:
                    await forward_waiting(self.daemon)
                except Exception:
                    log.exception("forwarding jobs waiting for a peer failed")
            await asyncio.sleep(self.config.check_every)

    # ---- calls --------------------------------------------------------------------------

    def state(self, name: str) -> PeerState:
        state = self.states.get(name)
        if state is None:
            raise BadInput(f"{name} is not a peer (see gq peers ls)")
        return state

    def link(self, name: str):
        from gq.remote.ssh import PeerLink

        if name not in self.links:
            spec = self.state(name).spec
            if spec.kind == "slurm":  # with the jobs sent there before the daemon started
                self.links[name] = SlurmLink(spec, self.known_hosts, self.config.connect_timeout,
                                             self.daemon.store.slurm_jobs.of(name))
            else:
                self.links[name] = PeerLink(spec, self.known_hosts, self.config.connect_timeout)
        return self.links[name]

    async def run(self, fn, *args) -> Any:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="gq-peer")
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def may_try(self, name: str) -> bool:
        state = self.state(name)
        return state.up is not False or time.monotonic() >= state.retry_at

    async def call(self, name: str, op: str, args: dict[str, Any],
                   timeout: float | None | str = "default", force: bool = False) -> Any:
        """One request to a peer's daemon. A peer that is down and not due for a retry fails
        at once (force: try anyway). Unreachable marks it down; an answer marks it up."""

        state = self.state(name)
        if not force and not self.may_try(name):
            raise Unreachable(state.down_message())
        if timeout == "default":
            timeout = self.config.timeout
        link = self.link(name)
        try:
            result = await self.run(link.call, op, args, timeout)
        except Unreachable as e:
            self.mark_down(name, e.message)
            raise
        finally:
            self.keep_sent(name, link)
        self.mark_up(name)
        return result

    def keep_sent(self, name: str, link) -> None:
        """Store what a call learnt of the jobs sent to a Slurm peer (a submit, a change of
        state): the link keeps them in memory only, and runs in worker threads."""
        unsaved = getattr(link, "unsaved", None)
        if unsaved is not None and self.links.get(name) is link:
            jobs = unsaved()
            if jobs:
                self.daemon.store.slurm_jobs.save(name, jobs)

    def mark_up(self, name: str) -> None:
        state = self.states.get(name)
        if state is None:
            return
        if state.up is False:
            log.info("peer %s is back", name)
        state.up, state.failures, state.last_error = True, 0, None
        state.last_seen = self.daemon.clock()

    def mark_down(self, name: str, error: str) -> None:
        state = self.states.get(name)
        if state is None:
            return
        if state.up is not False:
            log.warning("peer %s is down: %s", name, error)
        state.up, state.last_error = False, error
        state.failures += 1
        state.retry_at = time.monotonic() + min(self.config.backoff_max,
                                                0.5 * 2 ** (state.failures - 1))
        self.daemon.store.peer_seen(name, last_error=error)

    async def check(self, name: str, force: bool = False) -> PeerState:
        """Ping the peer and refresh what is known of it: version, cards, jobs."""

        state = self.state(name)
        if not force and not self.may_try(name):
            return state
        timeout = self.config.list_timeout
        began = time.monotonic()
        try:
            info = await self.call(name, "ping", {}, timeout, force=True)
            latency = time.monotonic() - began
            if info.get("protocol") != VERSION:
                self.mark_down(name, f"gq {info.get('version')} there speaks protocol "
                                     f"{info.get('protocol')}, this one {VERSION}: upgrade")
                return state
            gpus = await self.call(name, "gpus", {}, timeout, force=True)
            jobs = listed_jobs(await self.call(name, "list", {}, timeout, force=True))
        except Unreachable:
            return state  # call() marked it down
        except GqError as e:  # an error as the answer, a refused host key: not usable
            self.mark_down(name, e.message)
            return state
        state.version, state.latency = info.get("version"), latency
        self.remember(name, jobs=jobs, gpus=gpus)
        return state

    def remember(self, name: str, **seen: Any) -> None:
        """Keep what a peer answered (its active jobs, its cards) as its last-known state."""
        state = self.states.get(name)
        if state is None:
            return
        state.snapshot = {**state.snapshot, **seen}
        with self.daemon.store.relaxed():  # rebuilt at the next check: no need to fsync
            self.daemon.store.peer_seen(name, last_seen=state.last_seen, version=state.version,
                                        last_error=None, snapshot=state.snapshot)

    # ---- the set ------------------------------------------------------------------------

    def add(self, row: dict[str, Any], link, info: dict, latency: float) -> PeerState:
        self.daemon.store.save_peer(row)
        old = self.links.pop(row["name"], None)
        if old is not None:
            old.close()
        state = PeerState(spec_of(row), version=info.get("version"), latency=latency)
        self.states[row["name"]] = state
        self.links[row["name"]] = link
        self.mark_up(row["name"])
        return state

    def remove(self, name: str) -> None:
        self.state(name)
        self.daemon.store.remove_peer(name)
        del self.states[name]
        link = self.links.pop(name, None)
        if link is not None:
            link.close()


async def join(peers, row: dict, link, accept_new: bool, ping, check=None) -> dict:
    """Open the link (its host key checked), ping the other side, check its answer, and
    remember the peer; the link is closed again if any of it fails. For gq and Slurm peers."""
    accepted: list[str] = []

    def connect_and_ping():
        link.open(accept_new, accepted)
        return ping()

    try:
        info, latency = await peers.run(connect_and_ping)
        if check is not None:
            check(info)
    except BaseException:
        link.close()
        raise
    peers.add(row, link, info, latency)
    state = await peers.check(row["name"], force=True)
    return {**state.json(), "accepted_key": accepted[0] if accepted else None,
            "remote_host": info.get("host"), "remote_user": info.get("user")}
