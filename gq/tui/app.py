"""`gq top`: the app, its main screen, and the poller that feeds them snapshots.

Data flows one way: a worker thread asks each source for its host (once a second), builds one
TopSnapshot, and hands it to the app, which applies it to every widget in one batch. Actions run
in worker threads too, so a slow or vanished daemon never freezes the screen.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Iterable

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input

from gq.escapes import escape_lines
from gq.protocol import GqError
from gq.tui.dialogs import ConfirmScreen, TierScreen
from gq.tui.job_screen import JobScreen
from gq.tui.panels import MemoryMap, OffendersPanel
from gq.tui.queue import SORTS, QueuePanel, QueueView
from gq.tui.snapshot import JobRow, TopSnapshot
from gq.tui.source import DaemonSource, JobDetail, LogChunk, Source

CONFIRM = {"cancel": "cancel", "requeue": "requeue"}  # actions that stop work: asked first


class JobActions:
    """The keys that act on one job, on the main screen (the selected job) and on the job
    screen (its job). Each goes to the daemon like the CLI's command, and its answer, refusals
    included, is shown as the CLI prints it."""

    ACTION_BINDINGS = [
        Binding("c", "job('cancel')", "Cancel"),
        Binding("h", "job('hold')", "Hold"),
        Binding("r", "job('release')", "Release"),
        Binding("R", "job('requeue')", "Requeue"),
        Binding("p", "tier", "Tier"),
    ]

    def target(self) -> JobRow | None:
        raise NotImplementedError

    def action_job(self, op: str) -> None:
        job = self.target()
        if job is None:
            self.app.notify("no job selected", severity="warning")
        elif op in CONFIRM:
            self.app.push_screen(ConfirmScreen(CONFIRM[op], job),
                                 lambda yes: yes and self.app.act(job, op))
        else:
            self.app.act(job, op)

    def action_tier(self) -> None:
        job = self.target()
        if job is None:
            self.app.notify("no job selected", severity="warning")
            return
        self.app.push_screen(TierScreen(job),
                             lambda tier: tier and self.app.act(job, "update", priority=tier))


class FilterInput(Input):
    DEFAULT_CSS = """
    FilterInput { display: none; border: none; height: 1; padding: 0 1; }
    FilterInput.-active { display: block; }
    """
    BINDINGS = [Binding("escape", "clear", "Clear filter")]

    def action_clear(self) -> None:
        self.value = ""
        self.screen.close_filter()


class MainScreen(JobActions, Screen):
    """Cards (memory map), queue and offenders of every host."""

    BINDINGS = [
        *JobActions.ACTION_BINDINGS,
        Binding("l", "logs", "Logs"),
        Binding("slash", "filter", "Filter"),
        Binding("m", "mine", "Mine"),
        Binding("s", "sort", "Sort"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, clock: Callable[[], float]):
        super().__init__()
        self.clock = clock
        self.sort = "queue"
        self.filter = ""
        self.mine = False
        self.snapshot: TopSnapshot | None = None
        self._ready = False

    def compose(self):
        yield MemoryMap(id="map")
        yield QueuePanel(self.clock, id="queue-panel")
        yield OffendersPanel(id="offenders")
        yield FilterInput(placeholder="filter: id, user, name, state, tier or reason",
                          id="filter")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._ready = True
        self.query_one(QueueView).focus()
        if self.snapshot is not None:
            self.apply(self.snapshot)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_queue)

    def fit_queue(self) -> None:
        """The queue takes the rows its jobs need, up to all the room the cards, the
        offenders, the filter and the footer leave (then it scrolls): the offenders follow
        its last job, with no empty rows between them, and a long queue gets every row."""
        others = sum(w.outer_size.height for w in (
            self.query_one(MemoryMap), self.query_one(OffendersPanel),
            self.query_one(FilterInput), self.query_one(Footer)) if w.display)
        lines = max(1, self.size.height - others - 2)  # below its title and column titles
        view = self.queue
        if view.styles.max_height is None or view.styles.max_height.value != lines:
            view.styles.max_height = lines

    @property
    def queue(self) -> QueueView:
        return self.query_one(QueueView)

    def target(self) -> JobRow | None:
        return self.queue.current

    def apply(self, snap: TopSnapshot) -> None:
        self.snapshot = snap
        if not self._ready:
            return  # on_mount shows it
        now = self.clock()
        self.query_one(MemoryMap).show(snap.hosts, now, self.app.interval)
        self.query_one(OffendersPanel).show(snap.hosts, now)
        self.show_jobs()

    def show_jobs(self) -> None:
        snap = self.snapshot
        if snap is None:
            return
        jobs: Iterable[JobRow] = snap.jobs
        if self.mine:
            me = {h.name: h.user for h in snap.hosts}
            jobs = [j for j in jobs if j.user == me.get(j.host)]
        if self.filter:
            needle = self.filter.lower()
            jobs = [j for j in jobs if needle in
                    f"{j.label} {j.user} {j.name} {j.state} {j.tier} {j.reason or ''}".lower()]
        rows = sorted(jobs, key=SORTS[self.sort])
        where = " · ".join(w for w in ("mine" if self.mine else "",
                                       f"filter '{self.filter}'" if self.filter else "") if w)
        self.query_one(QueuePanel).show(rows, len(snap.jobs), self.sort, where,
                                        hosts=len(snap.hosts) > 1)
        self.call_after_refresh(self.fit_queue)

    def on_queue_view_chosen(self, message: QueueView.Chosen) -> None:
        self.app.open_job(message.job)

    def action_logs(self) -> None:
        if self.target() is not None:
            self.app.open_job(self.target(), logs_only=True)

    def action_filter(self) -> None:
        box = self.query_one(FilterInput)
        box.add_class("-active")
        box.focus()
        self.call_after_refresh(self.fit_queue)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter = event.value.strip()
        self.show_jobs()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.close_filter()

    def close_filter(self) -> None:
        box = self.query_one(FilterInput)
        box.set_class(bool(box.value.strip()), "-active")
        self.queue.focus()
        self.show_jobs()

    def action_clear_filter(self) -> None:
        if self.filter:
            self.query_one(FilterInput).action_clear()

    def action_mine(self) -> None:
        self.mine = not self.mine
        self.show_jobs()

    def action_sort(self) -> None:
        names = list(SORTS)
        self.sort = names[(names.index(self.sort) + 1) % len(names)]
        self.show_jobs()


class JobActionScreen(JobActions, JobScreen):
    BINDINGS = JobActions.ACTION_BINDINGS

    def target(self) -> JobRow | None:
        return self.job


class TopApp(App):
    TITLE = "gq top"
    CSS = "Screen { layout: vertical; }"
    ENABLE_COMMAND_PALETTE = False  # every action has its key; the footer needs the room
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "toggle_help", "Keys"),
    ]

    def __init__(self, sources: list[Source], clock: Callable[[], float] = time.time,
                 interval: float = 1.0, poll: bool = True):
        super().__init__()
        self.sources = {s.name: s for s in sources}
        self.clock = clock
        self.interval = interval
        self.poll = poll
        self.main = MainScreen(clock)
        self._fetching = False
        self._again = False
        self.said: deque[tuple[str, str]] = deque(maxlen=100)  # (message, severity), for tests

    def notify(self, message: str, *, severity: str = "information", **kw: Any) -> None:
        # An answer may quote a user's text: shown as it is, never read as markup, escaped.
        message = escape_lines(message)
        self.said.append((message, severity))
        super().notify(message, severity=severity, **{"markup": False, **kw})

    def on_mount(self) -> None:
        self.push_screen(self.main)
        self.poll_now()
        if self.poll:
            self.set_interval(self.interval, self.poll_now)

    # ---- the poller ----
    def poll_now(self) -> None:
        """Fetch a new snapshot unless one is on its way (then fetch again once it lands)."""
        if self._fetching:
            self._again = True
            return
        self._fetching = True
        screen = self.screen if isinstance(self.screen, JobScreen) else None
        request = None if screen is None else (screen.key, screen.stream, screen.log_offset)
        self._fetch(request)

    @work(thread=True, group="poll", exit_on_error=False)
    def _fetch(self, request: tuple[tuple[str, int], str, int] | None) -> None:
        try:
            now = self.clock()
            snap = TopSnapshot(tuple(s.fetch(now) for s in list(self.sources.values())), now)
            detail = self._detail(request) if request else None
            self.call_from_thread(self._apply, snap, request, detail)
        except Exception as e:  # a monitor keeps going: say what broke, try again next time
            self.call_from_thread(self.notify, f"gq top: {type(e).__name__}: {e}",
                                  severity="error")
        finally:
            self.call_from_thread(self._fetched)

    def _detail(self, request) -> tuple[JobDetail | None, LogChunk | None, str | None, str]:
        (host, job_id), stream, offset = request
        source = self.sources.get(host)
        try:
            if source is None:
                raise GqError(f"host {host} is not shown")
            detail = source.detail(job_id)
        except GqError as e:
            return None, None, None, e.message
        except OSError as e:  # the daemon went away in the middle
            return None, None, None, f"lost the daemon: {e}"
        path = detail.job.get(stream)
        chunk = source.read_log(path, offset) if path else None
        return detail, chunk, path, ""

    def _fetched(self) -> None:
        self._fetching = False
        if self._again:
            self._again = False
            self.poll_now()

    def _apply(self, snap: TopSnapshot, request, detail) -> None:
        with self.batch_update():
            self.main.apply(snap)
            screen = self.screen
            if detail and isinstance(screen, JobScreen) and request[0] == screen.key:
                job, chunk, path, error = detail
                if job is not None and request[1] == screen.stream:
                    screen.show_detail(job, chunk, path)
                elif error:
                    self.notify(f"gq: {error}", severity="error")

    # ---- screens and actions ----
    def open_job(self, job: JobRow, logs_only: bool = False) -> None:
        self.push_screen(JobActionScreen(job, self.clock, logs_only))
        self.poll_now()

    def act(self, job: JobRow, op: str, **args: Any) -> None:
        self._act(job.host, op, {"ids": [str(job.id)], **args})

    @work(thread=True, group="act", exit_on_error=False)
    def _act(self, host: str, op: str, args: dict[str, Any]) -> None:
        from gq.wording.arrays import fold_results  # the CLI's own wording of the answers

        try:
            results = fold_results(self.sources[host].act(op, **args))
        except GqError as e:
            results = [(False, e.message)]
        except OSError as e:
            results = [(False, f"lost the daemon: {e}")]
        for ok, line in results:
            self.call_from_thread(self.notify, line if ok else f"gq: {line}",
                                  severity="information" if ok else "error")
        self.call_from_thread(self.poll_now)

    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()


def make_app(sources: list[Source] | None = None, *, home: str | None = None,
             clock: Callable[[], float] = time.time, interval: float = 1.0,
             poll: bool = True) -> TopApp:
    """The one way to build the app: the `gq top` command and the tests both use it."""
    if sources is None:
        from gq.paths import daemon_socket, socket_path

        from gq.tui.peer_source import peer_sources

        # Where every other command goes: GQ_HOME's daemon, or the system daemon if there is one.
        path, own = (socket_path(home), home) if home else daemon_socket()
        local = DaemonSource(path, system=own is None)
        sources = [local, *peer_sources(local)]
    return TopApp(sources, clock=clock, interval=interval, poll=poll)
