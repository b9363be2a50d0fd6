"""[metrics] listen: the daemon's /metrics, checked by promtool and scraped by a real Prometheus
(docs/telemetry.md, "The Prometheus endpoint")."""

from __future__ import annotations

import http.client
import re
import socket

from tests.support.hosts import host_with
from tests.support.prometheus import Prometheus, fetch, free_port, promtool, require_prometheus

COMPLETED = 'gq_jobs_ended_total{state="completed"}'


def sample(text: str, series: str) -> float:
    """The value of one series in a scrape's text."""
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
    assert found, f"{series} not in:\n{text}"
    return float(found.group(1))


def test_prometheus_scrapes_counters_that_rate_and_a_restart_does_not_lower(make_host, tmp_path):
    require_prometheus()
    port = free_port()
    # First: Prometheus takes its targets about 5 s after it starts (its discovery's pace).
    prom = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{port}"])
    try:
        host = host_with(make_host, f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
        url = f"http://127.0.0.1:{port}/metrics"
        checked = promtool("check", "metrics", stdin=fetch(url))
        assert checked.returncode == 0, checked.stdout + checked.stderr

        first = [host.submit("-g", "0", "-n", "secret-name", "--", "true", "secret-arg")
                 for _ in range(3)]
        for job_id in first:
            host.wait_ended(job_id)
        prom.wait_value(COMPLETED, lambda v: v == 3, "3 completed jobs in Prometheus")
        text = fetch(url)
        assert "secret" not in text and "_created" not in text  # no names, no _created
        assert 'gq_gpu_memory_total_bytes{gpu="0",host="' in text and 'uuid="GPU-' in text

        more = [host.submit("-g", "0", "--", "true") for _ in range(3)]
        for job_id in more:
            host.wait_ended(job_id)
        prom.wait_value(COMPLETED, lambda v: v == 6, "6 completed jobs in Prometheus")
        assert prom.value(f"rate({COMPLETED}[1m])") > 0
        assert prom.value("increase(gq_jobs_submitted_total[1m])") > 0
        p80 = prom.value('histogram_quantile(0.8, sum by (le) (gq_wait_seconds_bucket))')
        assert 0 <= p80 <= 10

        host.gq("clean")  # forgets the ended jobs; the counters stay
        host.stop_daemon()
        host.start()
        assert sample(fetch(url), COMPLETED) == 6
        host.wait_ended(host.submit("-g", "0", "--", "true"))
        prom.wait_value(COMPLETED, lambda v: v == 7, "7 completed jobs after the restart")
        assert prom.value(f"resets({COMPLETED}[5m])") == 0
        assert prom.value('gq_wait_seconds_count{tier="normal"}') == 7
    finally:
        prom.close()


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(self.path)


def test_a_unix_socket_endpoint_moves_to_tcp_at_a_reload(make_host):
    host = make_host("2x80G", start=False)
    path = f"{host.home}/m.sock"
    config = host.home / "config.toml"
    config.write_text(config.read_text() + f'\n[metrics]\nlisten = "{path}"\n')
    host.start()
    conn = UnixHTTP(path)
    conn.request("GET", "/metrics")
    answer = conn.getresponse()
    assert answer.status == 200 and "gq_up{" in answer.read().decode()
    conn.close()

    port = free_port()
    config.write_text(config.read_text().replace(f'"{path}"', f'"127.0.0.1:{port}"'))
    changes = host.call("reload")["changes"]
    assert f"[metrics] listen: {path} -> 127.0.0.1:{port}" in changes
    assert sample(fetch(f"http://127.0.0.1:{port}/metrics"), "gq_jobs_submitted_total") == 0
    assert not (host.home / "m.sock").exists()


def test_the_alerts_pass_promtool_and_the_contrib_files_name_only_served_metrics(tmp_path):
    import json

    from prometheus_client import CollectorRegistry, generate_latest

    from gq.daemon.metrics import Metrics
    from gq.daemon.reading import Reading
    from gq.store import Store
    from tests.support.paths import ROOT

    require_prometheus()
    rules = ROOT / "contrib" / "prometheus" / "alerts.yml"
    checked = promtool("check", "rules", str(rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # Each health alert fires on a day that misses its target and not on one that meets it.
    tested = promtool("test", "rules", str(rules.with_name("alerts_test.yml")))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    metrics = Metrics(Store(tmp_path / "gq.db"), Reading(), lambda: 0.0, "", "h", lambda: 0.0)
    metrics.refresh()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    served = set(re.findall(r"^(gq_\w+)[{ ]", generate_latest(registry).decode(), re.M))
    served |= {f.name for f in metrics.families}  # families without a sample: the cards'
    dashboard = json.loads((ROOT / "contrib" / "grafana" / "gq.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    named = set(re.findall(r"\bgq_\w+", " ".join(exprs) + rules.read_text()))
    assert named and named <= served | {n + "_total" for n in served}, named - served
