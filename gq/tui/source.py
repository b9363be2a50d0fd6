"""Where `gq top` gets its data: a host's daemon over its socket, or fixed data for tests.

A source never starts a daemon (the CLI does that on first use; a monitor that restarted one
in a loop would hide a crash). The app calls `fetch` from a worker thread once a second.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from gq.paths import not_answering
from gq.protocol import BadInput, Connection, DaemonGone, GqError
from gq.protocol.op_names import Op
from gq.protocol.ops import listed_jobs
from gq.tui.snapshot import HostSnapshot, JobRow, host_snapshot, job_row

HISTORY_SPAN = 300.0  # seconds of utilisation history behind each card's sparkline
JOB_HISTORY_SPAN = 1800.0  # ... and behind the job screen's charts
LOG_TAIL = 64 << 10  # bytes of a log shown when the job screen opens
NOT_RUNNING = "daemon not running (start it: gq daemon start)"  # of a daemon of one's own
NO_OUTPUT_YET = "no output yet"  # no log (yet): the job screen says "no output" once it ended


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
        return LogChunk("", max(offset, 0), NO_OUTPUT_YET)
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

    def __init__(self, socket_path: str, timeout: float = 5.0, system: bool = False):
        self.socket_path = socket_path
        # Never advice to start a daemon where the system daemon is the one that stopped.
        self.not_running = not_answering(socket_path, None) if system else NOT_RUNNING
        self.timeout = timeout
        self.name = socket.gethostname()
        self.last: HostSnapshot | None = None
        # What the `top` operation sent so far (docs/top.md): its cursor, the jobs, and the
        # cards' utilisation samples of the last HISTORY_SPAN seconds.
        self._top = True
        self._cursor: list | None = None
        self._rows: dict[int, JobRow] = {}
        self._points: deque[list] = deque()
        self._points_at: float | None = None

    def _connect(self) -> Connection:
        try:
            return Connection(self.socket_path, timeout=self.timeout)
        except (FileNotFoundError, ConnectionRefusedError):
            raise GqError(self.not_running) from None
        except OSError as e:
            raise GqError(f"cannot reach the daemon: {e.strerror or e}") from None

    def fetch(self, now: float) -> HostSnapshot:
        try:
            with self._connect() as conn:
                snap = self._from_top(conn, now) if self._top else None
                if snap is None:  # a daemon older than the top operation
                    snap = self._from_replies(conn, now)
        except DaemonGone:
            return self._failed(self.not_running)
        except GqError as e:
            return self._failed(e.message)
        except (OSError, ValueError) as e:  # a reset connection, a half-written reply
            return self._failed(f"lost the daemon: {e}")
        self.last = snap
        return snap

    def _from_top(self, conn: Connection, now: float) -> HostSnapshot | None:
        """From one `top` answer: what changed since the last one, applied to what it had."""
        try:
            answer = conn.call(Op.TOP, cursor=self._cursor, points_after=self._points_at)
        except BadInput as e:
            if not e.message.startswith("unknown operation"):
                raise
            self._top = False
            return None
        self.name = answer["host"] or self.name
        if answer["full"]:
            self._rows = {}
        columns = answer["columns"]
        for values in answer["rows"]:
            job = dict(zip(columns, values))
            array = job["array_id"]
            job["array"] = None if array is None else {"id": array, "index": job["array_index"]}
            self._rows[job["id"]] = job_row(self.name, job)
        if answer["ids"] is not None:  # the jobs there are now: the others ended
            self._rows = {i: self._rows[i] for i in answer["ids"] if i in self._rows}
        self._cursor = answer["cursor"]
        self._points.extend(answer["points"])
        if self._points:
            self._points_at = self._points[-1][0]
            while self._points[0][0] < self._points_at - HISTORY_SPAN:
                self._points.popleft()
        starts = answer["starts"]
        rows = tuple(replace(r, expected_start=start[0], start_basis=start[1])
                     if (start := starts.get(str(r.id))) else r for r in self._rows.values())
        return host_snapshot(
            self.name, now, ping={"user": answer["user"], "backend": answer["backend"]},
            jobs=[], rows=rows, gpus=answer["gpus"], offenders=answer["offenders"],
            samples={"points": [{"gpu": p[1], "utilization": p[2]} for p in self._points]})

    def _from_replies(self, conn: Connection, now: float) -> HostSnapshot:
        """From the replies of ping, list, gpus, offenders and samples: everything again."""
        ping = conn.call(Op.PING)
        self.name = ping.get("host") or self.name
        return host_snapshot(
            self.name, now, ping=ping, jobs=listed_jobs(conn.call(Op.LIST, hosts="local")),
            gpus=conn.call(Op.GPUS, hosts="local"),
            offenders=conn.call(Op.OFFENDERS, hosts="local"),
            samples=conn.call(Op.SAMPLES, since=HISTORY_SPAN, resolution="raw"))

    def detail(self, job_id: int) -> JobDetail:
        with self._connect() as conn:
            job = conn.call(Op.SHOW, id=str(job_id))
            samples = conn.call(Op.SAMPLES, job=str(job_id), since=JOB_HISTORY_SPAN)
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
            return LogChunk("", 0, NO_OUTPUT_YET)
        return LogChunk(text[max(offset, 0):], len(text))
