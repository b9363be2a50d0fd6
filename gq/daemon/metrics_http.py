"""The `/metrics` endpoint ([metrics] listen): an HTTP server in a thread of its own, on a TCP
address or a Unix socket, rendering the snapshot the loop built (gq/daemon/metrics.py) with
prometheus_client, in the text format or OpenMetrics as the scraper asks."""

from __future__ import annotations

import os
import socket
import socketserver
import stat
import threading
from http.server import HTTPServer
from pathlib import Path
from urllib.parse import urlparse

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

from gq.protocol import GqError

REQUEST_TIMEOUT = 10.0  # a scraper that sends nothing for this long is dropped


class _Handler(MetricsHandler):
    timeout = REQUEST_TIMEOUT

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        if path == "/metrics":
            super().do_GET()
            return
        body = b"gq: metrics are at /metrics\n"
        self.send_response(200 if path == "/" else 404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _TCPServer(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        # HTTPServer's own looks the address up in DNS (getfqdn), for a name it never uses.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _TCPServer6(_TCPServer):
    address_family = socket.AF_INET6


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def get_request(self):
        conn, _ = super().get_request()
        return conn, ("unix", 0)  # the handler wants a (host, port) to name its client


class Endpoint:
    """Serves a collector's families at /metrics until closed."""

    def __init__(self, address: tuple[str, int] | str, collector) -> None:
        self.address = address
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        self._handler = type("GqMetricsHandler", (_Handler,), {"registry": registry})
        self._server: socketserver.BaseServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and serve; an address that cannot be bound is said in one line."""
        try:
            if isinstance(self.address, str):
                self._server = self._bind_unix(self.address)
            else:
                host, port = self.address
                kind = _TCPServer6 if ":" in host else _TCPServer
                self._server = kind((host, port), self._handler)
        except OSError as e:
            raise GqError(f"[metrics] listen = {self.listen!r}: cannot serve there: "
                          f"{e.strerror or e}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, name="gq-metrics",
                                        kwargs={"poll_interval": 0.5}, daemon=True)
        self._thread.start()

    def _bind_unix(self, path: str) -> socketserver.BaseServer:
        p = Path(path)
        if p.is_socket() or (p.exists() and stat.S_ISSOCK(os.lstat(p).st_mode)):
            p.unlink()  # a socket left by an earlier daemon of this home
        old = os.umask(0o177)  # its owner's alone (root's, of a system daemon) from the start
        try:
            return _UnixServer(path, self._handler)
        finally:
            os.umask(old)

    @property
    def listen(self) -> str:
        if isinstance(self.address, str):
            return self.address
        host, port = self.address
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if isinstance(self.address, str):
            try:
                os.unlink(self.address)
            except OSError:
                pass
        self._server = None
