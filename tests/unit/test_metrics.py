"""The metrics' parts without a daemon: [metrics] settings, who may serve where, the histograms
kept in the counters' table, the store's counts of jobs in memory, and the snapshot's labels."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gq.config import load_config
from gq.config.metrics import MetricsConfig, is_loopback, parse_listen, public_refusal
from gq.daemon.metrics import Metrics
from gq.daemon.reading import Reading
from gq.model import ArrayPart, Gpu, Job, JobState, Tier
from gq.protocol import GqError
from gq.store import Store
from gq.store.tallies import histogram


def test_listen_takes_an_address_or_a_socket_path_and_refuses_the_rest_with_its_line(tmp_path):
    assert parse_listen("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    assert parse_listen("/run/gq/metrics.sock") == "/run/gq/metrics.sock"
    for bad in ("9464", "localhost", "::1:9464", "127.0.0.1:0", "127.0.0.1:70000", "rel.sock"):
        with pytest.raises(ValueError, match="expected \"127.0.0.1:9464\""):
            parse_listen(bad)
    config = tmp_path / "config.toml"
    config.write_text('[metrics]\npublic = true\nlisten = "localhost"\n')
    with pytest.raises(GqError, match=r"line 3: \[metrics\] listen = 'localhost': expected"):
        load_config(config)
    config.write_text('[metrics]\npublic = "yes"\n')
    with pytest.raises(GqError, match=r"\[metrics\] public = 'yes': expected true or false"):
        load_config(config)
    assert load_config(tmp_path / "none.toml").metrics == MetricsConfig()  # off by default


def test_a_system_daemon_serves_only_this_host_unless_public():
    for private in ("127.0.0.1:1", "127.8.0.1:1", "[::1]:1", "localhost:1", "/tmp/m.sock"):
        assert is_loopback(parse_listen(private))
        assert public_refusal(MetricsConfig(private), system=True) is None
    for open_ in ("0.0.0.0:9464", "[::]:9464", "10.0.0.5:9464", "gpu1.lab:9464"):
        assert not is_loopback(parse_listen(open_))
        assert "set [metrics] public = true" in public_refusal(MetricsConfig(open_), True)
        assert public_refusal(MetricsConfig(open_, public=True), system=True) is None
        assert public_refusal(MetricsConfig(open_), system=False) is None  # a user's own


def job(**kw) -> Job:
    return Job(id=0, user="ann", command=["python", "secret.py"], cwd="/secret", gpus=1,
               name="secret-name", **kw)


def test_waits_and_runs_are_histograms_by_tier_counted_with_their_change(tmp_path):
    store = Store(tmp_path / "gq.db")
    a = store.insert_job(job(priority=Tier.LOW, submitted_at=100.0), 100.0)
    store.transition(a, JobState.RUNNING, 145.0, started_at=145.0, gpu_ids=[0], holding=1)
    store.add_run(store.get_job(a), 1.0, 145.0 + 7200, "completed")
    store.transition(a, JobState.COMPLETED, 7345.0, ended_at=7345.0, holding=0)
    store.close()
    found = Store(tmp_path / "gq.db").tallies()
    buckets, total, count = histogram(found, "wait_seconds")["low"]
    assert (total, count) == (45.0, 1) and dict(buckets)[30.0] == 0 and dict(buckets)[60.0] == 1
    buckets, total, count = histogram(found, "run_seconds")["low"]
    assert (total, count) == (7200.0, 1) and dict(buckets)[3600.0] == 0
    assert dict(buckets)[3 * 3600.0] == 1 and buckets[-1] == (7 * 86400.0, 1)


def test_the_jobs_in_memory_are_counted_by_state_and_tier_as_they_change(tmp_path):
    store = Store(tmp_path / "gq.db")
    ids = [store.insert_job(job(priority=tier, submitted_at=t), t)
           for tier, t in ((Tier.HIGH, 10.0), (Tier.HIGH, 20.0), (Tier.LOW, 30.0))]
    resident = store.resident
    assert resident.by_state == {("pending", "high"): 2, ("pending", "low"): 1}
    assert resident.oldest_pending() == {"high": 10.0, "low": 30.0}
    store.transition(ids[0], JobState.RUNNING, 40.0, started_at=40.0, gpu_ids=[0], holding=1)
    store.transition(ids[2], JobState.CANCELLED, 41.0, ended_at=41.0)
    assert resident.by_state == {("pending", "high"): 1, ("running", "high"): 1}
    assert resident.oldest_pending() == {"high": 20.0}
    store.close()
    assert Store(tmp_path / "gq.db").resident.by_state == resident.by_state  # read back


def test_the_snapshot_labels_cards_by_identity_and_never_name_a_command(tmp_path):
    store = Store(tmp_path / "gq.db")
    a = store.insert_job(job(submitted_at=1.0, mem=10 << 30), 1.0)
    store.transition(a, JobState.RUNNING, 2.0, started_at=2.0, gpu_ids=[0], holding=1)
    reading = Reading()
    reading.cards = [Gpu(0, "GPU-abc", "NVIDIA H100", 80 << 30, "0", memory_used=None,
                         utilization=50)]
    reading.external = {0: None}
    metrics = Metrics(store, reading, lambda: 0.25, str(tmp_path / "gq.db"), "gpu1", lambda: 62.0)
    metrics.refresh()
    text = generate_latest(_registry(metrics)).decode()
    card = 'gpu="0",host="gpu1",model="NVIDIA H100",uuid="GPU-abc"'
    assert f"gq_gpu_memory_reserved_bytes{{{card}}} 1.073741824e+10" in text
    assert f"gq_gpu_busy_ratio{{{card}}} 0.5" in text and f"gq_gpu_jobs{{{card}}} 1.0" in text
    # Unknown memory is no sample at all, never 0.
    assert "gq_gpu_memory_used_bytes{" not in text and "gq_gpu_memory_outside_bytes{" not in text
    assert 'gq_jobs{state="running",tier="normal"} 1.0' in text
    assert 'gq_wait_seconds_bucket{le="1",tier="normal"} 1.0' in text
    assert "gq_last_pass_seconds 0.25" in text
    assert "secret" not in text and "_created" not in text


def test_a_snapshot_reads_one_table_whatever_the_queue_holds(tmp_path):
    store = Store(tmp_path / "gq.db")
    store.insert_array([job(submitted_at=1.0, array=ArrayPart(0, i, 500, None, {}))
                        for i in range(500)], 1.0)
    metrics = Metrics(store, Reading(), lambda: 0.0, str(tmp_path / "gq.db"), "h", lambda: 9.0)
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    metrics.refresh()
    store.db.conn.set_trace_callback(None)
    assert statements == ["SELECT name, label, value FROM tallies"]
    text = generate_latest(_registry(metrics)).decode()
    assert 'gq_jobs{state="pending",tier="normal"} 500.0' in text
    assert 'gq_oldest_pending_seconds{tier="normal"} 8.0' in text


def _registry(metrics: Metrics) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    return registry
