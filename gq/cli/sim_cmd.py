"""`gq sim`: replay a trace (or this host's history) offline and print what each policy did.

Offline: the replay runs in this process, with the policy code the daemon runs. Only
--from-history talks to the daemon, through the same `list` and `gpus` requests as `gq ls
--all` and `gq gpus`; it never opens the daemon's database.
"""

from __future__ import annotations

from typing import Any

from gq.protocol import BadInput
from gq.protocol.op_names import Op

POLICY_CHOICES = ("gq", "fifo", "greedy", "sjf-oracle", "tiresias", "qssf", "all")


def run_sim(trace: str | None, cluster: str | None, policy: str, fmt: str,
            time_factor: float, cpus_per_host: int, from_history: bool, as_json: bool,
            preempt: str | None = None, lab_file: str | None = None,
            jobs_file: str | None = None, tiers: str = "on",
            share_util_max: float | None = None, time_model: str | None = None,
            learn: bool = False, freezing: Any = None) -> int:
    from gq.sim.cluster import DEFAULT_CLUSTER, describe_cluster, parse_cluster
    from gq.sim.lab import Lab, read_lab
    from gq.sim.metrics import metrics
    from gq.sim.replay import POLICIES, replay

    preemption = preemption_of(preempt)
    if preemption is not None and freezing is not None:
        from dataclasses import replace

        preemption = replace(preemption, freeze=freezing)
    if policy not in POLICY_CHOICES:
        raise BadInput(f"--policy {policy}: expected one of {', '.join(POLICY_CHOICES)}")
    if tiers not in ("on", "off"):
        raise BadInput(f"--tiers {tiers}: expected on (the trace's tiers) or off (all normal)")
    if share_util_max is not None and not 1 <= share_util_max <= 10000:
        raise BadInput(f"--share-util-max {share_util_max:g}: expected a percentage of one card "
                       "from 1 to 10000 (100: the daemon's default)")
    from gq.sim.time_model import TimeModel, parse_time_model

    if time_factor < 0 or time_factor != time_factor:
        raise BadInput(f"--time-factor {time_factor}: expected 0 (no limits) or more")
    try:
        model = (TimeModel("factor", time_factor) if time_model is None
                 else parse_time_model(time_model))
    except ValueError as e:
        raise BadInput(str(e)) from None
    if from_history == (trace is not None):
        raise BadInput("give a trace file or --from-history (one of them)")
    try:
        if from_history:
            jobs, source, this_host = history_trace(cpus_per_host)
        else:
            jobs, source, this_host = *read(trace, fmt), None
        if from_history and cluster is None and this_host is None:
            raise ValueError("--from-history: this host has no cards; describe some with "
                             "--cluster")
        if cluster is not None or this_host is None:
            hosts = parse_cluster(cluster or DEFAULT_CLUSTER, cpus_per_host)
        else:
            hosts = (this_host,)
        lab = Lab() if lab_file is None else read_lab(lab_file, hosts)
    except ValueError as e:
        raise BadInput(str(e)) from None
    names = list(POLICIES) if policy == "all" else [policy]
    out = None if jobs_file is None else open_jobs_file(jobs_file)
    replays = [replay(jobs, hosts, name, time_factor, preemption=preemption, lab=lab,
                      tiers=tiers == "on", share_util_max=share_util_max, time_model=model,
                      learn=learn)
               for name in names]
    if out is not None:
        with out:
            write_jobs(out, replays)
    results = [metrics(r) for r in replays]
    if as_json:
        from gq.cli.output import print_json

        print_json(results if len(results) > 1 else results[0])
        return 0
    print(f"{source}: {len(jobs)} jobs on {describe_cluster(hosts)}, time limits "
          + (limits_text(jobs, time_factor) if time_model is None else model.describe())
          + ("; run times learned" if learn else
             ", 1 day assumed" if model.describe() == "none declared" else "")
          + ("" if tiers == "on" else ", tiers off (every job normal)"))
    if lab.ignored:
        print(f"{lab_file}: not used by a replay: {', '.join(lab.ignored)}")
    print_tables(results)
    print_sharing(results)
    for r in replays:
        if r.held_jobs:
            print(f"{r.policy}: {len(r.held_jobs)} job(s) held, as the daemon holds them: "
                  f"{r.held_jobs[0][1]}")
    return 0


