"""The /metrics endpoint's life ([metrics] listen, docs/telemetry.md): started with the daemon,
moved or stopped by a reload, its snapshot rebuilt at each tick while it serves.

prometheus_client is an extra (`[metrics]`): it is imported only when an endpoint is asked for,
so a daemon without one never loads it."""

from __future__ import annotations

import logging
from typing import Callable

from gq.config.metrics import MetricsConfig, public_refusal
from gq.daemon.layout import Layout
from gq.daemon.reading import Reading
from gq.protocol import GqError
from gq.store import Store

log = logging.getLogger("gq.daemon")


class MetricsService:
    def __init__(self, store: Store, reading: Reading, last_pass: Callable[[], float],
                 layout: Layout, hostname: str, clock: Callable[[], float]):
        self._sources = (store, reading, last_pass, str(layout.db), hostname, clock)
        self.system = layout.system
        self.snapshot = None  # gq/daemon/metrics.py's Metrics, once an endpoint is asked for
        self.endpoint = None  # gq/daemon/metrics_http.py's Endpoint, while one serves

    def tick(self) -> None:
        if self.endpoint is not None:
            self.snapshot.refresh()

    def serve(self, config: MetricsConfig) -> None:
        """Serve where `config` says (nowhere: stop). GqError, and the endpoint as it was,
        when the address is refused or cannot be served."""
        refusal = public_refusal(config, self.system)
        if refusal is not None:
            raise GqError(refusal)
        address, old = config.address, self.endpoint
        if (old.address if old is not None else None) == address:
            return
        if address is None:
            old.close()
            self.endpoint = None
            log.info("metrics: no longer served")
            return
        try:
            from gq.daemon.metrics import Metrics
            from gq.daemon.metrics_http import Endpoint
        except ImportError:
            import shlex
            import sys

            # the pip of the environment the daemon runs in (install.sh's venv, a pipx one...)
            raise GqError("[metrics] listen needs prometheus_client, an extra: "
                          f"{shlex.quote(sys.executable)} -m pip install prometheus-client "
                          "(or install gq-gpu[metrics])") from None
        if self.snapshot is None:
            self.snapshot = Metrics(*self._sources)
        self.snapshot.refresh()
        new = Endpoint(address, self.snapshot)
        if old is not None:
            old.close()  # first: the new address may be on the same port
        try:
            new.start()
        except GqError:
            if old is not None:
                try:
                    old.start()
                except GqError:
                    self.endpoint = None
            raise
        self.endpoint = new
        log.info("metrics: serving /metrics at %s", new.listen)

    def close(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
