"""What bench/gpu_check.sh runs on a machine with a real NVIDIA card (see that script).

    python bench/gpu_check.py nvml [--json]         gq's NVML reading against nvidia-smi
    python bench/gpu_check.py freeze [--json]       a PyTorch job frozen and thawed under gq
    python bench/gpu_check.py train --steps N       the deterministic training job itself
    python bench/gpu_check.py hog --gb G            the preemptor: takes G GiB, computes, exits

`nvml` compares, card by card, what gq's NVML backend reads (gq/gpu/nvml.py) with what
`nvidia-smi` reports: names, UUIDs, total and used memory, utilisation, the processes and their
memory, MIG mode, and which cards gq takes to be linked against `nvidia-smi topo -m`. A small
load (the `hog` job, if PyTorch is there) runs meanwhile so that processes and utilisation are
not all idle. Measurements change between two reads: used memory may differ by 256 MiB,
utilisation by 25 points, and a process list by processes that came or went.

`freeze` runs `train` once alone (the reference), then under a gq daemon of its own on the card:
a low-tier job with --preempt-mode freeze, frozen when a high-tier `hog` job is submitted, thawed
when that ends. It passes when the frozen run prints the same loss at every step as the
reference, each step once (it was never restarted), and its GPU memory's checksum at the end is
the reference's; it times the freeze, the thaw and the preemptor's start from its submit
(targets: 15 s, 15 s, 20 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30
TARGET_FREEZE, TARGET_THAW, TARGET_PREEMPTOR = 15.0, 15.0, 20.0
STEPS, FREEZE_AT = 300, 100
CHUNK = 1 << 28  # elements of the ballast filled or summed at once (1 GiB of float32)


# ---- part 1: gq's NVML reading against nvidia-smi --------------------------------------------

def smi(*args: str) -> str:
    return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout


def parse_smi(gpus_csv: str, apps_csv: str, topo: str) -> dict:
    """nvidia-smi's --query-gpu, --query-compute-apps (CSV, no header, no units) and topo -m."""
    cards = {}
    for line in gpus_csv.strip().splitlines():
        index, uuid, name, total, used, util, mig = [f.strip() for f in line.split(",")]
        cards[uuid] = {"index": int(index), "uuid": uuid, "name": name,
                       "memory_total_mib": int(total), "memory_used_mib": _number(used),
                       "utilization": _number(util), "mig": mig, "processes": {}}
    for line in apps_csv.strip().splitlines():
        if not line.strip():
            continue
        uuid, pid, used = [f.strip() for f in line.split(",")]
        if uuid in cards:
            cards[uuid]["processes"][int(pid)] = _number(used)
    return {"cards": cards, "links": topo_links(topo)}


def _number(text: str) -> int | None:
    return int(float(text)) if re.fullmatch(r"[\d.]+", text) else None  # "[N/A]"


def topo_links(topo: str) -> set[tuple[int, int]]:
    """Pairs of GPUs that gq takes to be linked: NVLink (NV#), or one PCIe switch or a tree of
    them below the host bridge (PIX, PXB), as gq/gpu/topology.py reads NVML."""
    rows = [line.split() for line in topo.splitlines() if re.match(r"^GPU\d+\s", line)]
    links = set()
    for row in rows:
        i = int(row[0][3:])
        for j, cell in enumerate(row[1:1 + len(rows)]):
            if j != i and (cell.startswith("NV") or cell in ("PIX", "PXB")):
                links.add((min(i, j), max(i, j)))
    return links


