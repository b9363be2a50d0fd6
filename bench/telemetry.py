"""Benchmark card telemetry: the daemon's CPU while it samples 8 simulated cards with 32
processes, and how much the store grows per card-day."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

import psutil
from _harness import TempDaemon, machine, print_table, verdict

from gq.cli.submit_args import request_args
from gq.store import Store
from gq.store.samples import CardSample, JobSample

CARDS, PROCS = 8, 32
SIM = f"{CARDS}x80G"
TARGET_CPU = 0.01  # CPU seconds per wall second: under 1% of one core
DAY = 86400.0
INTERVAL = 5.0  # the default [telemetry] interval
RAW_DAYS, ROLLUP_DAYS = 1, 30  # the default retentions


# The offender checks run from the first sample a job's window is full: shortened so that
# they run while CPU is measured. Half the jobs are idle, so offences are kept up to date too.
OFFENDERS = '[offenders]\nidle_window = "10s"\nover_declared_after = "10s"\n'


def daemon_cpu(seconds: float, config: str) -> dict:
    """CPU seconds per wall second of a daemon holding PROCS burn jobs on CARDS cards."""
    with TempDaemon(PROCS * 2, SIM, config + OFFENDERS) as daemon, \
            daemon.connect(timeout=60) as conn:
        ids = [conn.call("submit", **request_args({"mem": "8G"}, [
            sys.executable, "-m", "gq.sim.burn", "--mem", "6G", "--util", str(util)]))["id"]
            for util in [60, 5] * (PROCS // 2)]
        deadline = time.monotonic() + 60
        while sum(len(c["processes"] or []) for c in conn.call("gpus")) < PROCS:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {PROCS} burn processes did not all show: "
                                   f"{daemon.log_tail()}")
            time.sleep(0.2)
        time.sleep(12.0)  # let the starts settle, and the idle windows fill
        proc = psutil.Process(daemon.proc.pid)
        before, began = proc.cpu_times(), time.monotonic()
        time.sleep(seconds)
        after, wall = proc.cpu_times(), time.monotonic() - began
        cpu = (after.user - before.user) + (after.system - before.system)
        offenders = len(conn.call("offenders"))
        conn.call("cancel", ids=[str(i) for i in ids])
        conn.call("wait", ids=[str(i) for i in ids])
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 3), "ratio": round(cpu / wall, 5),
            "offenders": offenders}


def store_growth(hours: float) -> dict:
    """Write `hours` of samples of CARDS cards and PROCS jobs, as the daemon writes them at the
    default interval, roll them up, and measure what each table takes per card-day."""
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="gq-bench-") as d:
        store = Store(os.path.join(d, "gq.db"))
        samples = store.samples
        start = 1_700_000_000.0
        steps = int(hours * 3600 / INTERVAL)
        with store.relaxed():
            for hour_start in range(0, steps, 720):
                with store.atomic():
                    for i in range(hour_start, min(steps, hour_start + 720)):
                        t = start + i * INTERVAL
                        cards = [CardSample(c, rng.randint(0, 100), rng.randint(0, 80 << 30),
                                            rng.randint(0, 4 << 30), rng.randint(30, 85),
                                            rng.uniform(60, 700)) for c in range(CARDS)]
                        jobs = [JobSample(1000 + j, j % CARDS, rng.randint(0, 20 << 30),
                                          rng.randint(0, 100)) for j in range(PROCS)]
                        samples.write(t, cards, jobs)
                samples.roll_up(start + (hour_start + 720) * INTERVAL)
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes = dict(store.db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
        store.close()
    days = hours / 24
    per = lambda *names: sum(sizes.get(n, 0) for n in names) / days / CARDS  # noqa: E731
    raw, rollup = per("card_samples", "job_samples"), per("card_minutes", "job_minutes")
    steady = (raw * RAW_DAYS + rollup * ROLLUP_DAYS) * CARDS
    return {"hours_written": hours, "raw_bytes_per_card_day": round(raw),
            "rollup_bytes_per_card_day": round(rollup),
            "steady_state_bytes_8_cards": round(steady)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20 s of CPU, 6 hours of samples")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    opts = parser.parse_args()
    seconds, hours = (20.0, 6.0) if opts.quick else (60.0, 24.0)
    info = {**machine(), "sim_gpus": SIM, "processes": PROCS}
    sampling = daemon_cpu(seconds, "")
    off = daemon_cpu(seconds, "[telemetry]\ninterval = 0\n")
    growth = store_growth(hours)
    if opts.json:
        print(json.dumps({**info, "sampling": sampling, "sampling_off": off, "store": growth}))
        return 0
    mib = lambda b: f"{b / (1 << 20):.2f} MiB"  # noqa: E731
    print(f"gq telemetry benchmark, {info['date']}; python {info['python']}; "
          f"{info['cores']} cores; GQ_SIM_GPUS={SIM}, {PROCS} burn jobs")
    print_table([
        (f"daemon CPU over {seconds:g} s (CPU seconds / wall seconds)", "", ""),
        (f"sampling every {INTERVAL:g} s (default), {sampling['offenders']} offenders",
         f"{sampling['ratio'] * 100:.2f}%",
         f"target: under {TARGET_CPU:.0%} of a core  {verdict(sampling['ratio'] < TARGET_CPU)}"),
        ("baseline: sampling off ([telemetry] interval = 0)", f"{off['ratio'] * 100:.2f}%",
         "cards still read every tick, for the scheduler"),
        (f"store growth, from {hours:g} h of samples every {INTERVAL:g} s", "", ""),
        ("raw samples per card-day", mib(growth["raw_bytes_per_card_day"]),
         f"kept {RAW_DAYS} day"),
        ("minute rollups per card-day", mib(growth["rollup_bytes_per_card_day"]),
         f"kept {ROLLUP_DAYS} days"),
        ("steady state, 8 cards", mib(growth["steady_state_bytes_8_cards"]),
         "1 day raw + 30 days of rollups"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