JOB_COLUMNS = ["policy", "job_id", "user", "tier", "gpus", "submit", "start", "end", "wait",
               "host", "gpu_ids", "timed_out", "preemptions", "dropped"]


def lab_file(path: str | None, host_lab: bool) -> str | None:
    """--config FILE, or --lab: the file this host's daemon reads."""
    if path is not None and host_lab:
        raise BadInput("--config and --lab: give one (--lab is this host's config.toml)")
    if not host_lab:
        return path
    from pathlib import Path

    from gq.cli.config_cmd import default_file

    file = default_file()
    if not Path(file).exists():
        raise BadInput(f"--lab: this host's daemon has no {file} (its defaults: run without "
                       "--lab)")
    return file


def open_jobs_file(path: str):
    """--jobs FILE.csv, opened before the replay so that a bad path fails at once."""
    try:
        return open(path, "w", newline="")
    except OSError as e:
        raise BadInput(f"--jobs {path}: {e.strerror or e}") from None


def write_jobs(out, replays: list) -> None:
    """Each job of each replay: its times (seconds from the start of the trace), host and
    cards; a dropped job with why, and nothing else."""
    import csv

    writer = csv.writer(out)
    writer.writerow(JOB_COLUMNS)
    for r in replays:
        for j in sorted(r.jobs, key=lambda j: (j.submit, j.start)):
            writer.writerow([r.policy, j.job_id, j.user, str(j.tier), j.gpus, f"{j.submit:g}",
                             f"{j.start:g}", f"{j.end:g}", f"{j.wait:g}", j.host,
                             " ".join(map(str, j.gpu_ids)), str(j.timed_out).lower(),
                             j.preemptions, ""])
        for job_id, why in r.dropped_jobs:
            writer.writerow([r.policy, job_id] + [""] * (len(JOB_COLUMNS) - 3)
                            + [why.removeprefix("were ")])


def limits_text(jobs: list, time_factor: float) -> str:
    """Where the replay's time limits come from: the trace's rows, or --time-factor."""
    given = sum(1 for j in jobs if j.time_limit is not None)
    assumed = f"{time_factor:g}x the run time" if time_factor else "none (1 day assumed)"
    if jobs and given == len(jobs):
        return "as each row gives"
    return f"as rows give, else {assumed}" if given else assumed


def print_sharing(results: list[dict[str, Any]]) -> None:
    """What slices sharing cards did to each other (gq/sim/colocation.py), when any shared."""
    for m in results:
        f = m["sharing"]
        if f.get("pairs"):
            print(f"{m['policy']}: {f['pairs']} pairs of slices shared a card; "
                  f"{f['slowed_below_0_8']:.1%} had a job below 0.8x its speed alone; "
                  f"{f['work_per_card_hour']:.2f} cards' work per shared card-hour "
                  f"({f['shared_card_hours']:.0f} card-hours shared)")


def preemption_of(tiers: str | None):
    """--preempt low[,normal]: the replay's preemption settings, or None."""
    from gq.model import Tier
    from gq.sim.replay import Preemption

    if tiers is None:
        return None
    names = [t.strip() for t in tiers.split(",")]
    if not all(names) or any(t not in {"normal", "low"} for t in names):
        raise BadInput(f"--preempt {tiers}: expected lower tiers to preempt, e.g. low or "
                       "normal,low (high work is never preempted)")
    return Preemption(tiers=frozenset(str(Tier(t)) for t in names))


def freezing_of(preempt: str | None, mode: str | None, freeze_ram: str | None,
                copy_rate: str | None):
    """--preempt-mode, --freeze-ram, --copy-rate: the replay's freezing, or None (signal)."""
    from gq.model import parse_preempt_mode
    from gq.units import parse_size

    if mode is None and (freeze_ram or copy_rate):
        raise BadInput("--freeze-ram and --copy-rate need --preempt-mode freeze or auto")
    if mode is None:
        return None
    try:
        mode = parse_preempt_mode(mode)
        ram = None if freeze_ram is None else parse_size(freeze_ram)
        rate = None if copy_rate is None else parse_size(copy_rate)
    except ValueError as e:
        raise BadInput(str(e)) from None
    if preempt is None:
        raise BadInput(f"--preempt-mode {mode}: needs --preempt (which tiers may be preempted)")
    if mode == "signal":
        return None
    from gq.sim.freeze_model import FreezeModel

    return FreezeModel(mode, ram, **({} if rate is None else {"rate": float(rate)}))


