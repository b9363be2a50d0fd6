"""The memory map and the offenders panel of `gq top`'s main screen, and each host's heading."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from gq.escapes import escape_controls
from gq.tui.render import MemoryMapRenderable, job_style
from gq.tui.snapshot import FROZEN, RUNNING, WAITING, HostSnapshot, OffenceRow
from gq.units import format_duration, format_size

STALE_AFTER = 3.0  # seconds without fresh data before a host says how old its data is


def host_heading(host: HostSnapshot, now: float, interval: float = 1.0) -> Text:
    """'▌ node1 [SIM] 4 cards · 3 running · 5 waiting', with a badge when its data is old or
    its daemon cannot be reached."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("▌ ", "bold blue")
    text.append(escape_controls(host.name), "bold")
    if host.simulated:
        text.append(" ")
        text.append(" SIM ", "bold black on rgb(220,200,90)")
    age = None if host.fetched_at is None else max(0.0, now - host.fetched_at)
    if host.error:
        text.append(" ")
        text.append(f" {escape_controls(host.error)} ", "bold white on red")
    if age is not None and (host.error or age > max(STALE_AFTER, 2.5 * interval)):
        text.append(" ")
        text.append(f" updated {format_duration(age)} ago ", "black on rgb(230,160,60)")
    if host.fetched_at is None:
        return text  # nothing known yet: no counts to give
    running = sum(j.state in RUNNING for j in host.jobs)
    waiting = sum(j.state in WAITING for j in host.jobs)
    text.append(f"  {len(host.cards)} card{'s' * (len(host.cards) != 1)} · {running} running · "
                f"{waiting} waiting", "dim")
    frozen = [j for j in host.jobs if j.state in FROZEN]
    if frozen:  # their GPU state takes host memory: a resource of its own
        held = format_size(sum(j.host_mem or 0 for j in frozen))
        text.append(f" · {len(frozen)} frozen ({held} host memory)", "rgb(120,170,255)")
    if host.offences:
        text.append(f" · {len(host.offences)} offender{'s' * (len(host.offences) != 1)}",
                    "rgb(230,90,90)")
    return text


class MemoryMap(Static):
    """One bar per card, grouped by host: who holds which slice of every card."""

    DEFAULT_CSS = """
    MemoryMap {
        height: auto;
        max-height: 50%;
        overflow-y: auto;
        padding: 0 0;
    }
    """

    def show(self, hosts: tuple[HostSnapshot, ...], now: float, interval: float) -> None:
        largest = max((c.memory_total for h in hosts for c in h.cards), default=0)
        parts: list = []
        for host in hosts:
            parts.append(host_heading(host, now, interval))
            if host.cards:
                parts.append(MemoryMapRenderable(host.cards, largest))
            elif host.fetched_at is not None:
                parts.append(Text("   no GPUs on this host", "dim"))
        self.update(Group(*parts))


def offence_text(o: OffenceRow, now: float) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    # Spelled as `gq offenders` spells it, and never run into what follows.
    text.append(f"{o.kind.replace('_', '-'):<13} ", "bold rgb(230,90,90)")
    # A process's evidence begins with its pid and says whose it is, on which card ("pid 4242
    # (user mallory: python leak.py) holds 6G on GPU 2 outside gq"): the line goes on from
    # the pid it names, each said once.
    named = f"pid {o.pid}"
    told = o.job_id is None and o.evidence.startswith(named + " ")
    if o.job_id is not None:
        text.append(f"job {o.job_id}", job_style(o.job_id, bold=True))
        text.append(f" {o.user or '?'}")
    else:
        text.append(named, "bold")
        if o.user and not told:
            text.append(f" {o.user}")
    if o.gpus and not told:
        text.append(f" GPU {','.join(map(str, o.gpus))}", "dim")
    if told:
        text.append(o.evidence[len(named):])
    if o.since is not None:
        text.append(f" for {format_duration(max(0.0, now - o.since))}", "dim")
    if not told:
        text.append(f": {o.evidence}")
    if o.action_due_at is not None:
        text.append(f" ({o.action} in {format_duration(max(0.0, o.action_due_at - now))})",
                    "bold")
    if o.suggestion:
        text.append(f" → {o.suggestion}", "italic")
    return text


class OffendersPanel(Static):
    """The jobs and processes wasting cards now, with their evidence and what to do."""

    DEFAULT_CSS = """
    OffendersPanel {
        height: auto;
        max-height: 30%;
        overflow-y: auto;
        border-top: solid rgb(230,90,90) 60%;
    }
    OffendersPanel.-none { border-top: solid $panel; color: $text-muted; }
    """

    def show(self, hosts: tuple[HostSnapshot, ...], now: float) -> None:
        many = len(hosts) > 1
        lines = []
        for host in hosts:
            for o in host.offences:
                line = offence_text(o, now)
                if many:
                    line = Text.assemble((f"{escape_controls(host.name)} ", "dim"), line,
                                         no_wrap=True, overflow="ellipsis")
                lines.append(line)
        self.set_class(not lines, "-none")
        self.border_title = f"Offenders ({len(lines)})" if lines else "No offenders"
        self.update(Group(*lines) if lines else "")
