"""One assembly of the scheduler's input (gq/config/scheduling.py): the daemon's passes and the
replay get every setting from the same constructor, so a setting wired there reaches both."""

from __future__ import annotations

from dataclasses import fields

from gq.config import load_config
from gq.config.scheduling import GIVEN, OBSERVED, SETTINGS
from gq.daemon.core import Daemon
from gq.daemon.layout import Layout
from gq.gpu import open_backend
from gq.policy import SchedulerInput
from gq.sim.cluster import parse_cluster
from gq.sim.colocation import Sharing
from gq.sim.replay import _Replay
from gq.sim.lab import Lab
from gq.sim.results import Preemption

# default_time is one duration or a table of tiers: the two files set one each.
DEFAULT_TIMES = ['default_time = "12h"', 'default_time = { high = "2h", low = "3d" }']
CONFIG = """
[scheduler]
{default_time}
reservations = 3
half_life = "2d"
weight_age = 7
share_util_max = 150
[limits]
max_running_gpus = 6
high_share = 0.5
[pools.inter]
cards = [0]
interactive = true
[accounts.vision]
users = ["ann"]
"""


def test_every_field_of_the_input_is_given_a_setting_or_observed():
    """A new field of SchedulerInput must say which it is: a setting is then assembled in one
    place for the daemon and the replay, never wired into one of them alone."""
    names = {f.name for f in fields(SchedulerInput)}
    assert not (GIVEN & SETTINGS or GIVEN & OBSERVED or SETTINGS & OBSERVED)
    assert names == GIVEN | SETTINGS | OBSERVED


def test_the_daemon_and_the_replay_read_every_setting_alike(tmp_path, monkeypatch):
    """Before the one assembly the replay built its input field by field and ran with its own
    reservations, limits and share_util_max whatever the file said."""
    set_by_files = set()
    for n, default_time in enumerate(DEFAULT_TIMES):
        path = tmp_path / f"config{n}.toml"
        path.write_text(CONFIG.replace("{default_time}", default_time))
        live, replayed = _inputs(load_config(path), tmp_path / f"home{n}", monkeypatch)
        default = SchedulerInput(live.host, [], [])
        for name in sorted(SETTINGS):
            assert getattr(replayed, name) == getattr(live, name), (default_time, name)
            if getattr(live, name) != getattr(default, name):
                set_by_files.add(name)
    assert set_by_files == SETTINGS  # the files set each: a caller that dropped one would show


def _inputs(config, home, monkeypatch):
    """The daemon's input for a pass, and the replay's, on the same four cards."""
    monkeypatch.setenv("GQ_SIM_GPUS", "4x80G")
    daemon = Daemon(Layout(home), config, open_backend(home), "here", clock=lambda: 1000.0)
    try:
        live = daemon.policy_input([], [], {}, 1000.0, {}, [])
    finally:
        daemon.store.close()
    sim = _Replay(parse_cluster("1x4x80G", config.host_cpus), "gq", config, 300.0, None, True,
                  Preemption(), Lab())
    sim.sharing = Sharing(1)  # as replay() gives it
    return live, sim.pass_input([], 0.0)