def compare(cards: list, smi_seen: dict) -> list[tuple[str, bool, str]]:
    """(check, ok, detail) for each card gq reads (gq.model.Gpu) against nvidia-smi's."""
    out = []
    seen = smi_seen["cards"]
    whole = [c for c in cards if c.parent_uuid is None]
    out.append(("the same cards", {c.uuid for c in whole} | {c.parent_uuid for c in cards
                                                              if c.parent_uuid} == set(seen),
                f"gq {sorted(c.uuid for c in cards)}, nvidia-smi {sorted(seen)}"))
    for card in cards:
        ref = seen.get(card.parent_uuid or card.uuid)
        if ref is None:
            continue
        tag = f"GPU {card.index} ({card.uuid})"
        if card.parent_uuid is not None:
            out.append((f"{tag}: a MIG instance of a card with MIG on", ref["mig"] == "Enabled",
                        f"nvidia-smi says MIG {ref['mig']}"))
            continue
        out.append((f"{tag}: MIG off, as gq reads it whole", ref["mig"] in ("Disabled", "[N/A]"),
                    f"nvidia-smi says MIG {ref['mig']}"))
        out.append((f"{tag}: name", card.name == ref["name"], f"{card.name!r} vs {ref['name']!r}"))
        total = card.memory_total / (1 << 20)
        out.append((f"{tag}: total memory", abs(total - ref["memory_total_mib"]) <= 1,
                    f"{total:.0f} vs {ref['memory_total_mib']} MiB"))
        if card.memory_used is not None and ref["memory_used_mib"] is not None:
            used = card.memory_used / (1 << 20)
            out.append((f"{tag}: used memory (within 256 MiB)",
                        abs(used - ref["memory_used_mib"]) <= 256,
                        f"{used:.0f} vs {ref['memory_used_mib']} MiB"))
        if card.utilization is not None and ref["utilization"] is not None:
            out.append((f"{tag}: utilisation (within 25 points)",
                        abs(card.utilization - ref["utilization"]) <= 25,
                        f"{card.utilization}% vs {ref['utilization']}%"))
        if card.processes is not None:
            mine = {p.pid: p.used_memory for p in card.processes}
            theirs = ref["processes"]
            both = set(mine) & set(theirs)
            out.append((f"{tag}: processes", set(mine) == set(theirs),
                        f"gq {sorted(mine)}, nvidia-smi {sorted(theirs)}"))
            off = [p for p in both if mine[p] is not None and theirs[p] is not None
                   and abs(mine[p] / (1 << 20) - theirs[p]) > 256]
            out.append((f"{tag}: each process's memory (within 256 MiB)", not off,
                        f"differ: {off}" if off else f"{len(both)} process(es)"))
    islands = {c.index: c.island for c in whole}
    linked = {(i, j) for i in islands for j in islands
              if i < j and islands[i] is not None and islands[i] == islands[j]}
    expected = _closure(smi_seen["links"], set(islands))
    out.append(("which cards are linked (islands against topo -m)", linked == expected,
                f"gq {sorted(linked)}, nvidia-smi {sorted(expected)}"))
    return out


def _closure(links: set[tuple[int, int]], cards: set[int]) -> set[tuple[int, int]]:
    """Linked is transitive for islands: the pairs within each connected component."""
    groups = {c: {c} for c in cards}
    for a, b in links:
        if a in groups and b in groups and groups[a] is not groups[b]:
            merged = groups[a] | groups[b]
            for c in merged:
                groups[c] = merged
    return {(i, j) for i in cards for j in cards if i < j and j in groups[i]}


def check_nvml(as_json: bool) -> bool:
    from gq.gpu.nvml import NvmlBackend

    load = _start_hog(4, 20) if _has_torch() else None
    try:
        if load is not None:
            time.sleep(5)  # its allocation and kernels show in both readings
        backend = NvmlBackend()
        backend.read()  # the first read starts the per-process utilisation clock
        time.sleep(1)
        cards = backend.read()
        seen = parse_smi(
            smi("--query-gpu=index,uuid,name,memory.total,memory.used,utilization.gpu,"
                "mig.mode.current", "--format=csv,noheader,nounits"),
            smi("--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"),
            smi("topo", "-m"))
        support = backend.checkpointer().support(cards)
        backend.close()
    finally:
        if load is not None:
            load.kill()
            load.wait()
    results = compare(cards, seen)
    report = {"checks": [{"check": c, "ok": ok, "detail": d} for c, ok, d in results],
              "freeze_probe": {**support.json(), "cards": support.cards},
              "nvidia_smi_q": smi("-q")}
    Path(os.environ.get("GQ_CHECK_OUT", tempfile.gettempdir()), "nvml.json").write_text(
        json.dumps(report, indent=1))
    if as_json:
        print(json.dumps(report["checks"]))
    for check, ok, detail in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {check}: {detail}")
    print(f"  freezing probe: driver {support.driver}, why not: {support.why}, cards: "
          f"{support.cards}, remap: {support.remap}")
    return all(ok for _, ok, _ in results)


# ---- part 2: a PyTorch job frozen and thawed under gq -------------------------------------------

