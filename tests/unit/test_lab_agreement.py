"""One lab, one truth: the daemon and `gq sim` build the same job from the same request and lab
file, and `gq config check`, the daemon and `gq sim --config` accept and refuse the same files."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gq.config import check_cards, load_config
from gq.config.governance import parse_pools
from gq.daemon.submission import Caller, HostLimits, build_job
from gq.model import Tier
from gq.protocol import BadInput, GqError
from gq.sim.cluster import parse_cluster
from gq.sim.conversion import host_limits, to_job
from gq.sim.lab import read_lab
from gq.sim.replay import replay
from gq.sim.traces import TraceJob, read_trace

from tests.support.cli import gq
from tests.support.paths import ROOT
from tests.support.examples import examples

G = 1 << 30
HEADER = "job_id,submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name"
HOSTS = parse_cluster("1x8x80G", 16)
POOL_FILES = [
    "",
    '[pools.inter]\ncards = [0]\nmax_time = "1h"\ninteractive = true\n'
    '[pools.train]\ncards = [1, 2, 3]\n',
    '[pools.inter]\ncards = [0, 1]\nmax_time = "2h"\ninteractive = true\n'
    '[pools.batch]\ncards = [2, 3, 4, 5, 6, 7]\ndefault = true\n',
    '[pools.big]\ncards = [0, 1, 2, 3, 4, 5]\nmax_time = "30m"\n',
]

requests = st.fixed_dictionaries({
    "gpus": st.integers(0, 9),
    "extra": st.one_of(st.none(), st.integers(1, 8)),
    "mem": st.one_of(st.none(), st.sampled_from([10 * G, 80 * G, 90 * G])),
    "cpus": st.integers(1, 16),  # a trace's larger counts are capped first (conversion.py)
    "tier": st.sampled_from(list(Tier)),
    "time_limit": st.one_of(st.none(), st.sampled_from([600.0, 3600.0, 7200.0, 86400.0])),
    "pool": st.sampled_from([None, "inter", "train", "batch", "big", "default", "nope"]),
    "interactive": st.booleans(),
})


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests, lab=st.sampled_from(POOL_FILES))
def test_the_daemon_and_the_replay_build_the_same_job(request, lab):
    import tomllib

    pools = parse_pools(tomllib.loads(lab).get("pools", {}))
    gpus_max = None if request["extra"] is None else request["gpus"] + request["extra"]
    args = {"command": ["true"], "cwd": "/", "gpus": request["gpus"], "gpus_max": gpus_max,
            "mem": request["mem"], "cpus": request["cpus"], "priority": str(request["tier"]),
            "time_limit": request["time_limit"], "pool": request["pool"],
            "interactive": request["interactive"]}
    daemon_host = HostLimits(name="host0", cpus=16, ram=None, card_memory=(80 * G,) * 8,
                             pools=pools, card_ids=tuple(range(8)))
    trace_job = TraceJob(job_id="1", submit_time=0.0, duration=60.0, user="ann",
                         gpus=request["gpus"], mem=request["mem"], tier=request["tier"],
                         cpus=request["cpus"], time_limit=request["time_limit"],
                         pool=request["pool"], gpus_max=gpus_max,
                         interactive=request["interactive"])
    try:
        job = build_job(args, Caller(1000, "ann"), daemon_host, lambda text, flag: 0, 0.0)
    except BadInput as e:
        with pytest.raises(BadInput) as refused:
            to_job(trace_job, 1, 0.0, 80 * G, 16, (host_limits(HOSTS[0], pools),))
        assert refused.value.message == e.message
        return
    sim = to_job(trace_job, 1, 0.0, 80 * G, 16, (host_limits(HOSTS[0], pools),))
    fields = ("gpus", "gpus_max", "mem", "cpus", "ram", "priority", "time_limit", "pool",
              "interactive")
    assert {f: getattr(sim, f) for f in fields} == {f: getattr(job, f) for f in fields}


# Lab files made of [pools], [accounts] and [scheduler], right and wrong, for an 8-card host.
pool_tables = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                                 st.lists(st.integers(0, 9), min_size=0, max_size=3),
                                 st.booleans()), max_size=3)


def _file(pools, account_users, half_life) -> str:
    text = ""
    for name, cards, default in pools:
        text += f"[pools.{name}]\ncards = {cards}\n" + ("default = true\n" if default else "")
    for n, users in enumerate(account_users):
        text += f"[accounts.t{n}]\nusers = {users}\n"
    if half_life is not None:
        text += f'[scheduler]\nhalf_life = "{half_life}"\n'
    return text


@settings(max_examples=examples(150), deadline=None)
@given(pools=pool_tables,
       account_users=st.lists(st.lists(st.sampled_from(['ann', 'bob']), max_size=2),
                              max_size=2),
       half_life=st.one_of(st.none(), st.sampled_from(["7d", "0s", "soon"])))
def test_config_check_and_the_replay_accept_and_refuse_the_same_files(
        tmp_path_factory, pools, account_users, half_life):
    text = _file(pools, account_users, half_life)
    path = tmp_path_factory.mktemp("lab") / "lab.toml"
    path.write_text(text)
    try:
        check_cards(load_config(path), list(range(8)))  # what `gq config check` runs
        checked = None
    except GqError as e:
        checked = e.message
    try:
        read_lab(path, HOSTS)
        replayed = None
    except ValueError as e:
        replayed = str(e)
    assert (checked is None) == (replayed is None), (text, checked, replayed)


def test_an_interactive_trace_job_goes_to_the_interactive_pool(tmp_path):
    """Item 1: it ran in the default pool, waiting for a batch card while the interactive card
    was free, and its pool's max_time was not applied."""
    trace, lab = tmp_path / "t.csv", tmp_path / "lab.toml"
    trace.write_text(HEADER + ",pool,interactive\n"
                     "B,0,1000,1,,ann,normal,1,,,,\nI,10,5000,1,,bob,normal,1,,,,true\n")
    lab.write_text('[pools.inter]\ncards = [0]\nmax_time = "1h"\ninteractive = true\n'
                   '[pools.batch]\ncards = [1]\ndefault = true\n')
    hosts = parse_cluster("1x2x80G")
    result = replay(read_trace(trace).jobs, hosts, "gq", 0.0, lab=read_lab(lab, hosts))
    by_id = {j.job_id: j for j in result.jobs}
    assert by_id["I"].start == 10 and by_id["I"].end == 10 + 3600 and by_id["I"].timed_out