def read(trace: str, fmt: str) -> tuple[list, str]:
    from gq.sim.traces import read_trace

    t = read_trace(trace, fmt)
    skipped = sum(t.skipped.values())
    return list(t.jobs), f"{trace} ({t.format}" + (f", {skipped} rows skipped)" if skipped
                                                   else ")")


def history_trace(cpus: int) -> tuple[list, str, Any]:
    """This host's ended jobs as trace jobs, and this host's cards as a policy Host."""
    from gq.cli.client import call
    from gq.model import Tier
    from gq.policy import Card, Host
    from gq.sim.traces import TraceJob
    from gq.units import parse_iso

    from gq.cli.listing import list_jobs

    # page by page: the daemon never holds every job of its history at once
    ran = [j for j in list_jobs(all=True, user=None, states=[], hosts=None)
           if j["started_at"] and j["ended_at"]]
    if not ran:
        raise ValueError("--from-history: no job of this host has run yet")
    origin = min(parse_iso(j["submitted_at"]) for j in ran)
    jobs = sorted((TraceJob(
        job_id=str(j["id"]), submit_time=parse_iso(j["submitted_at"]) - origin,
        duration=parse_iso(j["ended_at"]) - parse_iso(j["started_at"]), user=j["user"],
        gpus=j["gpus"], mem=j["mem"], tier=Tier(j["priority"]), cpus=j["cpus"], ram=j["ram"],
        time_limit=j["time_limit"], name=j["name"], pool=j.get("pool"),
        gpus_max=j.get("gpus_max"), interactive=bool(j.get("interactive"))) for j in ran),
        key=lambda tj: (tj.submit_time, int(tj.job_id)))
    cards = tuple(Card(c["index"], c["memory_total"], 0, c["island"]) for c in call(Op.GPUS))
    host = Host(cpus=cpus, cards=cards, name="host0") if cards else None
    return jobs, f"history of this host ({len(ran)} ended jobs)", host


def print_tables(results: list[dict[str, Any]]) -> None:
    from gq.cli.output import table
    from gq.units import format_duration as d

    headers = ["POLICY", "JOBS", "AVG_WAIT", "P95_WAIT", "AVG_JCT", "ALLOC", "MAKESPAN",
               "MAX_WAIT_LARGEST", "PREEMPTED", "REPLAY"]
    rows = [[m["policy"], str(m["jobs"]), d(m["avg_wait_s"]), d(m["p95_wait_s"]),
             d(m["avg_jct_s"]), f"{m['allocation_rate']:.1%}", d(m["makespan_s"]),
             largest(m), str(m["preemptions"]), f"{m['sim_seconds']:.1f}s"] for m in results]
    print(table(headers, rows))
    print()
    tier_rows = [[m["policy"], tier, str(t["jobs"]), d(t["avg_wait_s"]), d(t["p95_wait_s"]),
                  d(t["avg_jct_s"]), f"{t['allocation_rate']:.1%}", largest(t)]
                 for m in results for tier, t in m["by_tier"].items()]
    print(table(["POLICY", "TIER", "JOBS", "AVG_WAIT", "P95_WAIT", "AVG_JCT", "ALLOC",
                 "MAX_WAIT_LARGEST"], tier_rows))
    notes = [f"dropped {n} job(s) that {why}" for why, n in results[0]["dropped_reasons"].items()]
    notes += [f"{m['policy']}: {m['unfinished']} job(s) never started" for m in results
              if m["unfinished"]]
    if notes:
        print("\n" + "\n".join(notes))


def largest(m: dict[str, Any]) -> str:
    from gq.units import format_duration

    n = m["largest_gpus"]
    return f"{format_duration(m['max_wait_largest_s'])} ({n} GPU{'s' * (n != 1)})"