def train(steps: int, gb: float, step_time: float) -> None:
    """Deterministic training holding about `gb` GiB on the card: a fixed ballast the loss reads
    from at every step (so a restore that lost a byte shows), and a small MLP."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
    import torch

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda")
    ballast = torch.empty(int(gb * GIB) // 4, dtype=torch.float32, device=dev)
    for lo in range(0, ballast.numel(), CHUNK):  # in chunks: no second copy of it at once
        hi = min(lo + CHUNK, ballast.numel())
        ballast[lo:hi].copy_(torch.arange(lo, hi, device=dev, dtype=torch.float64)
                             .remainder_(997).float())
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator(device=dev).manual_seed(1)
    stride = ballast.numel() // (steps + 1)
    print(f"train: pid {os.getpid()}, {torch.cuda.memory_allocated() / GIB:.1f} GiB on the card",
          flush=True)
    for step in range(1, steps + 1):
        x = torch.randn(256, 1024, device=dev, generator=gen)
        window = ballast[step * stride: step * stride + 1024]
        loss = ((model(x) - window) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print(f"step {step} loss {loss.item()!r}", flush=True)
        time.sleep(step_time)
    total = sum(ballast[lo:lo + CHUNK].double().sum().item()
                for lo in range(0, ballast.numel(), CHUNK))
    print(f"ballast checksum {total!r}", flush=True)


def hog(gb: float, seconds: float) -> None:
    """The preemptor: takes `gb` GiB of the card and keeps it busy for `seconds`."""
    import torch

    dev = torch.device("cuda")
    held = torch.ones(int(gb * GIB) // 4, device=dev)
    a = torch.randn(4096, 4096, device=dev)
    print(f"hog: pid {os.getpid()} started, {gb:g} GiB", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        a = (a @ a).tanh_()
        torch.cuda.synchronize()
    print(f"hog: done {held.numel() > 0}", flush=True)


def _has_torch() -> bool:
    return subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                          capture_output=True).returncode == 0


def _start_hog(gb: float, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "hog", "--gb", str(gb), "--seconds",
                             str(seconds)], stdout=subprocess.DEVNULL)


def losses(text: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for m in re.finditer(r"^step (\d+) loss (\S+)$", text, re.M):
        out.setdefault(int(m[1]), m[2])
    return out


class Daemon:
    """A gq daemon of its own on the real card, driven through the CLI."""

    def __init__(self, home: Path, gb: float):
        self.home = home
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
        self.env.update(GQ_HOME=str(home), GQ_SIM_GPUS="off", PYTHONPATH=str(ROOT))
        home.mkdir(parents=True)
        (home / "config.toml").write_text(
            '[daemon]\ntick = "0.2s"\n\n[preemption]\nexempt = "0s"\ngrace = "30s"\n'
            f'lock_timeout = "20s"\nfreeze_ram = "{int(gb * 1.5) + 8}G"\n'
            'mode = {low = "freeze"}\n')
        self.proc = subprocess.Popen([sys.executable, "-m", "gq", "daemon", "run"], env=self.env,
                                     stdout=open(home / "daemon.log", "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: self.gq("daemon", "status", check=False).returncode == 0, 60, "the daemon")

    def gq(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        out = subprocess.run([sys.executable, "-m", "gq", *args], env=self.env, text=True,
                             capture_output=True, timeout=120)
        if check and out.returncode != 0:
            raise RuntimeError(f"gq {' '.join(args)}: {out.stderr.strip()}")
        return out

    def show(self, job: int) -> dict:
        return json.loads(self.gq("show", str(job), "--json").stdout)

    def log(self, job: int) -> str:
        path = self.home / "logs" / f"{job}.out"
        return path.read_text() if path.exists() else ""

    def close(self) -> None:
        self.gq("cancel", *[str(j["id"]) for j in json.loads(self.gq("ls", "--json").stdout)],
                check=False)
        self.gq("daemon", "stop", check=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def check_freeze(gb: float, as_json: bool) -> bool:
    out_dir = Path(os.environ.get("GQ_CHECK_OUT", tempfile.mkdtemp(prefix="gq-check-")))
    train_cmd = [sys.executable, str(Path(__file__).resolve()), "train", "--steps", str(STEPS),
                 "--gb", str(gb)]
    print(f"  reference run: {STEPS} steps holding {gb:g} GiB, alone on the card", flush=True)
    ref = subprocess.run(train_cmd, capture_output=True, text=True, timeout=900)
    (out_dir / "reference.log").write_text(ref.stdout + ref.stderr)
    if ref.returncode != 0:
        print(f"  FAIL  the reference run failed: {ref.stderr.strip()[-500:]}")
        return False
    daemon = Daemon(Path(tempfile.mkdtemp(prefix="gq-check-")) / "home", gb)
    results: dict = {}
    try:
        results = _frozen_run(daemon, train_cmd, gb)
    except (TimeoutError, RuntimeError) as e:
        results["error"] = str(e)
    finally:
        for name in ("daemon.log",):
            shutil.copy(daemon.home / name, out_dir / name)
        daemon.close()
    frozen_log = results.get("log", "")
    (out_dir / "frozen.log").write_text(frozen_log)
    checks = _judge(ref.stdout, frozen_log, results)
    summary = {"checks": checks, **{k: v for k, v in results.items() if k != "log"}}
    (out_dir / "freeze.json").write_text(json.dumps(summary, indent=1))
    if as_json:
        print(json.dumps(summary))
    for check, ok, detail in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {check}: {detail}")
    return all(ok for _, ok, _ in checks)


def _frozen_run(daemon: Daemon, train_cmd: list[str], gb: float) -> dict:
    low = int(daemon.gq("submit", "-p", "low", "--preempt-mode", "freeze", "-n", "train",
                        "--", *train_cmd).stdout)
    _wait(lambda: max(losses(daemon.log(low)), default=0) >= FREEZE_AT, 600,
          f"the job past step {FREEZE_AT}")
    probe = daemon.show(low)["freeze"]
    asked = time.monotonic()
    high = int(daemon.gq("submit", "-p", "high", "-n", "hog", "--", sys.executable,
                         str(Path(__file__).resolve()), "hog", "--gb", str(gb / 2),
                         "--seconds", "20").stdout)
    _wait(lambda: daemon.show(high)["state"] in ("running", "completed"), 120,
          "the preemptor to start")
    started = time.monotonic() - asked
    saw_frozen = _wait(lambda: daemon.show(low)["state"] == "frozen" or
                       daemon.show(low)["state"] in ("pending", "completed", "failed"), 120,
                       "the job to be frozen")
    state_while = daemon.show(low)
    _wait(lambda: daemon.show(low)["state"] in ("completed", "failed", "cancelled", "oom",
                                                "lost"), 900, "the frozen job to end")
    job = daemon.show(low)
    events = [" ".join(filter(None, (e["reason"], e["detail"]))) for e in job["events"]]
    return {"probe": probe, "preemptor_start_s": started, "saw_frozen": bool(saw_frozen),
            "state_while_preemptor_ran": state_while["state"],
            "host_mem": state_while.get("host_mem"), "final_state": job["state"],
            "restarts": job["restarts"], "freeze_s": _seconds(events, r"frozen in ([\d.]+)s"),
            "thaw_s": _seconds(events, r"thawed on GPU [\d,]+ in ([\d.]+)s"),
            "events": events, "log": daemon.log(low)}


def _seconds(events: list[str], pattern: str) -> float | None:
    for e in events:
        m = re.search(pattern, e)
        if m:
            return float(m[1])
    return None


def _judge(reference: str, frozen: str, r: dict) -> list[tuple[str, bool, str]]:
    ref, got = losses(reference), losses(frozen)
    steps = [int(m[1]) for m in re.finditer(r"^step (\d+) ", frozen, re.M)]
    checksum = re.findall(r"^ballast checksum (\S+)$", reference, re.M)
    checks = [
        ("the job was frozen (not requeued) while the preemptor ran",
         r.get("state_while_preemptor_ran") == "frozen",
         f"state {r.get('state_while_preemptor_ran')}, {r.get('error') or r.get('events')}"),
        ("it ended completed, never restarted",
         r.get("final_state") == "completed" and r.get("restarts") == 0,
         f"{r.get('final_state')}, restarts {r.get('restarts')}"),
        ("each step once, in order", steps == list(range(1, STEPS + 1)),
         f"{len(steps)} step lines"),
        (f"the loss at every step equals the uninterrupted run's (step {STEPS}: {ref.get(STEPS)})",
         bool(ref) and ref == got,
         f"first difference at step {next((s for s in ref if ref[s] != got.get(s)), None)}"),
        ("its GPU memory's checksum at the end equals the uninterrupted run's",
         bool(checksum) and f"ballast checksum {checksum[0]}" in frozen,
         f"reference {checksum[:1]}"),
    ]
    for name, key, target in (("freeze", "freeze_s", TARGET_FREEZE),
                              ("thaw", "thaw_s", TARGET_THAW),
                              ("preemptor started after its submit", "preemptor_start_s",
                               TARGET_PREEMPTOR)):
        value = r.get(key)
        checks.append((f"{name} within {target:g}s", value is not None and value <= target,
                       "not measured" if value is None else f"{value:.1f}s"))
    return checks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    for name in ("nvml", "freeze"):
        p = sub.add_parser(name)
        p.add_argument("--json", action="store_true")
        p.add_argument("--gb", type=float, default=40.0)
    p = sub.add_parser("train")
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--gb", type=float, default=40.0)
    p.add_argument("--step-time", type=float, default=0.05)
    p = sub.add_parser("hog")
    p.add_argument("--gb", type=float, default=20.0)
    p.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args(argv)
    if args.what == "train":
        train(args.steps, args.gb, args.step_time)
        return 0
    if args.what == "hog":
        hog(args.gb, args.seconds)
        return 0
    ok = check_nvml(args.json) if args.what == "nvml" else check_freeze(args.gb, args.json)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
