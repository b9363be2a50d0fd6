"""Who a peer is and how its failures read: light (no paramiko), so that anything may import it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from gq.protocol import GqError


@dataclass(frozen=True)
class PeerSpec:
    """How to reach one peer. None: what ~/.ssh/config says, else ssh's defaults."""

    name: str
    address: str
    port: int | None = None
    user: str | None = None
    identity: str | None = None
    gq_home: str | None = None
    gq_command: str = "gq"
    kind: str = "gq"  # or "slurm" (docs/slurm.md): address '' is this host's Slurm
    options: str | None = None  # a Slurm peer's JSON {partition, account, qos}

    def remote_command(self) -> str:
        words = [*shlex.split(self.gq_command), "rpc"]
        if self.gq_home:
            words += ["--gq-home", self.gq_home]
        return shlex.join(words)

    def where(self) -> str:
        if self.kind == "slurm" and not self.address:
            return "Slurm on this host"
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.address}{port}"


class Unreachable(GqError):
    """The peer could not be reached, or the connection broke before its answer came."""


class HostKeyRefused(GqError):
    pass
