"""[metrics] of config.toml: where the daemon serves Prometheus's /metrics (docs/telemetry.md),
and which addresses a system daemon may serve it on."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

METRICS_KEYS = {"listen", "public"}
EXAMPLE = '"127.0.0.1:9464", "[::1]:9464" or a Unix socket\'s absolute path'


@dataclass(frozen=True)
class MetricsConfig:
    listen: str | None = None  # "HOST:PORT" or a Unix socket's path; None: no endpoint
    public: bool = False  # a system daemon may serve an address other hosts can reach

    @property
    def address(self) -> tuple[str, int] | str | None:
        """(host, port), a socket path, or None."""
        return None if self.listen is None else parse_listen(self.listen)


def parse_listen(text: str) -> tuple[str, int] | str:
    """ "127.0.0.1:9464" -> ("127.0.0.1", 9464); "[::1]:9464" -> ("::1", 9464); "/run/x.sock"
    stays a path. ValueError says what was expected."""
    if text.startswith("/"):
        return text
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or (
            ":" in host and not text.startswith("[")):
        raise ValueError(f"[metrics] listen = {text!r}: expected {EXAMPLE}")
    return host, int(port)


def is_loopback(address: tuple[str, int] | str) -> bool:
    """Whether only this host can reach the address: a Unix socket, localhost or a loopback
    IP. A name other than localhost may resolve to anything, so it counts as reachable."""
    if isinstance(address, str):
        return True
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_refusal(config: MetricsConfig, system: bool) -> str | None:
    """Why a system daemon will not serve its metrics where they are (None: it will). They name
    every user and what each used: not for every network unless the lab says so."""
    address = config.address
    if not system or address is None or config.public or is_loopback(address):
        return None
    return (f"[metrics] listen = {config.listen!r}: a system daemon serves its metrics on a "
            "loopback address or a Unix socket only; set [metrics] public = true to serve "
            "them to other hosts")


def parse_metrics(table: dict[str, Any]) -> MetricsConfig:
    unknown = set(table) - METRICS_KEYS
    if unknown:
        raise ValueError(f"unknown setting {', '.join(f'[metrics] {k}' for k in sorted(unknown))}")
    listen = table.get("listen")
    if listen is not None:
        if not isinstance(listen, str):
            raise ValueError(f"[metrics] listen = {listen!r}: expected {EXAMPLE}")
        parse_listen(listen)
    public = table.get("public", False)
    if not isinstance(public, bool):
        raise ValueError(f"[metrics] public = {public!r}: expected true or false")
    return MetricsConfig(listen=listen or None, public=public)
