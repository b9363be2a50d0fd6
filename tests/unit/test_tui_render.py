"""`gq top`'s drawing from numbers, without an app: the memory-map bar, sparklines, job lines,
and snapshots built from protocol replies."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gq.tui import render
from gq.tui.queue import SORTS, columns, row_text
from gq.tui.render import card_line, memory_bar, share_cells, sparkline
from gq.tui.snapshot import CardView, Slice, host_snapshot
from tests.support import tui_data

G = 1 << 30


def card(total=80 * G, slices=(), outside=0, used=None, util=None, history=()):
    return CardView(0, "NVIDIA H100 80GB HBM3", total, used, util, tuple(slices), outside,
                    True, tuple(history))


def sl(job_id, user, reserved, used=None):
    return Slice(job_id, user, "x", reserved, used, False, "running")


@given(st.lists(st.integers(0, 1 << 40), max_size=8), st.integers(0, 300))
def test_cells_are_shared_exactly_and_every_holder_is_seen(sizes, cells):
    out = share_cells(sizes, cells)
    assert len(out) == len(sizes)
    assert sum(out) == (cells if sum(sizes) > 0 else 0)
    if cells >= len(sizes):
        assert all(n >= 1 for n, s in zip(out, sizes) if s > 0)


def test_the_bar_shows_each_job_outside_memory_and_free_memory_in_proportion():
    bar = memory_bar(card(slices=[sl(12, "ann", 40 * G, 40 * G), sl(7, "bob", 20 * G, 10 * G)],
                          outside=10 * G), 80)
    assert bar.cell_len == 80
    # Sorted by job id: bob's 20G (20 cells), ann's 40G (40), 10G outside gq, 10G free.
    assert bar.plain[:20] == " 7 bob".ljust(20)
    assert bar.plain[20:60] == " 12 ann".ljust(40)
    assert bar.plain[60:70] == "╱" * 10
    assert bar.plain[70:] == "·" * 10
    # bob uses half of his slice: the first half in his colour, the rest darker.
    bob = render.job_colour(7)
    styles = {(s.start, s.end): s.style for s in bar.spans}
    assert styles[(0, 10)].bgcolor.triplet == bob
    assert styles[(10, 20)].bgcolor.triplet != bob


def test_memory_held_beyond_a_reservation_is_drawn_and_the_card_marked():
    over = card(slices=[sl(41, "ann", 10 * G, 25 * G), sl(42, "bob", 30 * G, 30 * G)])
    bar = memory_bar(over, 80)
    # ann's 10G reservation (10 cells), the 15G she holds beyond it (15 '!'), bob's 30G,
    # and 25G free: not 40G, as the reservations alone would say.
    assert bar.plain[:10] == " 41 ann".ljust(10)
    assert bar.plain[10:25] == "!" * 15
    assert bar.plain[55:] == "·" * 25
    assert over.free == 25 * G and [s.job_id for s in over.over_budget] == [41]
    layout = render.CardLayout.for_width(100, 14)
    assert card_line(over, layout, 80 * G).plain.startswith(" 0!")
    assert card_line(card(slices=[sl(42, "bob", 30 * G, 30 * G)]), layout,
                     80 * G).plain.startswith(" 0 ")


def test_the_job_screen_names_the_jobs_offence_and_its_predicted_run_time():
    from gq.tui.job_screen import detail_rows

    job = {"state": "running", "reason": None, "priority": "normal", "user": "ann",
           "gpus": 1, "gpu_ids": [0], "mem": 10 * G, "cpus": 1, "time_limit": None,
           "submitted_at": None, "started_at": None, "command": ["python", "train.py"],
           "prediction": {"seconds": 2520.0, "runs": 2,
                          "basis": "like your last 2 runs of train.py"},
           "offences": [{"kind": "over_budget", "evidence": "holds 25G on GPU 0, over its "
                         "--mem 10G", "suggestion": "submit it again with room",
                         "action": "report"}]}
    rows = dict(detail_rows(job, 0.0))
    assert rows["run time"] == "~42m00s, like your last 2 runs of train.py"
    assert rows["offence"].startswith("over-budget: holds 25G on GPU 0")


def test_a_tiny_job_keeps_a_cell_and_a_long_outside_label_only_where_it_fits():
    bar = memory_bar(card(slices=[sl(3, "ann", G // 4)], outside=60 * G), 40)
    assert bar.plain[0] == "3"
    assert " outside gq " in bar.plain
    assert "outside" not in memory_bar(card(outside=8 * G), 40).plain


def test_unknown_utilisation_is_na_and_unknown_history_is_not_drawn_as_zero():
    assert render.percent(None).plain == " N/A"
    assert render.percent(0).plain == "  0%"
    line = sparkline([0, None, 100], 5)
    assert line.plain == "  ▁·█"


def test_bars_are_scaled_to_the_card_size():
    layout = render.CardLayout.for_width(120, 14)
    big = card_line(card(total=80 * G), layout, largest=80 * G)
    small = card_line(card(total=40 * G), layout, largest=80 * G)
    assert big.plain.count("·") == layout.bar
    assert small.plain.count("·") == layout.bar // 2
    assert big.cell_len == small.cell_len  # the columns after the bar line up


def test_a_host_snapshot_from_protocol_replies():
    host = tui_data.host()
    assert host.simulated and host.user == "ann" and host.name == "lab1"
    shared = host.cards[2]
    assert [s.title for s in shared.slices] == ["15", "20_1", "20_2"]
    assert shared.free == 80 * G - 54 * G - 6 * G
    unknown = host.cards[3]
    assert unknown.memory_used is None and unknown.utilization is None
    assert set(unknown.history) == {None}  # unknown samples stay unknown
    assert [o.kind for o in host.offences] == ["idle", "stray"]
    job = next(j for j in host.jobs if j.id == 18)
    assert (job.tier, job.reason, job.expected_start) == ("low", "Resources", tui_data.NOW + 1800)


def test_a_failed_read_keeps_the_last_data_and_says_why():
    host = tui_data.host().failed("daemon not running")
    assert host.error == "daemon not running" and len(host.jobs) == len(tui_data.JOBS)
    empty = host_snapshot("h", 1.0, ping={}, jobs=[], gpus=[], offenders=[])
    assert empty.cards == () and not empty.simulated


def test_job_lines_say_where_running_jobs_run_and_why_waiting_ones_wait():
    jobs = {j.id: j for j in tui_data.host().jobs}
    cols = columns(120, hosts=False)
    running = row_text(jobs[12], cols, tui_data.NOW, False).plain
    assert running.split()[:6] == ["12", "ann", "normal", "running", "0,1", "whole"]
    assert "3h02m" in running
    waiting = row_text(jobs[18], cols, tui_data.NOW, False).plain
    assert "need 1" in waiting and "Resources, starts in ~30m00s" in waiting
    assert row_text(jobs[12], cols, tui_data.NOW, False).cell_len == sum(c.width + 1 for c in cols)


def test_sorts():
    jobs = list(tui_data.host().jobs)
    assert [j.id for j in sorted(jobs, key=SORTS["queue"])][:2] == [30, 12]  # high tier first
    assert [j.state for j in sorted(jobs, key=SORTS["queue"])][-1] == "held"
    assert [j.id for j in sorted(jobs, key=SORTS["time"])][0] == 12  # longest first
    assert sorted(jobs, key=SORTS["gpus"])[0].id == 31  # 4 cards


def test_gq_top_reads_the_daemon_other_commands_talk_to(tmp_path, monkeypatch):
    """On a host set up for a system daemon, gq top reads it, as `gq ls` does; GQ_HOME (or a
    home given) asks for a daemon of one's own."""
    from gq.paths import daemon_socket, socket_path
    from gq.tui.app import make_app

    (tmp_path / "etc" / "gq").mkdir(parents=True)
    (tmp_path / "etc" / "gq" / "config.toml").write_text("")
    monkeypatch.setenv("GQ_SYSTEM_ROOT", str(tmp_path))
    monkeypatch.delenv("GQ_HOME", raising=False)
    local = next(iter(make_app(poll=False).sources.values()))
    assert local.socket_path == daemon_socket()[0] and str(tmp_path) in local.socket_path
    mine = next(iter(make_app(home=str(tmp_path / "mine"), poll=False).sources.values()))
    assert mine.socket_path == socket_path(str(tmp_path / "mine"))


