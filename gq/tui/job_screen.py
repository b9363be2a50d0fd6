"""The job screen: one job's details, why it waits or where it runs, its memory and utilisation
history, and the tail of its log, following."""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Log, Static

from gq.escapes import escape_controls, escape_lines
from gq.states import RUNNING, WAITING
from gq.tui.render import job_style, sparkline
from gq.tui.snapshot import JobRow, epoch
from gq.tui.source import NO_OUTPUT_YET, JobDetail, LogChunk
from gq.units import format_duration, format_size


def _ago(at: float | None, now: float) -> str:
    if at is None:
        return "-"
    return f"{format_duration(max(0.0, now - at))} ago"


def detail_rows(job: dict[str, Any], now: float) -> list[tuple[str, str]]:
    """The job's facts as (label, value), the ones a person checks first at the top; each
    value with its control characters escaped (a command, a directory: a user's text)."""
    started, submitted = epoch(job.get("started_at")), epoch(job.get("submitted_at"))
    if job.get("gpus") == 0:
        cards = "none (CPU-only)"
    elif job.get("gpu_ids"):
        cards = "GPU " + ",".join(map(str, job["gpu_ids"]))
    else:
        cards = f"{job['gpus']} card{'s' * (job['gpus'] != 1)}"
    mem = ("-" if job.get("gpus") == 0 else "whole cards" if job.get("mem") is None
           else f"{format_size(job['mem'])} per card")
    rows = [
        ("state", job["state"] + (f" ({job['reason']})" if job.get("reason") else "")),
        ("tier", job["priority"] + (", preemptible" if job.get("preemptible") else "")),
        ("user", job["user"]),
        ("cards", f"{cards}, {mem}"),
        ("cpus", str(job.get("cpus")) + (f", {format_size(job['ram'])} RAM" if job.get("ram")
                                          else "")),
        ("time limit", format_duration(job.get("time_limit"))),
        ("submitted", _ago(submitted, now)),
        ("started", _ago(started, now)),
        ("command", " ".join(job.get("command") or [])),
        ("cwd", job.get("cwd") or "-"),
    ]
    if job.get("failure"):  # why it failed (docs/triage.md), next to its state
        evidence = job.get("failure_evidence") or []
        rows[1:1] = [("failure", job["failure"] + (f": {evidence[-1]}" if evidence else "")),
                     ("what to do", job.get("failure_suggestion") or "-")]
    if job.get("array"):
        a = job["array"]
        rows.append(("array", f"element {a['index']} of {a['id']} ({a['size']} elements)"))
    if job.get("restarts"):
        rows.append(("restarts", str(job["restarts"])))
    prediction = job.get("prediction")
    if prediction and job["state"] in WAITING | RUNNING:
        seconds = prediction["seconds"]
        rows.append(("run time", prediction["basis"] if seconds is None else
                     f"~{format_duration(seconds)}, {prediction['basis']}"))
    for offence in job.get("offences") or ():
        rows.append(("offence", f"{offence['kind'].replace('_', '-')}: {offence['evidence']}; "
                                 f"{offence['suggestion']}"))
    usage = job.get("usage")
    if usage and usage.get("util_mean") is not None:
        rows.append(("usage", f"{usage['run']} run: mean utilisation {usage['util_mean']:.0f}%"))
    return [(label, escape_controls(value)) for label, value in rows]


def details_renderable(job: dict[str, Any], now: float, width: int = 80) -> Table:
    """Label and value, in two pairs of columns where the terminal is wide; as Text, never
    read as markup (a command may hold "[red]")."""
    pairs = 2 if width >= 120 else 1
    grid = Table.grid(padding=(0, 1), expand=True)
    for _ in range(pairs):
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="ellipsis", no_wrap=True, ratio=1)
    rows = detail_rows(job, now)
    half = (len(rows) + pairs - 1) // pairs
    for i in range(half):
        cells = [Text(c) for k in range(pairs)
                 for c in (rows[i + k * half] if i + k * half < len(rows) else ("", ""))]
        grid.add_row(*cells)
    return grid


