"""Real public job scripts (tests/data/README): each is understood fully, or refused or
warned in words a user can act on."""

from pathlib import Path

import pytest

from gq.sbatch.options import understand

DATA = Path(__file__).parent.parent / "data" / "sbatch"
# script -> (what it maps to, the options refused, the options warned)
EXPECTED = {
    "beluga_tasks.sh": ({}, ["--ntasks-per-node=4"], []),
    "cedar_tasks.sh": ({}, ["--ntasks-per-node=4"], []),
    "narval_typed.sh": ({}, ["--ntasks-per-node=12"],
                        ["--gpus-per-node=a100:1"]),
    "a800_partition.sh": ({"cpus": "7", "gpus": "1"}, [],
                          ["--partition=A800", "--gres=gpu:a800:1"]),
    "plgrid_account.sh": ({"cpus": "8", "gpus": "1", "time": "3600s"}, [],
                          ["-A some-grant", "-p some-gpu-partition"]),
    "trailing_comment.sh": ({"gpus": "2"}, [], ["--partition=some-gpu"]),
    "array_requeue.sh": ({"name": "task_array", "ram": "512M", "array": "0-4", "time": "180s"},
                         [], ["--account=an_account", "--qos=a_qos"]),
    "array_short.sh": ({"cpus": "4", "time": "30s", "array": "0-31", "gpus": "0"}, [],
                       ["--account=an_account", "--partition=htc"]),
    "mail_user_only.sh": ({"ram": "1G", "array": "1-10", "time": "300s"}, [],
                          ["-p normal", "--mail-user=someone@example.org"]),
    # A bare "#SBATCH" line, then "--mem=32G" on a line of its own: a command line, which
    # ends the block as in sbatch; the lines after it are not read.
    "broken_line.sh": ({"name": "test", "cpus": "16", "gpus": "0"}, [], []),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_real_script_is_understood_or_refused_in_words_to_act_on(name):
    values, refused, warned = EXPECTED[name]
    u = understand(name, (DATA / name).read_text().splitlines())
    assert {k: u.values[k] for k in values} == values
    assert [v.written for v in u.refusals] == refused
    assert [v.written for v in u.warnings] == warned
    for v in u.refusals + u.warnings:
        sentence = v.sentence(name)
        assert sentence.startswith(f"{name} line {v.line}: #SBATCH ")
        assert any(word in v.says for word in ("gq", "remove", "config.toml"))


def test_the_corpus_is_cited():
    readme = (DATA.parent / "README").read_text()
    assert len(EXPECTED) >= 10
    assert all(f"| {name} |" in readme for name in EXPECTED)
    assert sorted(p.name for p in DATA.iterdir()) == sorted(EXPECTED)
