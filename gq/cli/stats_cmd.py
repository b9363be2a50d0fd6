"""`gq offenders` and `gq stats` for people, and `gq stats --prometheus` for scrapers."""

from __future__ import annotations

from typing import Any

from gq.cli.output import say, table
from gq.protocol.op_names import Op
from gq.stats.health import NO_ACCOUNT
from gq.units import format_duration, format_measured, parse_iso

BLOCKS = " ▁▂▃▄▅▆▇█"


def print_offenders(offenders: list[dict[str, Any]], now: float) -> None:
    if not offenders:
        print("no offenders: every card held is in use, and every byte on them is accounted for")
        return
    rows = []
    for o in offenders:
        who = f"job {o['job_id']}" if o["job_id"] is not None else f"pid {o['pid']}"
        action = o["action"]
        if o["acted"]:
            action = f"{o['acted']}"
        elif o.get("action_due_at"):
            action += f" (due in {format_duration(max(0, parse_iso(o['action_due_at']) - now))})"
        rows.append([o["kind"].replace("_", "-"), who, o["user"] or "-",
                     ",".join(map(str, o["gpus"])) or "-",
                     format_duration(now - parse_iso(o["since"])), action])
    print(table(["KIND", "WHO", "USER", "GPUS", "FOR", "ACTION"], rows))
    print()
    for o in offenders:
        who = f"job {o['job_id']}" if o["job_id"] is not None else f"pid {o['pid']}"
        evidence = o["evidence"]  # a process's begins with its pid: said once
        if evidence.startswith(who + " "):
            evidence = evidence[len(who) + 1:]
        say(f"{who} ({o['kind'].replace('_', '-')}): {evidence}")
        say(f"  suggestion: {o['suggestion']}")


def _pct(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.1f}%"


def _secs(value: float | None) -> str:
    return "-" if value is None else format_measured(value)


def _learned(p: dict[str, Any] | None, m: dict[str, Any] | None) -> str:
    """What gq learned and how good it was: run-time predictions, learned --mem."""
    lines = []
    if p is not None:
        error = ("no completed run had a prediction" if p["median_abs_error_s"] is None
                 else f"median absolute error {_secs(p['median_abs_error_s'])}")
        lines.append(f"run-time predictions: {p['predicted']} of {p['runs']} completed runs "
                     f"had one; {error}")
    if m is not None and m["runs"]:
        over = "N/A" if m["over_reservation"] is None else f"{m['over_reservation']:.0%}"
        lines.append(f"learned --mem ([scheduler] learn_mem): {m['runs']} runs, {over} of "
                     f"the memory reserved unused, {m['oom_rate']:.0%} out of memory")
    return "\n".join(lines)


