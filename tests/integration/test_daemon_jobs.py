"""A real daemon with simulated cards runs jobs on the right cards, in the right order."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.hosts import wait_for
from tests.support.jobs import gated


def test_whole_card_jobs_on_one_card_run_one_after_the_other(make_host):
    host = make_host("1x80G")
    gate_a, gate_b = host.work / "a", host.work / "b"
    a = host.submit(*gated(gate_a))
    b = host.submit(*gated(gate_b))
    host.wait_state(a, "running")
    assert host.wait_reason(b, "Resources")["state"] == "pending"
    why = host.gq("why", str(b)).stdout
    assert "1 whole card" in why and "short of GPUs (it needs 1 free card)" in why
    gate_a.touch()
    host.wait_state(b, "running")
    gate_b.touch()
    ja, jb = host.wait_ended(a), host.wait_ended(b)
    assert ja["state"] == jb["state"] == "completed"
    assert jb["started_at"] >= ja["ended_at"]
    assert ja["gpu_ids"] == jb["gpu_ids"] == [0]


def test_four_jobs_on_four_cards_get_disjoint_cards(host):
    gate = host.work / "gate"
    ids = [host.submit(*gated(gate, echo='"$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER"'))
           for _ in range(4)]
    for i in ids:
        host.wait_state(i, "running")
    fifth = host.submit(*gated(gate))
    assert host.wait_reason(fifth, "Resources")["state"] == "pending"
    seen = [wait_for(lambda i=i: host.log(i).strip(), what=f"job {i} output") for i in ids]
    assert sorted(s.split()[0] for s in seen) == ["0", "1", "2", "3"]
    assert all(s.split()[1] == "PCI_BUS_ID" for s in seen)
    gate.touch()
    for i in [*ids, fifth]:
        assert host.wait_ended(i)["state"] == "completed"


def test_memory_jobs_share_a_card_and_the_third_waits(make_host):
    host = make_host("1x80G")
    gate = host.work / "gate"
    ids = [host.submit("--mem", "30G", *gated(gate)) for _ in range(3)]
    host.wait_state(ids[0], "running")
    host.wait_state(ids[1], "running")
    assert host.wait_reason(ids[2], "Resources")["state"] == "pending"
    cards = host.call("gpus")
    assert [j["id"] for j in cards[0]["jobs"]] == ids[:2]
    gate.touch()
    assert host.wait_ended(ids[2])["gpu_ids"] == [0]


def test_simulated_burn_in_a_job_shows_on_its_card(make_host):
    host = make_host("2x80G")
    gate = host.work / "gate"
    blocker = host.submit(*gated(gate))  # takes card 0 whole
    host.wait_state(blocker, "running")
    burn = host.submit("--mem", "20G", "--", sys.executable, "-m", "gq.sim.burn", "--mem", "12G",
                       "--util", "70")

    def card1_used():
        card = host.call("gpus")[1]
        return card if card["memory_used"] == 12 << 30 else None

    card = wait_for(card1_used, what="the burn's memory on card 1")
    assert card["jobs"][0]["id"] == burn and card["external_used"] == 0
    assert card["utilization"] == 70
    host.call("cancel", ids=[str(burn)])
    gate.touch()
    assert host.wait_ended(burn)["state"] == "cancelled"


def test_memory_held_outside_gq_keeps_jobs_off_the_card(make_host):
    host = make_host("1x80G")
    env = {**host.env, "CUDA_VISIBLE_DEVICES": "0"}
    stray = subprocess.Popen([sys.executable, "-m", "gq.sim.burn", "--mem", "60G"], env=env,
                             stdout=subprocess.PIPE)
    try:
        stray.stdout.readline()  # it holds its memory once it has said so
        wait_for(lambda: host.call("gpus")[0]["external_used"] == 60 << 30,
                 what="the stray's memory to show")
        whole = host.submit("--", "true")
        big = host.submit("--mem", "30G", "--", "true")
        small = host.submit("--mem", "10G", "--", "true")
        assert host.wait_ended(small)["state"] == "completed"
        assert host.wait_reason(whole, "Resources")["state"] == "pending"
        assert host.wait_reason(big, "Resources")["state"] == "pending"
    finally:
        stray.terminate()
        stray.wait()
    assert host.wait_ended(big)["state"] == "completed"


def test_after_waits_for_the_dependency(host):
    gate = host.work / "gate"
    first = host.submit(*gated(gate, exit_code=3))
    then = host.submit("--after", str(first), "--", "true")
    ok_only = host.submit("--afterok", str(first), "--", "true")
    not_ok = host.submit("--afternotok", f"{first}", "--", "true")
    assert host.wait_reason(then, "Dependency")["state"] == "pending"
    assert "waits for job(s) " + str(first) + " to end" in host.gq("why", str(then)).stdout
    # Slurm's after: once the other has started, while it still runs
    started = host.wait_ended(host.submit("--afterstart", str(first), "--", "true"))
    assert host.job(first)["state"] == "running"
    assert started["state"] == "completed"
    assert started["started_at"] >= host.job(first)["started_at"]
    gate.touch()
    assert host.wait_ended(then)["started_at"] >= host.job(first)["ended_at"]
    assert host.wait_ended(not_ok)["state"] == "completed"
    stuck = wait_for(lambda: host.job(ok_only)["reason"] == "DependencyNeverSatisfied"
                     and host.job(ok_only), what="afterok to be unsatisfiable")
    assert stuck["state"] == "pending"
    assert "DependencyNeverSatisfied" in host.gq("ls").stdout
    host.gq("release", str(ok_only))
    assert host.wait_ended(ok_only)["state"] == "completed"


def test_cpu_only_jobs_are_limited_by_cores(make_host):
    host = make_host("1x80G", cpus=2)
    gate = host.work / "gate"
    a = host.submit("-g", "0", "-c", "2", *gated(gate))
    b = host.submit("-g", "0", *gated(gate))
    host.wait_state(a, "running")
    assert host.wait_reason(b, "Resources")["state"] == "pending"
    assert "short of CPU cores (it needs 1, 0 free)" in host.gq("why", str(b)).stdout
    assert host.job(a)["gpu_ids"] == []
    gate.touch()
    assert host.wait_ended(b)["state"] == "completed"


def test_job_environment(host):
    os.environ["GQ_TEST_MARKER"] = "from-submitter"  # noqa: the submit below inherits it
    host.env["GQ_TEST_MARKER"] = "from-submitter"
    job = host.submit("-m", "10G", "--env", "EXTRA=1", "--", "sh", "-c",
                      "echo $GQ_JOB_ID $GQ_RESTART_COUNT $GQ_GPU_MEM $GQ_TEST_MARKER $EXTRA;"
                      " echo $GQ_CHECKPOINT_DIR; test -d $GQ_CHECKPOINT_DIR; pwd")
    assert host.wait_ended(job)["state"] == "completed"
    first, ckpt, cwd = host.log(job).splitlines()
    assert first.split() == [str(job), "0", str(10 << 30), "from-submitter", "1"]
    assert ckpt == str(host.home / "checkpoints" / str(job))
    assert cwd == str(host.work)


def test_cpu_job_sees_no_cards(host):
    job = host.submit("-g", "0", "--", "sh", "-c", 'echo "[$CUDA_VISIBLE_DEVICES]"')
    host.wait_ended(job)
    assert host.log(job).strip() == "[]"


def test_without_cards_gpu_jobs_are_refused_and_cpu_jobs_run(make_host):
    host = make_host("0")  # a simulated host with no cards at all
    proc = host.gq("submit", "--", "true", check=False)
    assert proc.returncode == 2
    assert "has no GPUs" in proc.stderr and "--gpus 0" in proc.stderr
    assert host.count_jobs() == 0
    assert host.wait_ended(host.submit("-g", "0", "--", "true"))["state"] == "completed"
    assert "no GPUs on this host" in host.gq("gpus").stdout


def test_identity_comes_from_the_socket_not_the_request(host):
    import pwd

    from gq.cli.submit_args import request_args

    args = request_args({"hold": True}, ["true"])
    job = host.call("submit", **args, user="mallory", uid=12345)
    me = pwd.getpwuid(os.getuid()).pw_name
    assert job["user"] == me
    assert host.job(job["id"])["user"] == me


def test_backfill_respects_the_reservation_of_a_big_job(make_host):
    host = make_host("2x80G")
    gate = host.work / "gate"
    first = host.submit("-t", "1h", *gated(gate))
    host.wait_state(first, "running")
    big = host.submit("-g", "2", *gated(gate))
    long_one = host.submit(*gated(gate))  # no --time: assumed to run a day
    assert host.wait_reason(long_one, "Priority")["state"] == "pending"
    # A busy daemon's first pass may stop before it reaches the job ("not reached yet").
    wait_for(lambda: f"until job {big} starts" in host.gq("why", str(long_one)).stdout,
             what="why to name the big job's reservation")
    why_big = host.gq("why", str(big)).stdout
    assert "(Resources)" in why_big and "Expected to start by" in why_big
    assert "GPU 0,1 reserved" in why_big
    assert host.job(big)["expected_start"].endswith("Z")
    short_one = host.submit("-t", "10m", *gated(gate))  # fits in before the reservation
    assert host.wait_state(short_one, "running")["gpu_ids"] == [1]
    gate.touch()
    for job in (first, big, long_one, short_one):
        assert host.wait_ended(job)["state"] == "completed"
    assert host.job(big)["started_at"] <= host.job(long_one)["started_at"]


def test_tiers_order_the_queue_and_ls_start_shows_reservations(make_host):
    host = make_host("1x80G")
    gate = host.work / "gate"
    blocker = host.submit("-t", "1h", *gated(gate))
    host.wait_state(blocker, "running")
    low = host.submit("-p", "low", "--", "true")
    high = host.submit("-p", "high", "--", "true")
    host.wait_reason(high, "Resources")
    table = host.gq("ls", "--start").stdout.splitlines()
    assert "EXPECTED_START" in table[0]
    (row,) = [line for line in table if line.startswith(f"{high} ")]
    assert "Resources" in row and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", row)
    shown = host.gq("show", str(high)).stdout
    assert "within the tier, score" in shown and "card-hours lately" in shown
    gate.touch()
    assert host.wait_ended(high)["started_at"] <= host.wait_ended(low)["started_at"]


def test_a_per_user_limit_holds_jobs_back_with_quota_limit(make_host):
    host = make_host("2x80G", start=False)
    with open(host.home / "config.toml", "a") as config:
        config.write("\n[limits]\nmax_running_gpus = 1\n")
    host.start()
    gate = host.work / "gate"
    first = host.submit(*gated(gate))
    second = host.submit(*gated(gate))
    host.wait_state(first, "running")
    assert host.wait_reason(second, "QuotaLimit")["state"] == "pending"
    assert "may hold at most 1 GPU at once" in host.gq("why", str(second)).stdout
    gate.touch()
    assert host.wait_ended(second)["state"] == "completed"


def test_two_card_jobs_get_linked_cards_on_a_simulated_topology(make_host):
    host = make_host("4x80G/2")  # two linked pairs: cards 0-1 and 2-3
    gate = host.work / "gate"
    single = host.submit(*gated(gate))
    assert host.wait_state(single, "running")["gpu_ids"] == [0]
    pair = host.submit("-g", "2", *gated(gate))
    assert host.wait_state(pair, "running")["gpu_ids"] == [2, 3]
    assert [c["island"] for c in host.call("gpus")] == [0, 0, 1, 1]
    gate.touch()
