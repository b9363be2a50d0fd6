"""`gq stats --month`: the monthly review as Markdown, the reviewed month against the one before.

It reads two `stats` answers (gq/stats/lab.py), one a month, and says what a lab looks at once a
month: the three health numbers and their trends, how much of the cards was used and by which
account, and who wasted most. Months are calendar months in UTC.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from gq.stats.health import shown
from gq.units import format_measured

TOP = 5  # offenders listed


def month_bounds(text: str | None, now: float) -> tuple[float, float, float, str, str]:
    """(start of the month before, start of the month, its end, the month's name, the name of
    the month before) for 'YYYY-MM', or, for None, the last month that has ended."""
    if text is None:
        today = datetime.fromtimestamp(now, timezone.utc)
        year, month = (today.year, today.month - 1) if today.month > 1 else (today.year - 1, 12)
    else:
        try:
            year, month = (int(part) for part in text.split("-"))
            datetime(year, month, 1)
        except ValueError:
            raise ValueError(f"--of {text}: expected a month as YYYY-MM, e.g. 2026-05") from None

    def first(y: int, m: int) -> datetime:
        return datetime(y + (m - 1) // 12, (m - 1) % 12 + 1, 1, tzinfo=timezone.utc)

    before, start, end = first(year, month - 1), first(year, month), first(year, month + 1)
    return (before.timestamp(), start.timestamp(), end.timestamp(), start.strftime("%B %Y"),
            before.strftime("%B %Y"))


def _change(now: float | None, then: float | None, unit: str) -> str:
    if now is None or then is None:
        return "-"
    delta = now - then
    if unit == "s":
        return ("+" if delta >= 0 else "-") + format_measured(abs(delta))
    return f"{delta:+.1f} pts" if unit == "%" else f"{delta:+.1f}"


def _hours(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def review(this: dict[str, Any], last: dict[str, Any], name: str, last_name: str) -> str:
    """The review as Markdown."""
    if this["period_seconds"] <= 0:  # the month ended before this host's history began
        return (f"# GPU review: {name} ({this['host']})\n\nNo figures for {name}: this "
                f"host's history begins {this.get('history_from') or 'later'}.\n")
    lines = [f"# GPU review: {name} ({this['host']})", "",
             f"{this['gpus']} cards; figures from {this['covered_from']} to {this['until']}, "
             f"compared with {last_name}.", "", "## Health", "",
             f"| indicator | {name} | {last_name} | change | target | |",
             "|---|---|---|---|---|---|"]
    previous = {i["name"]: i for i in last["health"]}
    for ind in this["health"]:
        before = previous.get(ind["name"], {"value": None})
        lines.append(f"| {ind['label']} | {shown(ind)} | {shown(before) if 'unit' in before else '-'}"
                     f" | {_change(ind['value'], before['value'], ind['unit'])} | "
                     f"{ind['target']} | {ind['status']} |")
    a, b = this["allocation"], last["allocation"]
    rate = lambda x: "N/A" if x["rate"] is None else f"{x['rate'] * 100:.1f}%"  # noqa: E731
    ended = sum(this["jobs_by_state"].values())
    lines += ["", "## Use", "",
              f"- GPU-hours allocated: {a['gpu_hours']:.1f} of {a['capacity_gpu_hours']:.1f} "
              f"({rate(a)}); {last_name}: {b['gpu_hours']:.1f} ({rate(b)})",
              f"- jobs ended: {ended} ({', '.join(f'{k} {v}' for k, v in this['jobs_by_state'].items()) or 'none'}); "
              f"{last_name}: {sum(last['jobs_by_state'].values())}",
              f"- out-of-memory runs: {this['oom']} ({last_name}: {last['oom']})",
              "", "## Use by account", ""]
    accounts = sorted(set(this["gpu_hours_by_account"]) | set(last["gpu_hours_by_account"]),
                      key=lambda k: -this["gpu_hours_by_account"].get(k, 0.0))
    total = sum(this["gpu_hours_by_account"].values())
    if accounts:
        lines += [f"| account | GPU-hours | share | {last_name} | change |", "|---|---|---|---|---|"]
        for acc in accounts:
            now_h = this["gpu_hours_by_account"].get(acc, 0.0)
            then_h = last["gpu_hours_by_account"].get(acc, 0.0)
            share = f"{100 * now_h / total:.1f}%" if total else "-"
            lines.append(f"| {acc} | {now_h:.1f} | {share} | {then_h:.1f} | "
                         f"{_change(now_h, then_h, 'h')} |")
    else:
        lines.append("No GPU time was used.")
    lines += ["", "## Top offenders", ""] + _offenders(this)
    return "\n".join(lines) + "\n"


def _offenders(s: dict[str, Any]) -> list[str]:
    """Users by idle GPU-hours, then offences: the ones to talk to first."""
    count: dict[str, int] = defaultdict(int)
    kinds: dict[str, set[str]] = defaultdict(set)
    for o in s["offenders"]["list"]:
        who = o["user"] or "(unknown)"
        count[who] += 1
        kinds[who].add(o["kind"].replace("_", "-"))
    idle = s["idle_gpu_hours_by_user"]
    users = sorted(set(count) | {u for u, h in idle.items() if h > 0},
                   key=lambda u: (-idle.get(u, 0.0), -count.get(u, 0), u))[:TOP]
    if not users:
        return ["No offenders: every card held was in use."]
    return ["| user | idle GPU-hours | offences | kinds |", "|---|---|---|---|"] + [
        f"| {u} | {_hours(idle.get(u, 0.0))} | {count.get(u, 0)} | "
        f"{', '.join(sorted(kinds.get(u, ()))) or '-'} |" for u in users]
