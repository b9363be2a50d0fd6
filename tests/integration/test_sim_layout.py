"""A daemon started without GQ_SIM_GPUS (a fresh shell) keeps the simulated cards its GQ_HOME
last had, so the jobs running on them are re-adopted onto cards that exist."""

from __future__ import annotations

import signal

from tests.support.jobs import gated

from gq.gpu import open_backend


def test_a_daemon_without_gq_sim_gpus_keeps_the_cards_and_the_jobs_on_them(host):
    gate = host.work / "gate"
    job = host.submit("-g", "2", *gated(gate))
    host.wait_state(job, "running")
    host.kill_daemon(signal.SIGTERM)
    del host.env["GQ_SIM_GPUS"]  # a new terminal
    host.start()
    status = host.gq("daemon", "status").stdout
    assert "4 sim GPU(s)" in status, status
    running = host.job(job)
    assert (running["state"], running["gpu_ids"]) == ("running", [0, 1])
    assert len(host.call("gpus")) == 4
    gate.touch()
    assert host.wait_ended(job)["state"] == "completed"


def test_gq_sim_gpus_off_forgets_the_layout(tmp_path):
    assert open_backend(tmp_path, {"GQ_SIM_GPUS": "2x40G"}).kind == "sim"
    assert open_backend(tmp_path, {}).kind == "sim"
    assert len(open_backend(tmp_path, {}).read()) == 2
    assert open_backend(tmp_path, {"GQ_SIM_GPUS": "off"}).kind != "sim"
    assert open_backend(tmp_path, {}).kind != "sim"