@pytest.mark.parametrize("reservation, message", [
    ('cards = [0]\nstart = "0s"\nduration = "1h"\naccount = "nobody"',
     "[[reservations]] 1 account = nobody: no such account in [accounts] of config.toml"),
    ('cards = [9]\nstart = "0s"\nduration = "1h"\nuser = "ann"',
     "[[reservations]] 1 cards: card 9 does not exist on host0 (cards: 0-7)"),
    ('cards = [0, 1]\nstart = "0s"\nduration = "1h"\nuser = "ann"\n[[reservations]]\n'
     'cards = [1]\nstart = "30m"\nduration = "1h"\nuser = "bob"',
     "[[reservations]] 2 cards: card 1 is in reservation 1 at that time"),
])
def test_gq_sim_config_refuses_reservations_the_daemon_refuses(tmp_path, reservation, message):
    """Item 2: each was accepted by the replay, and refused by `gq reserve`."""
    lab = tmp_path / "lab.toml"
    lab.write_text('[accounts.vision]\nusers = ["ann"]\n[[reservations]]\n' + reservation + "\n")
    with pytest.raises(ValueError) as e:
        read_lab(lab, HOSTS)
    assert message in str(e.value)


def test_a_trace_job_naming_a_pool_the_lab_lacks_is_refused_as_unknown(tmp_path):
    trace, lab = tmp_path / "t.csv", tmp_path / "lab.toml"
    trace.write_text(HEADER + ",pool\nX,0,10,1,,ann,normal,1,,,gpu9\n")
    lab.write_text('[pools.a]\ncards = [0]\n')
    out = gq("sim", str(trace), "--cluster", "1x2x80G", "--config", str(lab), cwd=ROOT,
             check=True)
    assert ("dropped 1 job(s) that were refused: --pool gpu9: no such pool on host0 (pools: a, "
            "default)") in out.stdout


def test_a_pool_naming_a_card_the_host_lacks_is_refused_by_check_and_replay(tmp_path):
    """Item 3: `config check` said good and the card was silently dropped."""
    lab = tmp_path / "config.toml"
    lab.write_text('[pools.big]\ncards = [1, 2, 3, 4, 5, 9]\n')
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "GQ_SIM_GPUS": "8x80G",
           "GQ_HOME": str(tmp_path / "home")}
    out = gq("config", "check", str(lab), env=env)
    assert (out.returncode, out.stderr) == (
        2, f"gq: {lab} line 2: [pools.big] cards: card 9 not on this host (its cards: 0-7)\n")
    with pytest.raises(ValueError, match=r"\[pools.big\] cards: card 9 not on host0"):
        read_lab(lab, HOSTS)
