"""A fixed, realistic host for `gq top` tests: protocol replies as a daemon sends them."""

from __future__ import annotations

from gq.tui.snapshot import HostSnapshot, host_snapshot
from gq.tui.source import JobDetail, StaticSource
from gq.units import iso

G = 1 << 30
NOW = 1_790_000_000.0  # the frozen clock of every snapshot test


def at(seconds_ago: float) -> str:
    return iso(NOW - seconds_ago)


def job(id, user, name, state, tier="normal", gpus=1, mem=None, gpu_ids=(), reason=None,
        waited=60.0, ran=None, expected=None, array=None):
    return {
        "id": id, "name": name, "user": user, "host": "lab1", "state": state, "reason": reason,
        "priority": tier, "gpus": gpus, "mem": mem, "cpus": 4, "command": ["python", f"{name}.py"],
        "cwd": f"/home/{user}/proj", "submitted_at": at(waited + (ran or 0)),
        "started_at": None if ran is None else at(ran), "ended_at": None, "exit_code": None,
        "restarts": 0, "gpu_ids": list(gpu_ids), "ram": None, "time_limit": 86400.0, "deps": {},
        "preemptible": tier == "low", "array": array,
        "expected_start": None if expected is None else iso(NOW + expected),
    }


JOBS = [
    job(12, "ann", "train-llm", "running", gpus=2, gpu_ids=(0, 1), ran=3 * 3600 + 125),
    job(15, "bob", "notebook", "running", mem=30 * G, gpu_ids=(2,), ran=2400),
    job(21, "carol", "sweep", "running", mem=12 * G, gpu_ids=(2,), ran=300,
        array={"id": 20, "index": 1, "size": 6, "limit": 2, "params": {"lr": "1e-4"}}),
    job(22, "carol", "sweep", "running", mem=12 * G, gpu_ids=(2,), ran=280,
        array={"id": 20, "index": 2, "size": 6, "limit": 2, "params": {"lr": "3e-4"}}),
    job(30, "dave", "urgent-eval", "running", tier="high", gpu_ids=(3,), ran=95),
    job(18, "erin", "pretrain-small", "pending", tier="low", reason="Resources", waited=95,
        expected=1800),
    job(23, "carol", "sweep", "pending", mem=12 * G, reason="JobArrayTaskLimit", waited=300,
        array={"id": 20, "index": 3, "size": 6, "limit": 2, "params": {"lr": "1e-3"}}),
    job(31, "ann", "ablation-with-a-rather-long-name", "held", gpus=4, reason="Held", waited=50),
]


def card(index, name, total, used, util, jobs, external):
    return {"index": index, "uuid": f"GPU-{index}", "name": name, "memory_total": total,
            "memory_used": used, "utilization": util, "temperature": 50, "power_w": 300.0,
            "simulated": True, "parent_uuid": None, "island": 0, "jobs": jobs,
            "external_used": external, "processes": []}


def on_card(id, user, name, mem, used, whole=False):
    return {"id": id, "user": user, "name": name, "mem": mem, "used": used, "whole_card": whole,
            "state": "running"}


GPUS = [
    card(0, "NVIDIA H100 80GB HBM3", 80 * G, 71 * G, 97, [on_card(12, "ann", "train-llm", 80 * G, 70 * G, True)], 0),
    card(1, "NVIDIA H100 80GB HBM3", 80 * G, 70 * G, 95, [on_card(12, "ann", "train-llm", 80 * G, 70 * G, True)], 0),
    card(2, "NVIDIA H100 80GB HBM3", 80 * G, 52 * G, 41,
         [on_card(15, "bob", "notebook", 30 * G, 24 * G), on_card(21, "carol", "sweep", 12 * G, 10 * G),
          on_card(22, "carol", "sweep", 12 * G, 11 * G)], 6 * G),
    card(3, "NVIDIA A100-SXM4-40GB", 40 * G, None, None, [on_card(30, "dave", "urgent-eval", 40 * G, 30 * G, True)], None),
]

OFFENDERS = [
    {"id": 1, "kind": "idle", "job_id": 15, "user": "bob", "tier": "normal", "pid": None,
     "gpus": [2], "since": at(900), "last_seen": at(1), "ended_at": None,
     "evidence": "mean utilisation 0% over the last 15m00s on GPU 2 (under 20%, from 180 samples)",
     "suggestion": "give the cards back: `gq cancel 15`, or check it is not stuck",
     "figures": {}, "action": "report", "action_due_at": None},
    {"id": 2, "kind": "stray", "job_id": None, "user": "mallory", "tier": None, "pid": 4242,
     "gpus": [2], "since": at(120), "last_seen": at(1), "ended_at": None,
     "evidence": "pid 4242 (user mallory: python leak.py) holds 6G on GPU 2 outside gq",
     "suggestion": "ask mallory to submit it with gq", "figures": {}, "action": "report",
     "action_due_at": None},
]


def samples():
    points = []
    for i in range(60):
        for c, base in ((0, 95), (1, 90), (2, 40), (3, None)):
            util = None if base is None else (base + (i * 7) % 11 - 5 if i % 13 else 0)
            points.append({"at": at(300 - 5 * i), "gpu": c, "utilization": util,
                           "memory_used": 10 * G})
    return {"points": points}


def host(name: str = "lab1", fetched_at: float = NOW - 0.4) -> HostSnapshot:
    return host_snapshot(
        name, fetched_at, ping={"host": name, "backend": "sim", "user": "ann"}, jobs=JOBS,
        gpus=GPUS, offenders=OFFENDERS, samples=samples())


def show(job_id: int) -> dict:
    j = next(j for j in JOBS if j["id"] == job_id)
    return {**j, "why": f"Job {job_id} is running on lab1, GPU {','.join(map(str, j['gpu_ids']))}.",
            "stdout": f"/logs/{job_id}.out", "stderr": f"/logs/{job_id}.err", "events": [],
            "usage": {"run": "current", "peak_mem_by_gpu": {"0": 70 * G}, "util_mean": 93.4,
                      "samples": 120},
            "processes": [{"pid": 4100 + i, "gpu": g, "used_memory": 70 * G,
                           "command": f"python {j['name']}.py --rank {i} --config configs/"
                                      f"{j['name']}.yaml --batch-size 32 --resume last.ckpt"}
                          for i, g in enumerate(j["gpu_ids"])]}


def job_points(job_id: int) -> tuple:
    j = next(j for j in JOBS if j["id"] == job_id)
    return tuple({"at": at(600 - 10 * i), "gpu": g, "utilization": 80 + (i * 3) % 20,
                  "memory_used": min(70 * G, (20 + i) * G)}
                 for i in range(60) for g in j["gpu_ids"])


LOG = "".join(f"step {i:5d}  loss {2.5 / (1 + i / 100):.4f}  lr 3.0e-04  tokens/s 181{i % 10}42\n"
              for i in range(0, 4000, 100))


def source() -> StaticSource:
    details = {j["id"]: JobDetail("lab1", show(j["id"]), job_points(j["id"])) for j in JOBS}
    return StaticSource(host(), details, {"/logs/12.out": LOG})
