"""`gq top`: the terminal UI (gq/tui/), on this user's daemon."""

from __future__ import annotations


def run_top(interval: float) -> None:
    from gq.paths import gq_home
    from gq.tui.app import make_app

    make_app(home=gq_home(), interval=interval).run()
