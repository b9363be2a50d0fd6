"""Simulated cards: the GQ_SIM_GPUS parser, and real burn processes seen through SimBackend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.hosts import wait_for

import gq
from gq.gpu.sim import (
    MAX_SIM_CARDS,
    MODELS,
    SimBackend,
    SimCardSpec,
    load_cards,
    parse_sim_spec,
    sim_uuid,
)

GIB = 1 << 30
REPO = Path(gq.__file__).resolve().parent.parent


@pytest.fixture
def sim(tmp_path: Path) -> SimBackend:
    """Two 80G cards and one 40G card."""
    return SimBackend(parse_sim_spec("2x80G,1xA100-40G"), state_dir=tmp_path / "sim")


class Burns:
    """Starts `python -m gq.sim.burn` for a test and makes sure none outlives it."""

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str, visible: str | None = "0") -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GQ_HOME")}
        env["GQ_SIM_DIR"] = str(self.state_dir)
        env["PYTHONPATH"] = str(REPO)
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        p = subprocess.Popen(
            [sys.executable, "-m", "gq.sim.burn", *args], env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.procs.append(p)
        return p

    def run(self, *args: str, visible: str | None = "0") -> subprocess.CompletedProcess:
        p = self.start(*args, visible=visible)
        out, err = p.communicate(timeout=20)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=10)


@pytest.fixture
def burns(sim: SimBackend):
    b = Burns(sim.state_dir)
    yield b
    b.stop_all()


def holding(sim: SimBackend, card: int, pid: int):
    """The card as read, once `pid` shows up on it."""
    def check():
        gpu = sim.read()[card]
        return gpu if any(p.pid == pid for p in gpu.processes) else None
    return wait_for(check, what=f"pid {pid} on card {card}")


def released(sim: SimBackend, card: int, pid: int):
    def check():
        gpu = sim.read()[card]
        return gpu if all(p.pid != pid for p in gpu.processes) else None
    return wait_for(check, what=f"pid {pid} to leave card {card}")


# --- parsing GQ_SIM_GPUS ------------------------------------------------------------------------


def test_bare_sizes_give_generic_cards():
    cards = parse_sim_spec("4x80G")
    assert cards == [SimCardSpec("SimGPU-80G", 80 * GIB, island=0)] * 4


def test_models_mix_in_order_and_ignore_case():
    cards = parse_sim_spec("2xH100, 1xa100-40g ,1Xh200")
    assert [c.name for c in cards] == ["NVIDIA H100 80GB HBM3"] * 2 + [
        "NVIDIA A100-SXM4-40GB", "NVIDIA H200"]
    assert [c.memory_total // GIB for c in cards] == [80, 80, 40, 141]


@pytest.mark.parametrize("model,gib", [("V100", 32), ("V100-16G", 16), ("L40S", 48),
                                       ("A6000", 48), ("RTX4090", 24), ("T4", 16),
                                       ("A100", 80), ("A100-80G", 80)])
def test_well_known_models_have_their_memory(model, gib):
    assert parse_sim_spec(f"1x{model}")[0].memory_total == gib * GIB


@pytest.mark.parametrize("spec", ["0", "none", " NONE "])
def test_zero_cards_can_be_asked_for(spec):
    assert parse_sim_spec(spec) == []


@pytest.mark.parametrize("spec", [
    "4y80G", "", "x80G", "4x", "0x80G", "2x80", "2xH900", "4x80G,", "4x80G;2xH100", "4x-80G",
    f"{MAX_SIM_CARDS + 1}x80G", "1x0G",
    "6xH100/4", "4xH100/8", "8xH100/0", "8xH100/", "8xH100/x", "8xH100/2/2", "8xH100//2",
    "8x/2", "/2", "8xH100/-2", "8xH100/2.0", "2xH900/2", f"{MAX_SIM_CARDS + 2}x80G/2",
])
def test_bad_specs_are_refused_in_one_line(spec):
    with pytest.raises(ValueError) as e:
        parse_sim_spec(spec)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(repr(spec))


def test_a_typo_gets_the_syntax_and_an_example():
    expected = r"'4y80G': expected COUNTxSIZE or COUNTxMODEL, e\.g\. 4x80G"
    with pytest.raises(ValueError, match=expected):
        parse_sim_spec("4y80G")


def test_an_unknown_model_lists_the_known_ones():
    with pytest.raises(ValueError, match="H900.*H100"):
        parse_sim_spec("1xH900")


# --- islands: which simulated cards are linked ------------------------------------------------


def islands(spec: str) -> list[int | None]:
    return [c.island for c in parse_sim_spec(spec)]


@pytest.mark.parametrize("spec,expected", [
    ("4x80G", [0, 0, 0, 0]),  # one group: one island, as on an NVLink box
    ("1xH100", [0]),
    ("2xH100,2xA100-40G", [0, 0, 1, 1]),  # groups are separate islands
    ("2xH100,2xH100", [0, 0, 1, 1]),  # same model, yet two islands
    ("8xH100/2", [0, 0, 1, 1, 2, 2, 3, 3]),  # islands of two consecutive cards
    ("4xRTX4090/1", [0, 1, 2, 3]),  # no card linked to another
    ("4x80G/4", [0, 0, 0, 0]),
    ("2xA6000/1, 4x 80g / 2 ,1xT4", [0, 1, 2, 2, 3, 3, 4]),  # numbers run on across groups
])
def test_islands_follow_the_groups_and_their_split(spec, expected):
    assert islands(spec) == expected


def test_splitting_into_islands_keeps_each_card_what_it_is():
    pairs = parse_sim_spec("4xA100-40G/2")
    assert [(c.name, c.memory_total, c.tdp_w) for c in pairs] == [
        ("NVIDIA A100-SXM4-40GB", 40 * GIB, 400)] * 4


def test_islands_that_do_not_divide_the_group_say_how_to_write_them():
    with pytest.raises(ValueError) as e:
        parse_sim_spec("10xH100/4")
    assert str(e.value) == ("'10xH100/4': 10 cards do not split into islands of 4; write uneven "
                            "islands as separate groups, e.g. 8xH100/4,2xH100")
    # and the suggestion is itself a valid spec, with the islands asked for
    assert islands("8xH100/4,2xH100") == [0] * 4 + [1] * 4 + [2] * 2


def test_an_island_size_that_is_no_number_gets_an_example():
    with pytest.raises(ValueError, match=r"'8xH100/x': after '/' comes the number of linked "
                                         r"cards per island, e\.g\. 8xH100/2"):
        parse_sim_spec("8xH100/x")


card_kinds = st.sampled_from(sorted(MODELS)) | st.integers(1, 512).map(lambda n: f"{n}G")


@st.composite
def groups_with_islands(draw):
    """(count, kind, island size or None), the size dividing the count."""
    count = draw(st.integers(1, 8))
    per = draw(st.none() | st.sampled_from([n for n in range(1, count + 1) if count % n == 0]))
    return count, draw(card_kinds), per


@given(st.lists(groups_with_islands(), min_size=1, max_size=8))
def test_any_well_formed_spec_parses_to_its_cards(groups):
    spec = ",".join(f"{count}x{kind}" + ("" if per is None else f"/{per}")
                    for count, kind, per in groups)
    if sum(count for count, _, _ in groups) > MAX_SIM_CARDS:
        with pytest.raises(ValueError):
            parse_sim_spec(spec)
        return
    cards = parse_sim_spec(spec)
    expected, expected_islands = [], []
    for count, kind, per in groups:
        size = MODELS[kind].memory_total if kind in MODELS else int(kind[:-1]) * GIB
        expected += [size] * count
        first = expected_islands[-1] + 1 if expected_islands else 0
        expected_islands += [first + i // (per or count) for i in range(count)]
    assert [c.memory_total for c in cards] == expected
    assert [c.island for c in cards] == expected_islands


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_value_error(text):
    try:
        cards = parse_sim_spec(text)
    except ValueError as e:
        assert "\n" not in str(e)
    else:
        assert all(c.memory_total >= 1 << 20 for c in cards)


# --- the backend without processes ----------------------------------------------------------


def test_cards_are_written_for_burn_and_stable_across_reads(sim: SimBackend):
    first, second = sim.read(), sim.read()
    identity = [(g.index, g.uuid, g.name, g.memory_total, g.visible_id) for g in first]
    assert identity == [(g.index, g.uuid, g.name, g.memory_total, g.visible_id) for g in second]
    assert identity == [
        (0, sim_uuid(0), "SimGPU-80G", 80 * GIB, "0"),
        (1, sim_uuid(1), "SimGPU-80G", 80 * GIB, "1"),
        (2, sim_uuid(2), "NVIDIA A100-SXM4-40GB", 40 * GIB, "2"),
    ]
    assert sim_uuid(1) == "GPU-5117e000-0000-4000-8000-000000000001"
    assert [(c.uuid, c.memory_total) for c in load_cards(sim.state_dir)] == [
        (g.uuid, g.memory_total) for g in first]
    assert sim.kind == "sim"
    assert sim.job_env() == {"GQ_SIM_DIR": str(sim.state_dir)}


def test_islands_reach_the_cards_burn_and_every_read(tmp_path: Path):
    backend = SimBackend(parse_sim_spec("2xH100/1,2x80G"), state_dir=tmp_path / "sim")
    assert [g.island for g in backend.read()] == [0, 1, 2, 2]
    assert [g.island for g in backend.read()] == [0, 1, 2, 2]
    assert [g.island for g in load_cards(backend.state_dir)] == [0, 1, 2, 2]
    records = json.loads((backend.state_dir / "cards.json").read_text())["cards"]
    assert [r["island"] for r in records] == [0, 1, 2, 2]


def test_cards_written_before_islands_existed_have_unknown_islands(tmp_path: Path):
    state = tmp_path / "sim"
    SimBackend(parse_sim_spec("2x80G"), state_dir=state)
    data = json.loads((state / "cards.json").read_text())
    for record in data["cards"]:
        del record["island"]
    (state / "cards.json").write_text(json.dumps(data))
    assert [(g.uuid, g.island) for g in load_cards(state)] == [(sim_uuid(0), None),
                                                                (sim_uuid(1), None)]


def test_cards_made_without_a_topology_have_unknown_islands(tmp_path: Path):
    backend = SimBackend([SimCardSpec("SimGPU-8G", 8 * GIB)] * 2, state_dir=tmp_path / "sim")
    assert [g.island for g in backend.read()] == [None, None]


def test_idle_cards_measure_zero_not_unknown(sim: SimBackend):
    gpu = sim.read()[0]
    assert (gpu.memory_used, gpu.utilization, gpu.processes) == (0, 0, [])
    assert gpu.temperature == 30 and gpu.power_w is not None and gpu.power_w > 0
    assert gpu.simulated


def _proc_file(sim: SimBackend, pid: int, create_time: float, mem: int = 5 * GIB,
               util: int = 40, leak: bool = False) -> Path:
    path = sim.state_dir / "procs" / f"{pid}.json"
    path.write_text(json.dumps({"pid": pid, "create_time": create_time, "cards": [sim_uuid(0)],
                                "mem": mem, "util": util, "leak": leak}))
    return path


def test_a_live_process_file_counts_and_a_reused_pid_does_not(sim: SimBackend):
    me = psutil.Process()
    _proc_file(sim, me.pid, me.create_time())
    assert sim.read()[0].memory_used == 5 * GIB
    # Same pid, other start time: the pid was reused, the file's owner is gone.
    reused = _proc_file(sim, me.pid, me.create_time() - 100)
    gpu = sim.read()[0]
    assert (gpu.memory_used, gpu.processes) == (0, [])
    assert not reused.exists()


def test_garbage_process_files_are_skipped(sim: SimBackend):
    procs = sim.state_dir / "procs"
    (procs / "1.json").write_text("{not json")
    (procs / "2.json").write_text("[1, 2]")
    (procs / "3.json").write_text(json.dumps({"pid": 3}))
    (procs / "4.json").write_text(json.dumps({"pid": "x", "create_time": 0, "cards": [],
                                              "mem": 1, "util": 1}))
    (procs / "5.json").write_bytes(b"\xff\xfe")
    me = psutil.Process()
    _proc_file(sim, me.pid, me.create_time(), mem=GIB)
    assert sim.read()[0].memory_used == GIB


def test_heat_and_power_follow_utilisation(sim: SimBackend):
    me = psutil.Process()
    _proc_file(sim, me.pid, me.create_time(), util=80)
    busy, idle = sim.read()[0], sim.read()[1]
    assert (busy.utilization, busy.temperature) == (80, 70)
    assert busy.power_w > idle.power_w


# --- real burn processes ----------------------------------------------------------------------


def test_burn_shows_on_its_card_and_leaves_when_it_ends(sim: SimBackend, burns: Burns):
    p = burns.start("--mem", "10G", "--util", "80", "--seconds", "1", visible="1")
    gpu = holding(sim, 1, p.pid)
    assert (gpu.memory_used, gpu.utilization) == (10 * GIB, 80)
    assert [(q.pid, q.used_memory) for q in gpu.processes] == [(p.pid, 10 * GIB)]
    assert sim.read()[0].memory_used == 0
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 0
    assert "10.00 GiB" in out and "GPU 1" in out
    assert sim.read()[1].memory_used == 0
    assert not list((sim.state_dir / "procs").glob("*.json"))


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_burn_cleans_up_when_signalled(sim: SimBackend, burns: Burns, sig, code):
    p = burns.start("--mem", "4G")
    holding(sim, 0, p.pid)
    p.send_signal(sig)
    assert p.wait(timeout=10) == code
    assert not (sim.state_dir / "procs" / f"{p.pid}.json").exists()
    assert sim.read()[0].memory_used == 0


def test_a_killed_burn_is_dropped_even_before_it_is_reaped(sim: SimBackend, burns: Burns):
    p = burns.start("--mem", "4G")
    holding(sim, 0, p.pid)
    p.kill()
    # Not reaped yet: a zombie holds no GPU memory on a real card either.
    wait_for(lambda: psutil.Process(p.pid).status() == psutil.STATUS_ZOMBIE, what="a zombie")
    assert sim.read()[0].memory_used == 0
    assert not (sim.state_dir / "procs" / f"{p.pid}.json").exists()
    assert p.wait(timeout=10) == -signal.SIGKILL


def test_a_leaking_burn_leaves_memory_held_by_a_dead_pid(sim: SimBackend, burns: Burns):
    done = burns.run("--mem", "70G", "--util", "90", "--seconds", "0", "--leak")
    dead = burns.procs[-1].pid
    assert done.returncode == 0, done.stderr
    assert not psutil.pid_exists(dead)
    gpu = sim.read()[0]
    assert gpu.memory_used == 70 * GIB
    assert gpu.utilization == 0  # the memory is held, nothing computes
    assert [(q.pid, q.used_memory) for q in gpu.processes] == [(dead, 70 * GIB)]
    assert sim.read()[0].memory_used == 70 * GIB  # and it stays
    # The next job finds only what the zombie left.
    oom = burns.run("--mem", "20G")
    assert oom.returncode == 1
    assert "of which 10.00 GiB is free" in oom.stderr


def test_burn_out_of_memory_fails_like_pytorch(sim: SimBackend, burns: Burns):
    done = burns.run("--mem", "100G", visible="0")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 GiB. "
        "GPU 0 has a total capacity of 80.00 GiB of which 80.00 GiB is free.")
    assert done.stdout == ""
    assert not list((sim.state_dir / "procs").glob("*.json"))


def test_two_burns_on_one_card_add_up(sim: SimBackend, burns: Burns):
    a = burns.start("--mem", "30G", "--util", "60", visible="1")
    holding(sim, 1, a.pid)
    b = burns.start("--mem", "20G", "--util", "70", visible="1")
    gpu = holding(sim, 1, b.pid)
    assert gpu.memory_used == 50 * GIB
    assert gpu.utilization == 100  # 60 + 70, capped
    assert sorted(q.pid for q in gpu.processes) == sorted([a.pid, b.pid])
    third = burns.run("--mem", "40G", visible="1")
    assert third.returncode == 1
    assert "Tried to allocate 40.00 GiB. GPU 0 has a total capacity of 80.00 GiB " \
           "of which 30.00 GiB is free." in third.stderr
    a.terminate()
    assert released(sim, 1, a.pid).memory_used == 20 * GIB


def test_burn_holds_memory_on_every_visible_card_by_index_or_uuid(sim: SimBackend, burns: Burns):
    p = burns.start("--mem", "8G", visible=f"0,{sim_uuid(2)}")
    holding(sim, 0, p.pid)
    cards = sim.read()
    assert [g.memory_used for g in cards] == [8 * GIB, 0, 8 * GIB]


def test_oom_names_the_device_as_the_job_numbers_it(sim: SimBackend, burns: Burns):
    # Card 2 has 40G; inside the job it is the second visible device, cuda:1.
    done = burns.run("--mem", "50G", visible="0,2")
    assert done.returncode == 1
    assert "GPU 1 has a total capacity of 40.00 GiB" in done.stderr


@pytest.mark.parametrize("visible,complaint", [
    ("7", "'7' is not a simulated card"),
    ("GPU-00000000-dead-beef-0000-000000000000", "is not a simulated card"),
    ("", "no CUDA-capable device"),
    (None, "CUDA_VISIBLE_DEVICES is not set"),
])
def test_burn_without_a_usable_card_exits_2(sim: SimBackend, burns: Burns, visible, complaint):
    done = burns.run("--mem", "1G", visible=visible)
    assert done.returncode == 2
    assert complaint in done.stderr
    assert done.stderr.count("\n") == 1
    assert not list((sim.state_dir / "procs").glob("*.json"))


def test_burn_without_a_simulator_exits_2(tmp_path: Path):
    burns = Burns(tmp_path / "nothing-here")
    done = burns.run("--mem", "1G")
    assert done.returncode == 2
    assert "no simulated cards" in done.stderr


def test_burn_rejects_bad_arguments(sim: SimBackend, burns: Burns):
    assert burns.run("--mem", "lots").returncode == 2
    assert burns.run("--util", "150").returncode == 2


def test_burns_starting_together_never_overcommit_a_card(sim: SimBackend, burns: Burns):
    started = [burns.start("--mem", "30G", visible="0") for _ in range(6)]

    def settled():
        registered = {p.pid for p in sim.read()[0].processes}
        failed = [p for p in started if p.poll() is not None]
        return (registered, failed) if len(registered) + len(failed) == 6 else None

    registered, failed = wait_for(settled, what="every burn to start or fail")
    assert len(registered) == 2  # 2 x 30G fit on 80G, a third does not
    assert all(p.returncode == 1 for p in failed)
    assert sim.read()[0].memory_used == 60 * GIB