def test_offender_kinds_are_spelled_as_gq_offenders_does_and_kept_apart():
    from gq.tui.panels import offence_text
    from gq.tui.snapshot import OffenceRow

    row = OffenceRow("over_declared", 40, "ann", None, (1,), None, "peak 3G of 40G", "", "")
    assert offence_text(row, tui_data.NOW).plain.startswith("over-declared job 40 ann")


def test_a_process_offence_says_its_pid_user_and_card_once():
    from gq.tui.panels import offence_text
    from gq.tui.snapshot import offence_row

    (stray,) = [o for o in tui_data.OFFENDERS if o["kind"] == "stray"]
    line = offence_text(offence_row(stray), tui_data.NOW).plain
    assert line == ("stray         pid 4242 (user mallory: python leak.py) holds 6G on GPU 2 "
                    "outside gq for 2m00s → ask mallory to submit it with gq")
    assert line.count("4242") == line.count("mallory:") == line.count("GPU 2") == 1


def test_a_cpu_only_job_holds_no_card_memory():
    from dataclasses import replace

    job = replace({j.id: j for j in tui_data.host().jobs}[12], gpus=0, gpu_ids=())
    cells = row_text(job, columns(120, hosts=False), tui_data.NOW, False).plain.split()
    assert cells[5] == "-" and "whole" not in cells


def test_the_job_screen_lists_what_the_job_really_runs():
    from rich.console import Console

    from gq.tui.job_screen import processes_renderable

    job = tui_data.show(12)
    job["processes"][0]["pid"] = 4100123
    for width in (100, 80, 50):  # a long command line is cut; the numbers keep their width
        console = Console(width=width, record=True)
        console.print(processes_renderable(job))
        lines = console.export_text().splitlines()
        assert lines[0].split() == ["PID", "GPU", "MEM", "COMMAND"]
        assert lines[1].split()[:5] == ["4100123", "0", "70G", "python", f"{job['name']}.py"]
        assert lines[2].split()[:3] == ["4101", "1", "70G"] and lines[1].rstrip().endswith("…")
    assert str(processes_renderable({**job, "processes": []})) == (
        "no processes of it on the cards (yet)")
    assert str(processes_renderable({**job, "state": "pending"})) == ""


def test_a_frozen_job_shows_its_host_memory_in_the_queue_and_the_heading():
    from gq.tui.panels import host_heading

    frozen = {**tui_data.job(30, "ann", "pretrain", "frozen", tier="low", ran=600),
              "host_mem": 30 << 30, "frozen_at": tui_data.iso(tui_data.NOW - 120)}
    host = host_snapshot("lab1", tui_data.NOW, ping={"user": "ann"}, jobs=[frozen], gpus=[],
                         offenders=[])
    (row,) = host.jobs
    cells = row_text(row, columns(120, hosts=False), tui_data.NOW, False).plain
    assert "frozen" in cells and "none" in cells and "2m00s" in cells
    assert "30G in host memory" in cells
    heading = host_heading(host, tui_data.NOW).plain
    assert heading.endswith("0 running · 0 waiting · 1 frozen (30G host memory)")
