"""The queue: running and waiting jobs as a virtual list that draws only the lines on screen.

Applying a refresh replaces a list and an index (no widget per row), so 5,000 jobs cost about
what 100 do; the cursor follows a job by its key, not by its row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from gq.tui.render import job_style
from gq.tui.snapshot import FROZEN, RUNNING, STATE_ORDER, TIER_ORDER, JobRow
from gq.units import format_duration, format_size

SORTS: dict[str, Callable[[JobRow], tuple]] = {
    # Running first, then what starts next: tier, then age (the daemon's score breaks ties).
    "queue": lambda j: (STATE_ORDER.get(j.state, 9), TIER_ORDER.get(j.tier, 9), j.id),
    "id": lambda j: (j.id,),
    "user": lambda j: (j.user, j.id),
    "tier": lambda j: (TIER_ORDER.get(j.tier, 9), STATE_ORDER.get(j.state, 9), j.id),
    "time": lambda j: (j.since() or 0.0, j.id),  # longest running or waiting first
    "gpus": lambda j: (-j.gpus, -(j.mem or 1 << 60), j.id),
}
STATE_STYLES = {"running": Style(color="green"), "preempting": Style(color="rgb(255,160,0)"),
                "stopping": Style(color="rgb(255,160,0)"),
                "pending": Style(color="yellow"), "held": Style(color="magenta"),
                "frozen": Style(color="rgb(120,170,255)")}
TIER_STYLES = {"high": Style(color="red", bold=True), "normal": Style(), "low": Style(dim=True)}


@dataclass(frozen=True)
class Column:
    title: str
    width: int
    flex: bool = False


def columns(width: int, hosts: bool) -> list[Column]:
    fixed = [Column("ID", 7)] + ([Column("HOST", 10)] if hosts else []) + [
        Column("USER", 8), Column("TIER", 6), Column("STATE", 10), Column("GPUS", 7),
        Column("MEM", 6), Column("TIME", 7)]
    rest = max(10, width - sum(c.width + 1 for c in fixed))
    name = max(10, min(24, rest // 2))
    return fixed + [Column("NAME", name), Column("REASON / EXPECTED START", rest - name - 1, True)]


def _cards(job: JobRow) -> str:
    if job.gpus == 0:
        return "-"
    if job.state in RUNNING and job.gpu_ids:
        return ",".join(map(str, job.gpu_ids))
    if job.state in FROZEN:
        return "none"
    return f"need {job.gpus}"


def _reason(job: JobRow, now: float) -> str:
    if job.state in FROZEN:
        return f"{format_size(job.host_mem or 0)} in host memory"
    if job.state in RUNNING:
        return "" if job.state == "running" else (job.reason or "stopping")
    text = job.reason or ""
    if job.expected_start is not None:
        text += f", starts in ~{format_duration(max(0.0, job.expected_start - now))}"
        if job.start_basis:
            text += f" ({job.start_basis.removeprefix('when ')})"
    elif (job.start_basis or "").startswith("unknown"):
        text += ", start unknown"
    return text


def _mem(job: JobRow) -> tuple[str, str]:
    """Card memory as `gq ls` shows it: `-` for a CPU-only job, which holds no card."""
    if job.gpus == 0:
        return "-", "dim"
    return ("whole", "dim") if job.mem is None else (format_size(job.mem), "")


def row_text(job: JobRow, cols: list[Column], now: float, hosts: bool) -> Text:
    """One job as a line of the queue; times relative to `now`."""
    since = job.since()
    cells: list[tuple[str, Style | str]] = [(job.label, job_style(job.id, bold=True))]
    if hosts:
        cells.append((job.host, "dim"))
    cells += [
        (job.user, ""),
        (job.tier, TIER_STYLES.get(job.tier, "")),
        (job.state, STATE_STYLES.get(job.state, "")),
        (_cards(job), ""),
        _mem(job),
        (format_duration(None if since is None else max(0.0, now - since)), ""),
        (job.name, ""),
        (_reason(job, now), "dim"),
    ]
    text = Text(no_wrap=True, end="")
    for (value, style), col in zip(cells, cols):
        cell = value if len(value) <= col.width else value[: max(0, col.width - 1)] + "…"
        text.append(cell.ljust(col.width), style)
        text.append(" ")
    return text


def header_text(cols: list[Column], sort: str) -> Text:
    text = Text(no_wrap=True, end="")
    for col in cols:
        title = col.title + ("▼" if col.title.lower() == sort else "")
        text.append(title[: col.width].ljust(col.width) + " ", "bold")
    return text


class QueueView(ScrollView, can_focus=True):
    """The job lines; the cursor stays on the same job across refreshes."""

    DEFAULT_CSS = """
    QueueView {
        height: auto;
        overflow-x: hidden;
        & > .queue--cursor { background: $accent 40%; }
        &:focus > .queue--cursor { background: $accent; color: $text; }
    }
    """
    COMPONENT_CLASSES = {"queue--cursor"}
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move_to(0)", "First", show=False),
        Binding("end", "move_to(-1)", "Last", show=False),
        Binding("enter", "choose", "Open", priority=False),
    ]

    class Chosen(Message):
        """Enter (or a double click) on a job."""

        def __init__(self, job: JobRow) -> None:
            super().__init__()
            self.job = job

    def __init__(self, clock: Callable[[], float], **kw) -> None:
        super().__init__(**kw)
        self.clock = clock
        self.jobs: list[JobRow] = []
        self._row_of: dict[tuple[str, int], int] = {}
        self.cursor = 0
        self.selected: tuple[str, int] | None = None
        self.hosts = False

    # ---- data ----
    def show_jobs(self, jobs: list[JobRow], hosts: bool = False) -> None:
        """Replace the lines; keep the cursor on the selected job when it is still listed."""
        self.jobs = jobs
        self.hosts = hosts
        self._row_of = {job.key: i for i, job in enumerate(jobs)}
        if self.selected in self._row_of:
            self.cursor = self._row_of[self.selected]
        else:
            self.cursor = min(self.cursor, max(0, len(jobs) - 1))
            self.selected = jobs[self.cursor].key if jobs else None
        self.virtual_size = Size(self.size.width, len(jobs))
        self._keep_cursor_visible(animate=False)
        self.refresh()

    @property
    def current(self) -> JobRow | None:
        return self.jobs[self.cursor] if self.jobs else None

    def select(self, row: int) -> None:
        if not self.jobs:
            return
        old = self.cursor
        self.cursor = max(0, min(row, len(self.jobs) - 1))
        self.selected = self.jobs[self.cursor].key
        self._keep_cursor_visible()
        self.refresh_lines(old)
        self.refresh_lines(self.cursor)

    def refresh_lines(self, row: int) -> None:
        y = row - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _keep_cursor_visible(self, animate: bool = False) -> None:
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=animate, force=True)

    # ---- drawing ----
    def render_line(self, y: int) -> Strip:
        width = self.size.width
        row = int(self.scroll_offset.y) + y
        if row >= len(self.jobs):
            return Strip.blank(width, self.rich_style)
        cols = columns(width, self.hosts)
        text = row_text(self.jobs[row], cols, self.clock(), self.hosts)
        if row == self.cursor:
            text.stylize(self.get_component_rich_style("queue--cursor"))
        text.truncate(width, pad=True)
        return Strip(text.render(self.app.console), width).apply_style(self.rich_style)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.jobs))

    # ---- keys and mouse ----
    def action_move(self, delta: int) -> None:
        self.select(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.select(self.cursor + direction * max(1, self.size.height - 1))

    def action_move_to(self, row: int) -> None:
        self.select(row if row >= 0 else len(self.jobs) - 1)

    def action_choose(self) -> None:
        if self.current is not None:
            self.post_message(self.Chosen(self.current))

    def on_click(self, event: Click) -> None:
        self.select(int(self.scroll_offset.y) + event.y)
        if event.chain == 2 and self.current is not None:
            self.post_message(self.Chosen(self.current))


class QueueHeader(Static):
    DEFAULT_CSS = """
    QueueHeader { height: 1; background: $boost; }
    """


class QueuePanel(Vertical):
    """The queue's title line (counts, sort, filter), its column titles, and its lines."""

    DEFAULT_CSS = """
    QueuePanel { height: auto; min-height: 3; }
    QueuePanel > #queue-title { height: 1; background: $panel; color: $text; text-style: bold; }
    """

    def __init__(self, clock: Callable[[], float], **kw) -> None:
        super().__init__(**kw)
        self.clock = clock
        self.sort = "queue"

    def compose(self):
        yield Static(id="queue-title")
        yield QueueHeader(id="queue-header")
        yield QueueView(self.clock, id="queue")

    @property
    def view(self) -> QueueView:
        return self.query_one(QueueView)

    def show(self, jobs: list[JobRow], total: int, sort: str, where: str, hosts: bool) -> None:
        running = sum(j.state in RUNNING for j in jobs)
        frozen = sum(j.state in FROZEN for j in jobs)
        title = f" Queue: {running} running, {len(jobs) - running - frozen} waiting"
        if frozen:
            title += f", {frozen} frozen"
        if len(jobs) != total:
            title += f" (of {total})"
        title += f" · sort {sort}" + (f" · {where}" if where else "")
        self.query_one("#queue-title", Static).update(
            Text(title, no_wrap=True, overflow="ellipsis"))
        width = self.size.width or 80
        self.query_one(QueueHeader).update(header_text(columns(width, hosts), sort))
        self.view.show_jobs(jobs, hosts)
        self._shown = (sort, hosts)

    def on_resize(self) -> None:
        sort, hosts = getattr(self, "_shown", (self.sort, False))
        self.query_one(QueueHeader).update(header_text(columns(self.size.width, hosts), sort))