def history_renderable(points: tuple[dict[str, Any], ...], job: dict[str, Any],
                       width: int) -> Group:
    """Per card of the job: memory and utilisation over the stored samples."""
    by_card: dict[int, list[dict[str, Any]]] = {}
    for p in points:
        by_card.setdefault(p["gpu"], []).append(p)
    if not by_card:
        return Group(Text("no samples yet (cards are sampled every few seconds while it runs)",
                          "dim"))
    spark = max(8, (width - 40) // 2)
    lines = []
    for card, series in sorted(by_card.items()):
        mems = [p.get("memory_used") for p in series]
        known = [m for m in mems if m is not None]
        top = job.get("mem") or max(known, default=0) or 1
        line = Text(f"GPU {card:<2} mem ", no_wrap=True)
        line.append_text(sparkline([None if m is None else 100.0 * m / top for m in mems], spark,
                                   style=job_style(job["id"])))
        peak = format_size(max(known)) if known else "N/A"
        line.append(f" peak {peak:<5} util ")
        utils = [p.get("utilization") for p in series]
        line.append_text(sparkline(utils, spark))
        last = utils[-1] if utils else None
        line.append(" N/A" if last is None else f" {last:.0f}%")
        lines.append(line)
    return Group(*lines)


def processes_renderable(job: dict[str, Any]) -> Text | Table:
    """What the job really runs on its cards, as nvitop lists it: pid, card, memory, command."""
    procs = job.get("processes")
    if job.get("state") not in RUNNING or procs is None:
        return Text("")
    if not procs:
        return Text("no processes of it on the cards (yet)", "dim")
    rows = [(str(p["pid"]), str(p["gpu"]),
             "N/A" if p.get("used_memory") is None else format_size(p["used_memory"]),
             escape_controls(p.get("command") or "?")) for p in procs]
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=True)
    # The numbers keep their width, however long a command line: only the command is cut.
    for n, name in enumerate(("PID", "GPU", "MEM")):
        table.add_column(name, justify="right", no_wrap=True,
                         min_width=max(len(name), *(len(r[n]) for r in rows)))
    table.add_column("COMMAND", no_wrap=True, overflow="ellipsis", ratio=1)
    for row in rows:
        table.add_row(*row[:3], Text(row[3], no_wrap=True, overflow="ellipsis"))
    return table


class JobScreen(Screen):
    """Opened with Enter (or `l`, for the log alone) on a job of the queue."""

    DEFAULT_CSS = """
    JobScreen #job-title { height: 1; background: $panel; text-style: bold; }
    JobScreen #job-top { height: auto; max-height: 60%; }
    JobScreen #job-history { height: auto; padding-bottom: 1; }
    JobScreen #job-processes { height: auto; padding-bottom: 1; }
    JobScreen #job-log-title { height: 1; background: $boost; }
    JobScreen Log { height: 1fr; min-height: 4; }
    JobScreen.-logs-only #job-top { display: none; }
    """
    BINDINGS = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("e", "switch_stream", "stdout/stderr"),
        Binding("d", "toggle_details", "Details"),
    ]

    def __init__(self, job: JobRow, clock: Callable[[], float], logs_only: bool = False):
        super().__init__()
        self.job = job
        self.clock = clock
        self.stream = "stdout"
        self.log_offset = -1  # the first read shows the log's tail
        self.log_path: str | None = None
        self.detail: JobDetail | None = None
        self.set_class(logs_only, "-logs-only")

    @property
    def key(self) -> tuple[str, int]:
        return self.job.key

    def compose(self):
        yield Static(self._title(self.job.state), id="job-title")
        with VerticalScroll(id="job-top"):
            yield Static(id="job-why")
            yield Static(id="job-history")
            yield Static(id="job-processes")
            yield Static(id="job-details")
        yield Static(" stdout", id="job-log-title")
        yield Log(id="job-log", max_lines=5000)
        yield Footer(compact=True)

    def _title(self, state: str) -> Text:
        j = self.job
        text = Text(no_wrap=True)
        text.append(f" Job {j.label}", job_style(j.id, bold=True))
        text.append(f" · {j.name} · {j.user} · {state}")
        if j.host:
            text.append(f" · {j.host}", "dim")
        return text

    def show_detail(self, detail: JobDetail, chunk: LogChunk | None, path: str | None) -> None:
        self.detail = detail
        job, now = detail.job, self.clock()
        self.query_one("#job-title", Static).update(self._title(job["state"]))
        width = self.size.width or 80
        self.query_one("#job-details", Static).update(details_renderable(job, now, width))
        self.query_one("#job-why", Static).update(Text(escape_lines(job.get("why") or ""),
                                                       "italic"))
        self.query_one("#job-history", Static).update(
            history_renderable(detail.points, job, width))
        self.query_one("#job-processes", Static).update(processes_renderable(job))
        if chunk is not None:
            self.add_log(chunk, path)

    def add_log(self, chunk: LogChunk, path: str | None) -> None:
        log = self.query_one(Log)
        if path != self.log_path:
            log.clear()
            self.log_path = path
        title = f" {self.stream}: {escape_controls(path or '-')}"
        note = chunk.note
        if note == NO_OUTPUT_YET and self.detail is not None \
                and self.detail.job.get("ended_at"):  # it wrote nothing, and will not
            note = "no output"
        if note and not chunk.text and self.log_offset <= 0:
            title += f" ({note})"
        self.query_one("#job-log-title", Static).update(Text(title, no_wrap=True,
                                                             overflow="ellipsis"))
        self.log_offset = chunk.offset
        if chunk.text:  # a job's output: Log strips \0 to \x14 only, and ESC would reach
            # the terminal; its line ends and tabs (a progress bar's \r) are the Log's
            log.write(escape_controls(chunk.text, keep="\n\r\t"))
            self.call_after_refresh(log.scroll_end, animate=False)

    def action_switch_stream(self) -> None:
        self.stream = "stderr" if self.stream == "stdout" else "stdout"
        self.log_offset = -1
        self.app.poll_now()

    def action_toggle_details(self) -> None:
        self.toggle_class("-logs-only")
