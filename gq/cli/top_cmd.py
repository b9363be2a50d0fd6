"""`gq top`: the terminal UI (gq/tui/), on the daemon every other command talks to."""

from __future__ import annotations


def top_app(interval: float = 1.0):
    """The app `gq top` runs. No home given: `gq.paths.daemon_socket` picks the daemon, the
    system daemon's on a host that has one, as for `gq ls`."""
    from gq.tui.app import make_app

    return make_app(interval=interval)


def run_top(interval: float) -> None:
    top_app(interval).run()
