"""Small modal screens: confirm an action on a pinned job, choose a job's tier."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from gq.tui.render import job_style
from gq.tui.snapshot import RUNNING, JobRow


def describe(job: JobRow) -> Text:
    """'job 12 train (ann, running on GPU 0,1)': enough to be sure it is the right one."""
    where = (f"running on GPU {','.join(map(str, job.gpu_ids))}" if job.state in RUNNING
             and job.gpu_ids else job.state)
    text = Text()
    text.append(f"job {job.label}", job_style(job.id, bold=True))
    text.append(f" {job.name} ({job.user}, {job.tier}, {where}")
    if job.host:
        text.append(f", on {job.host}")
    text.append(")")
    return text


class _Dialog(ModalScreen):
    DEFAULT_CSS = """
    _Dialog { align: center middle; }
    _Dialog > Vertical {
        width: 72; max-width: 95%; height: auto;
        border: thick $accent; background: $surface; padding: 1 2;
    }
    _Dialog Static { width: 100%; }
    _Dialog .keys { color: $text-muted; padding-top: 1; }
    """


class ConfirmScreen(_Dialog):
    """Asks before an action that cannot be undone. The job is pinned when the key is pressed:
    refreshes that move the cursor meanwhile change nothing."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, verb: str, job: JobRow):
        super().__init__()
        self.verb = verb
        self.job = job

    def compose(self):
        with Vertical():
            yield Static(Text.assemble(f"{self.verb.capitalize()} ", describe(self.job), "?"))
            yield Static("y: yes   n / Esc: no", classes="keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class TierScreen(_Dialog):
    """Which tier a waiting job should have."""

    BINDINGS = [
        Binding("h", "choose('high')", "High"),
        Binding("n", "choose('normal')", "Normal"),
        Binding("l", "choose('low')", "Low"),
        Binding("escape", "choose('')", "Cancel"),
    ]

    def __init__(self, job: JobRow):
        super().__init__()
        self.job = job

    def compose(self):
        with Vertical():
            yield Static(Text.assemble("Tier of ", describe(self.job), ":"))
            yield Static("h: high   n: normal   l: low   Esc: leave it", classes="keys")

    def action_choose(self, tier: str) -> None:
        self.dismiss(tier or None)
