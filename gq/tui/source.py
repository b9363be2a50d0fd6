"""Where `gq top` gets its data: a host's daemon over its socket, or fixed data for tests.

A source never starts a daemon (the CLI does that on first use; a monitor that restarted one
in a loop would hide a crash). The app calls `fetch` from a worker thread once a second.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any, Protocol

from gq.protocol import Connection, DaemonGone, GqError
from gq.tui.snapshot import HostSnapshot, host_snapshot

HISTORY_SPAN = 300.0  # seconds of utilisation history behind each card's sparkline
JOB_HISTORY_SPAN = 1800.0  # ... and behind the job screen's charts
LOG_TAIL = 64 << 10  # bytes of a log shown when the job screen opens
NOT_RUNNING = "daemon not running (start it: gq daemon start)"


@dataclass(frozen=True)
class JobDetail:
    """What the job screen shows: the `show` reply and the job's samples."""

    host: str
    job: dict[str, Any]
    points: tuple[dict[str, Any], ...] = ()


@dataclass
class LogChunk:
    text: str
    offset: int  # where the next read starts
    note: str | None = None  # why there is nothing to show, if so


class Source(Protocol):
    name: str

    def fetch(self, now: float) -> HostSnapshot: ...

    def detail(self, job_id: int) -> JobDetail: ...

    def act(self, op: str, **args: Any) -> Any: ...

    def read_log(self, path: str, offset: int) -> LogChunk: ...


def read_log_file(path: str, offset: int) -> LogChunk:
    """What was appended to `path` since `offset`; offset -1: its last LOG_TAIL bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return LogChunk("", max(offset, 0), "no output yet")
    except OSError as e:
        return LogChunk("", max(offset, 0), f"cannot read {path}: {e.strerror}")
    try:
        size = os.fstat(fd).st_size
        if offset < 0 or offset > size:  # a truncated log starts over
            offset = max(0, size - LOG_TAIL) if offset < 0 else 0
        os.lseek(fd, offset, os.SEEK_SET)
        data = os.read(fd, max(0, size - offset))
    finally:
        os.close(fd)
    return LogChunk(data.decode(errors="replace"), offset + len(data))


class LastKnown:
    """A source that, when a fetch fails, shows its last snapshot marked with the error (or
    only the error, before any)."""

    name: str
    last: HostSnapshot | None

    def _failed(self, error: str) -> HostSnapshot:
        if self.last is None:
            return HostSnapshot(name=self.name, fetched_at=None, error=error)
        return self.last.failed(error)


class DaemonSource(LastKnown):
    """This host's daemon, through its socket (`gq.paths.daemon_socket`: the system daemon's on
    a shared host, else the user's own)."""

    def __init__(self, socket_path: str, timeout: float = 5.0):
        self.socket_path = socket_path
        self.timeout = timeout
        self.name = socket.gethostname()
        self.last: HostSnapshot | None = None

    def _connect(self) -> Connection:
        try:
            return Connection(self.socket_path, timeout=self.timeout)
        except (FileNotFoundError, ConnectionRefusedError):
            raise GqError(NOT_RUNNING) from None
        except OSError as e:
            raise GqError(f"cannot reach the daemon: {e.strerror or e}") from None

    def fetch(self, now: float) -> HostSnapshot:
        try:
            with self._connect() as conn:
                ping = conn.call("ping")
                self.name = ping.get("host") or self.name
                snap = host_snapshot(
                    self.name, now, ping=ping, jobs=conn.call("list", hosts="local"),
                    gpus=conn.call("gpus", hosts="local"),
                    offenders=conn.call("offenders", hosts="local"),
                    samples=conn.call("samples", since=HISTORY_SPAN, resolution="raw"))
        except DaemonGone:
            return self._failed(NOT_RUNNING)
        except GqError as e:
            return self._failed(e.message)
        except (OSError, ValueError) as e:  # a reset connection, a half-written reply
            return self._failed(f"lost the daemon: {e}")
        self.last = snap
        return snap

    def detail(self, job_id: int) -> JobDetail:
        with self._connect() as conn:
            job = conn.call("show", id=str(job_id))
            samples = conn.call("samples", job=str(job_id), since=JOB_HISTORY_SPAN)
        return JobDetail(self.name, job, tuple(samples["points"]))

    def act(self, op: str, **args: Any) -> Any:
        with self._connect() as conn:
            return conn.call(op, **args)

    def read_log(self, path: str, offset: int) -> LogChunk:
        return read_log_file(path, offset)


@dataclass
class StaticSource:
    """Fixed data, for tests, screenshots and the benchmark: the poller shows it unchanged,
    and actions are refused as a daemon would refuse them."""

    host: HostSnapshot
    details: dict[int, JobDetail] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.host.name

    def fetch(self, now: float) -> HostSnapshot:
        return self.host

    def detail(self, job_id: int) -> JobDetail:
        if job_id not in self.details:
            raise GqError(f"job id {job_id}: no such job")
        return self.details[job_id]

    def act(self, op: str, **args: Any) -> Any:
        raise GqError(f"{op}: this is a recorded snapshot; nothing can be changed")

    def read_log(self, path: str, offset: int) -> LogChunk:
        text = self.logs.get(path)
        if text is None:
            return LogChunk("", 0, "no output yet")
        return LogChunk(text[max(offset, 0):], len(text))
