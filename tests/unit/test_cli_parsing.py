"""The light `gq submit` parser and the Typer command agree, option for option."""

from __future__ import annotations

import pytest

import gq.cli.app as app_module
from gq.cli import client
from gq.cli.submit_args import OPTIONS, parse_argv, request_args
from gq.protocol import BadInput

CASES = [
    ["--", "python", "train.py", "--lr", "3"],
    ["python", "train.py", "--lr", "3"],
    ["-g", "2", "-m", "20G", "-c", "4", "--ram", "32G", "-p", "high", "-t", "1d12h", "--",
     "x"],
    ["--gpus=0", "--name", "prep", "--env", "A=1", "--env", "B=x=y", "--hold", "--", "x"],
    ["-g0", "--after", "1,2", "--afterok", "3", "--afternotok", "4", "--cwd", "/tmp", "x"],
    ["--priority", "LOW", "--time", "90m", "x", "-g", "3"],
    ["-p", "low", "--no-preemptible", "--signal", "usr1@5m", "--signal-group", "--grace", "0",
     "--retry-oom", "2", "-t", "1h", "--", "x"],
    ["--preemptible", "--signal=10", "--grace=90s", "x"],
    ["--array", "0-3,8%2", "--sweep", "lr=1,2", "--sweep=bs=3", "--notify", "echo $GQ_STATE",
     "--mail", "ann", "--", "x", "{lr}"],
]


def via_typer(argv, monkeypatch):
    """What the Typer command would send to the daemon (captured at the socket call)."""
    seen = {}

    def capture(args):
        seen.update(args)
        return {"id": 1}

    monkeypatch.setattr(client, "submit_job", capture)
    assert app_module.run(["submit", *argv]) == 0
    return seen


@pytest.mark.parametrize("argv", CASES)
def test_fast_parser_matches_typer(argv, monkeypatch, capsys):
    values, command = parse_argv(argv)
    assert request_args(values, command) == via_typer(argv, monkeypatch)


def test_every_option_in_the_table_is_a_typer_option():
    import typer.main

    submit = typer.main.get_command(app_module.app).commands["submit"]
    typer_flags = {o for p in submit.params for o in getattr(p, "opts", []) if o.startswith("-")}
    table_flags = {f for o in OPTIONS for f in o.flags}
    assert typer_flags - {"-h", "--help"} == table_flags


def test_the_command_keeps_its_own_options():
    values, command = parse_argv(["-g", "1", "python", "-m", "x", "--gpus", "9"])
    assert values == {"gpus": "1"} and command == ["python", "-m", "x", "--gpus", "9"]


def test_submit_args_carry_the_environment_and_parse_units(monkeypatch):
    monkeypatch.setenv("GQ_TEST_VAR", "v")
    args = request_args({"mem": "1G", "time": "2h", "env": ["A=b"]}, ["x"])
    assert args["env"]["GQ_TEST_VAR"] == "v" and args["env"]["A"] == "b"
    assert args["mem"] == 1 << 30 and args["time_limit"] == 7200


@pytest.mark.parametrize("argv,message", [
    (["--nope"], "no such option: --nope"), (["--hold=1", "x"], "--hold takes no value"),
    (["-g"], "-g needs a value"),
])
def test_parse_errors(argv, message):
    with pytest.raises(BadInput, match=message):
        parse_argv(argv)