def print_stats(s: dict[str, Any]) -> None:
    from gq.stats.health import print_health

    u, a = s["utilization"], s["allocation"]
    say(f"{s['host']}: {s['gpus']} GPUs, {s['covered_from']} to {s['until']}")
    say("\n".join(print_health(s["health"])) + "\n")
    rate = "N/A" if a["rate"] is None else f"{a['rate'] * 100:.1f}%"
    say(f"  utilisation {_pct(u['mean'])} (unknown in {u['unknown_samples']} of "
          f"{u['samples']} samples); allocated {rate} ({a['gpu_hours']:.1f} of "
          f"{a['capacity_gpu_hours']:.1f} GPU-hours); {s['oom']} out-of-memory run(s)")
    days: dict[str, list[str]] = {}
    for h in u["by_hour"]:
        day, hour = h["hour"][:10], int(h["hour"][11:13])
        days.setdefault(day, [" "] * 24)[hour] = (
            "?" if h["mean"] is None else BLOCKS[min(8, round(h["mean"] / 12.5))])
    if days:
        print("\n  utilisation by hour (UTC, 0h to 23h; ? = unknown)")
        for day, blocks in days.items():
            say(f"  {day}  |{''.join(blocks)}|")
    say("\n" + table(["TIER", "STARTED", "MEAN WAIT", "P50", "P95"], [
        [t, str(w["jobs"]), _secs(w["mean"]), _secs(w["p50"]), _secs(w["p95"])]
        for t, w in s["wait_seconds"].items()]))
    if s.get("by_pool"):
        say("\n" + table(["POOL", "GPUS", "UTIL", "STARTED", "MEAN WAIT", "P50", "P95"], [
            [name, ",".join(map(str, p["gpus"])) or "-", _pct(p["utilization"]),
             str(p["waits"]["jobs"]), _secs(p["waits"]["mean"]), _secs(p["waits"]["p50"]),
             _secs(p["waits"]["p95"])] for name, p in s["by_pool"].items()]))
    ended = ", ".join(f"{k} {v}" for k, v in s["jobs_by_state"].items()) or "none"
    say(f"\nended jobs: {ended}")
    print(_learned(s.get("predictions"), s.get("learned_mem")))
    if len(s["gpu_hours_by_account"]) > 1 or NO_ACCOUNT not in s["gpu_hours_by_account"]:
        say("\n" + table(["ACCOUNT", "GPU-HOURS"], [
            [name, f"{hours:.2f}"] for name, hours in s["gpu_hours_by_account"].items()]))
    users = sorted(set(s["gpu_hours_by_user"]) | set(s["idle_gpu_hours_by_user"]))
    if users:
        say("\n" + table(["USER", "GPU-HOURS", "IDLE GPU-HOURS"], [
            [name, f"{s['gpu_hours_by_user'].get(name, 0):.2f}",
             f"{s['idle_gpu_hours_by_user'].get(name, 0):.2f}"] for name in users]))
    failed = s.get("failures", {}).get("by_month")
    if failed:  # why runs failed (docs/triage.md)
        say("\n" + table(["MONTH", "USER", "FAILURE", "RUNS"], [
            [f["month"], f["user"], f["failure"], str(f["runs"])] for f in failed]))
    offenders = s["offenders"]["list"]
    say(f"\noffenders: {len(offenders)}" + "".join(
        f"\n  {o['since']}  {o['kind'].replace('_', '-'):<13} "
        f"{'job ' + str(o['job_id']) if o['job_id'] is not None else 'pid ' + str(o['pid'])}"
        f" ({o['user'] or '-'}): {o['evidence']}" + (f" [{o['acted']}]" if o["acted"] else "")
        for o in offenders))


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus(s: dict[str, Any], period: str) -> str:
    """The stats as Prometheus text exposition (format 0.0.4): gauges over the period."""
    base = f'host="{_label(s["host"])}",period="{_label(period)}"'
    lines: list[str] = []

    def metric(name: str, help_text: str, kind: str, samples: list[tuple[str, Any]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            if value is not None:
                extra = f",{labels}" if labels else ""
                lines.append(f"{name}{{{base}{extra}}} {value:g}" if isinstance(value, float)
                             else f"{name}{{{base}{extra}}} {value}")

    u = s["utilization"]
    metric("gq_gpu_utilization_ratio", "Mean GPU utilisation over the period (0 to 1).",
           "gauge", [("", None if u["mean"] is None else u["mean"] / 100)] + [
               (f'gpu="{g}"', None if m is None else m / 100) for g, m in u["by_gpu"].items()])
    metric("gq_gpu_allocation_ratio", "Share of GPU time held by jobs over the period.",
           "gauge", [("", s["allocation"]["rate"])])
    waits = []
    for tier, w in s["wait_seconds"].items():
        waits += [(f'tier="{tier}",quantile="0.5"', w["p50"]),
                  (f'tier="{tier}",quantile="0.95"', w["p95"])]
    metric("gq_job_wait_seconds", "Time from submit to first start of the jobs started in the "
           "period.", "summary", waits)
    for tier, w in s["wait_seconds"].items():
        total = 0.0 if w["mean"] is None else w["mean"] * w["jobs"]
        lines.append(f'gq_job_wait_seconds_sum{{{base},tier="{tier}"}} {total:g}')
        lines.append(f'gq_job_wait_seconds_count{{{base},tier="{tier}"}} {w["jobs"]}')
    metric("gq_jobs_ended", "Jobs that ended in the period, by end state.", "gauge",
           [(f'state="{k}"', v) for k, v in s["jobs_by_state"].items()])
    metric("gq_oom_runs", "Runs that ended out of GPU memory in the period.", "gauge",
           [("", s["oom"])])
    metric("gq_failed_runs", "Runs that failed in the period, by user and failure class.",
           "gauge", [(f'user="{_label(f["user"])}",failure="{f["failure"]}"', f["runs"])
                     for f in _by_user_and_class(s)])
    metric("gq_gpu_hours", "GPU-hours held by each user's jobs in the period.", "gauge",
           [(f'user="{_label(k)}"', float(v)) for k, v in s["gpu_hours_by_user"].items()])
    metric("gq_account_gpu_hours", "GPU-hours held by each account's jobs in the period.",
           "gauge", [(f'account="{_label(k)}"', float(v))
                     for k, v in s["gpu_hours_by_account"].items()])
    metric("gq_health_ok", "Whether each health indicator meets its target (1 pass, 0 fail).",
           "gauge", [(f'indicator="{i["name"]}"', {"pass": 1, "fail": 0}.get(i["status"]))
                     for i in s["health"]])
    metric("gq_idle_gpu_hours", "GPU-hours each user's jobs held while idle in the period.",
           "gauge", [(f'user="{_label(k)}"', float(v))
                     for k, v in s["idle_gpu_hours_by_user"].items()])
    metric("gq_offenders", "Offences seen in the period, by kind.", "gauge",
           [(f'kind="{k}"', v) for k, v in s["offenders"]["by_kind"].items()])
    return "\n".join(lines) + "\n"


def _by_user_and_class(s: dict[str, Any]) -> list[dict[str, Any]]:
    totals: dict[tuple[str, str], int] = {}
    for f in s.get("failures", {}).get("by_month", []):
        totals[(f["user"], f["failure"])] = totals.get((f["user"], f["failure"]), 0) + f["runs"]
    return [{"user": u, "failure": c, "runs": n} for (u, c), n in sorted(totals.items())]


def monthly(of: str | None) -> str:
    """The monthly review (gq/stats/review.py) of the month `of` (YYYY-MM; None: the last)."""
    import time

    from gq.cli.client import call
    from gq.protocol import BAD_INPUT, GqError
    from gq.stats.review import month_bounds, review

    try:
        before, start, end, name, last_name = month_bounds(of, time.time())
    except ValueError as e:
        raise GqError(str(e), BAD_INPUT) from None
    if start >= time.time():
        raise GqError(f"--of {of}: that month has not begun", BAD_INPUT)
    this = call(Op.STATS, start=start, until=end)
    last = call(Op.STATS, start=before, until=start)
    return review(this, last, name, last_name)


def print_fairshare(found: dict[str, Any]) -> None:
    """`gq fairshare` as a table: an account's row, then its users' rows. A user in no
    configured account is an account of their own, marked (own)."""

    def part(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    rows = []
    for a in found["accounts"]:
        name = a["account"] if a["configured"] else f"{a['account']} (own)"
        rows.append([name, "", f"{a['share']:g}", part(a["norm_share"]),
                     f"{a['usage_card_hours']:.1f}", part(a["norm_usage"]), "",
                     f"{a['factor']:.3f}"])
        rows += [["", u["user"], "", "", f"{u['usage_card_hours']:.1f}", part(u["norm_usage"]),
                  part(u["effective_usage"]), f"{u['factor']:.3f}"] for u in a["users"]]
    if not rows:
        print("no usage yet: every job's fair-share factor is 1")
        return
    print(table(["ACCOUNT", "USER", "SHARE", "NORM_SHARE", "CARD_HOURS", "USAGE",
                 "EFFECTIVE_USAGE", "FAIRSHARE"], rows))
    print(f"\nUsage decays by half every {format_duration(found['half_life'])}. A user's factor "
          "is 2^-(effective usage / fair share);\nit is the fair-share part of a waiting job's "
          "score (gq show ID --json: score).")
