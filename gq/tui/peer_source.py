"""A peer of this host's daemon (a gq host or a Slurm cluster) as one group of `gq top`, read
through that daemon: its part of `list` with hosts="all", asked once per refresh for every
peer together (`EveryHost`); actions go to its NAME:ID."""

from __future__ import annotations

from typing import Any

from gq.protocol import GqError
from gq.protocol.op_names import Op
from gq.tui.source import DaemonSource, JobDetail, LastKnown, LogChunk, read_log_file
from gq.tui.snapshot import HostSnapshot, host_snapshot


class EveryHost:
    """One `list hosts="all"` per refresh, shared by the peers' sources: the daemon asks each
    peer once, whatever the number of peers."""

    def __init__(self, local: DaemonSource):
        self.local = local
        self.at: float | None = None
        self.answer: dict[str, Any] | Exception | None = None

    def get(self, now: float) -> dict[str, Any]:
        if self.at != now:
            self.at = now
            try:
                with self.local._connect() as conn:
                    self.answer = conn.call(Op.LIST, hosts="all")
            except (GqError, OSError, ValueError) as e:
                self.answer = e
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class PeerSource(LastKnown):
    def __init__(self, local: DaemonSource, name: str, every: EveryHost | None = None):
        self.local, self.name = local, name
        self.every = every or EveryHost(local)
        self.last: HostSnapshot | None = None

    def fetch(self, now: float) -> HostSnapshot:
        try:
            answer = self.every.get(now)
        except (GqError, OSError, ValueError) as e:
            return self._failed(getattr(e, "message", None) or str(e))
        part = next((h for h in answer["hosts"] if h["name"] == self.name), None)
        if part is None:
            return self._failed(f"{self.name} is no longer a peer")
        jobs = [{**j, "id": int(str(j["id"]).rpartition(":")[2])} for j in answer["jobs"]
                if j.get("host") == self.name]
        snap = host_snapshot(self.name, now, ping={}, jobs=jobs, gpus=[], offenders=[])
        if part["state"] != "up":
            return snap.failed(f"down: {part['error']}")
        self.last = snap
        return snap

    def detail(self, job_id: int) -> JobDetail:
        with self.local._connect() as conn:
            return JobDetail(self.name, conn.call(Op.SHOW, id=f"{self.name}:{job_id}"))

    def act(self, op: str, **args: Any) -> Any:
        if "ids" in args:
            args["ids"] = [f"{self.name}:{i}" for i in args["ids"]]
        if "id" in args:
            args["id"] = f"{self.name}:{args['id']}"
        with self.local._connect() as conn:
            return conn.call(op, **args)

    def read_log(self, path: str, offset: int) -> LogChunk:
        return read_log_file(path, offset)  # a local Slurm's files; a remote one's: none


def peer_sources(local: DaemonSource) -> list[PeerSource]:
    """One source per peer of the daemon; none when it cannot be asked (gq top says why)."""
    try:
        with local._connect() as conn:
            peers = conn.call(Op.PEERS)
    except (GqError, OSError, ValueError):
        return []
    every = EveryHost(local)
    return [PeerSource(local, p["name"], every) for p in peers]
