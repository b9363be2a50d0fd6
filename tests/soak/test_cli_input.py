"""Hostile input at the CLI, generated (hypothesis): an invalid submit gets one `gq: ` line,
exit code 2 and queues nothing; a valid one round-trips through `gq show --json`, arguments
with spaces, quotes, unicode and bytes that are not UTF-8 included.

Arguments that are not UTF-8 reach Python as lone surrogates (PEP 383: os.fsdecode); gq
carries them so, JSON escapes them (\\udcff), and the job's exec turns them back into the
bytes they were. The examples pass argv in this process as Python would have decoded it;
tests/integration/test_cli_bytes.py passes real bytes through a real `gq` process and job.
3 x 150 examples, each a round trip to a daemon: a soak test."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gq.cli.entry import main

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

NOT_UTF8 = st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b).map(os.fsdecode)
TEXT = st.text(st.characters(blacklist_characters="\0"), max_size=24)
TRICKY = st.sampled_from(["a b", "  ", "'single'", '"double"', "it's", "$HOME", "`id`", "\\",
                          "--", "-n", "--mem", "é", "日本語", "🙂", "\t", "\n", "a\rb", "*", "~"])
ARG = st.one_of(TEXT, NOT_UTF8, TRICKY)
# A name is stored as text, so it must be UTF-8 (a job's command and environment need not).
NAME = st.text(st.characters(blacklist_characters="/\x7f", blacklist_categories=("Cc", "Cs")),
               min_size=1, max_size=64)
ENV_KEY = st.text(st.characters(blacklist_characters="\0="), min_size=1, max_size=12)


@st.composite
def valid_submits(draw):
    """(argv after `gq submit`, what `gq show --json` must say)."""
    gpus = draw(st.integers(0, 4))
    argv, expect = ["--hold", "-g", str(gpus)], {"gpus": gpus, "mem": None, "state": "held"}
    if gpus and draw(st.booleans()):
        mem = draw(st.integers(1, 80))
        argv += ["--mem", f"{mem}G"]
        expect["mem"] = mem << 30
    cpus = draw(st.integers(1, 16))
    # The high tier's default share of 4 cards is 1: more could never start, and is refused.
    priority = draw(st.sampled_from(["high", "normal", "low"] if gpus <= 1 else ["normal", "low"]))
    argv += ["-c", str(cpus), "-p", priority]
    expect.update(cpus=cpus, priority=priority)
    name = draw(st.none() | NAME)
    if name is not None:
        argv += ["-n", name]
        expect["name"] = name
    env = draw(st.dictionaries(ENV_KEY, ARG, max_size=3))
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    command = draw(st.lists(ARG, min_size=1, max_size=5).filter(lambda c: c[0] != ""))
    expect["command"] = command
    return [*argv, "--", *command], expect, env


# Each invalid for any host with 4 cards and 16 cores, whatever else the submit says.
INVALID = [
    ("-g", "-1"), ("-g", "x"), ("-g", "5"), ("-g", "1.5"), ("-g", ""), ("--mem", "0"),
    ("--mem", "12XB"), ("--mem", "81G"), ("--mem", "-5G"), ("-c", "0"), ("-c", "17"),
    ("-c", "x"), ("-p", "urgent"), ("-p", ""), ("-t", "0m"), ("-t", "5x"), ("-t", ""),
    ("-n", "a/b"), ("-n", "x" * 65), ("-n", "a\x1bb"), ("--signal", "FOO"),
    ("--signal", "KILL"), ("--grace", "-5s"), ("--grace", "long"), ("--retry-oom", "-1"),
    ("--retry-oom", "x"), ("--after", "999999"), ("--afterok", "x1"), ("--env", "NOEQUALS"),
    ("--env", "=v"), ("--cwd", "/no/such/dir"), ("--array", "x"), ("--array", "5-1"),
    ("--array", "0-3%0"), ("--sweep", "lr"), ("--sweep", "=1"), ("--bogus", "1"),
    ("--preemptible", "--no-preemptible"), ("-n", os.fsdecode(b"n\xff")),
    ("--cwd", os.fsdecode(b"/tmp/\xff")),
]
OPTIONS = ["-g", "--mem", "-c", "--ram", "-p", "-t", "-n", "--cwd", "--env", "--signal",
           "--grace", "--retry-oom", "--after", "--afterok", "--afternotok", "--array",
           "--sweep", "--notify", "--mail"]


def gq(*argv: str) -> tuple[int, str, str]:
    """`gq ARGV...` in this process, through the console script's own entry point."""
    out, err = io.StringIO(), io.StringIO()
    code = None
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli(host, monkeypatch):
    monkeypatch.setenv("GQ_HOME", host.env["GQ_HOME"])
    monkeypatch.chdir(host.work)
    return host


def _count(host) -> int:
    return len(host.call("list", all=True)["jobs"])


def _refused(code: int, out: str, err: str) -> bool:
    return (code == 2 and out == "" and err.startswith("gq: ") and err.endswith("\n")
            and err.count("\n") == 1)


@SETTINGS
@given(valid_submits())
def test_a_valid_submit_round_trips_through_show_json(cli, submit):
    argv, expect, env = submit
    code, out, err = gq("submit", *argv)
    assert (code, err) == (0, ""), err
    code, shown, err = gq("show", "--json", out.strip())
    assert (code, err) == (0, "")
    job = json.loads(shown)
    for key, value in expect.items():
        assert job[key] == value, key
    if "name" not in expect:  # named after the command, printable characters only
        assert job["name"] == "".join(c for c in os.path.basename(expect["command"][0])
                                      or expect["command"][0]
                                      if c.isprintable() and c != "/")[:64]
    assert {k: job["env"][k] for k in env} == env
    assert gq("show", out.strip())[0] == 0  # the table for people prints it too


@SETTINGS
@given(valid_submits(), st.sampled_from(INVALID))
def test_an_invalid_submit_gets_one_line_exit_2_and_queues_nothing(cli, submit, bad):
    argv, _, _ = submit
    before = _count(cli)
    at = argv.index("--")
    code, out, err = gq("submit", *argv[:at], *bad, *argv[at:])
    assert _refused(code, out, err), (bad, code, out, err)
    assert _count(cli) == before


@SETTINGS
@given(valid_submits(), st.sampled_from(OPTIONS), st.one_of(ARG, TRICKY))
def test_any_option_value_is_queued_or_refused_in_one_line(cli, submit, option, value):
    argv, _, _ = submit
    before = _count(cli)
    at = argv.index("--")
    code, out, err = gq("submit", *argv[:at], option, value, *argv[at:])
    if code == 0:
        assert err == "" and out.strip().isdigit() and _count(cli) > before
    else:
        assert _refused(code, out, err), (option, value, code, out, err)
        assert _count(cli) == before
