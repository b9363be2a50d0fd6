"""What the daemon asks of any peer, whether another gq daemon over SSH (gq/remote/ssh.py
`PeerLink`) or a Slurm cluster (gq/slurm/link.py `SlurmLink`).

Blocking: the daemon calls a link from its peer threads. A peer that cannot be reached raises
`Unreachable` (gq/remote/spec.py); a refusal there raises `BadInput`/`GqError` naming the peer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from gq.remote.spec import PeerSpec


class Link(Protocol):
    spec: PeerSpec

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        """Connect now, the host key checked (with accept_new, an unknown key is remembered
        and its fingerprint appended to `accepted`)."""

    def close(self) -> None:
        """Drop the connection; the next call opens a new one."""

    def call(self, op: str, args: dict[str, Any], timeout: float | None) -> Any:
        """One operation of gq/protocol/ops.py there, and its answer."""


class LinkFactory(Protocol):
    def __call__(self, spec: PeerSpec, known_hosts: Path, connect_timeout: float) -> Link: ...
