"""The hot commands' light path (gq/cli/light.py) and their Typer commands agree: one table
(gq/cli/commands.py) makes both, the light parser reads argv as click does or hands it to
Typer, and each command answers the same both ways, output, error line and exit code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gq.cli.jobs_cmd as jobs_cmd
from gq.cli import light
from gq.cli.commands import ALIASES, COMMANDS
from tests.support.hosts import GqHost, kill_processes_mentioning
from tests.support.examples import examples
from gq.cli.entry import main


def click_command(name: str):
    import typer.main

    from gq.cli.app import app

    return typer.main.get_command(app).commands[name]


# ---- the table and the Typer app -------------------------------------------------------


@pytest.mark.parametrize("name", [*COMMANDS, *ALIASES])
def test_the_typer_command_is_the_table(name):
    cmd = COMMANDS[ALIASES.get(name, name)]
    click = click_command(name)
    if name not in ALIASES:
        assert click.help == cmd.help
    assert click.context_settings.get("allow_interspersed_args", True) == cmd.interspersed
    params = {p.name: p for p in click.params}
    assert list(params) == ([cmd.arg.dest] if cmd.arg else []) + [o.dest for o in cmd.options]
    if cmd.arg:
        arg = params[cmd.arg.dest]
        assert arg.required == cmd.arg.required and arg.metavar == cmd.arg.metavar
        assert arg.help == cmd.arg.help
        assert arg.nargs == (-1 if cmd.arg.many else 1)
    for o in cmd.options:
        p = params[o.dest]
        assert tuple(p.opts) == o.flags and tuple(p.secondary_opts) == o.off
        assert p.help == o.help and p.default in (o.default, ())
        assert p.multiple == (o.kind == "multi")
        assert p.is_flag == (o.kind in ("flag", "switch"))
        if o.kind in ("value", "multi"):
            kind = {"str": str, "int": int}[o.type]
            assert p.type_descriptor.annotation == (list[kind] if p.multiple else kind)
            assert p.metavar == o.metavar and p.min == o.min


def test_the_light_state_groups_are_the_models():
    from gq import model, states

    # every stored state, and `stopping`, which is shown only (a decided end, its run not gone)
    stored = {str(s) for s in model.JobState}
    assert set(states.ORDER) == stored | states.STOPPING and not stored & states.STOPPING
    assert len(states.ORDER) == len(model.JobState) + len(states.STOPPING)
    for light, groups in [(states.WAITING, model.WAITING_STATES),
                          (states.RUNNING, model.RUNNING_STATES),
                          (states.FROZEN, model.FROZEN_STATES),
                          (states.ACTIVE - states.STOPPING, model.ACTIVE_STATES),
                          (states.ENDED, model.ENDED_STATES)]:
        assert light == {str(s) for s in groups}


# ---- the light parser reads argv as click does -------------------------------------------


def typer_values(name: str, argv: list[str], monkeypatch) -> dict | None:
    """The keyword arguments Typer calls the command's function with, or None: a usage
    error (or help)."""
    from gq.cli.app import run
    from gq.protocol import GqError

    seen: list[dict] = []
    function = COMMANDS[ALIASES.get(name, name)].function
    monkeypatch.setattr(jobs_cmd, function, lambda **kw: seen.append(kw))
    try:
        run([name, *argv])
    except GqError:
        return None
    if not seen:  # --help
        return None
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in seen[0].items()}


CASES = {
    "ls": [[], ["-a"], ["-ae", "-s", "held", "--state=pending"], ["-uann"], ["-u", "ann"],
           ["--user=ann", "--user", "bob"], ["--last", "3", "-a"], ["--last=07"],
           ["--since", "2h", "--start", "--json"], ["--all-hosts"], ["--this-host"],
           ["--all-hosts", "--this-host"], ["-s", "held", "-s", "running"], ["-u=x"],
           ["--last", "0"], ["--last", "x"], ["--last", "-1"], ["-u"], ["--bogus"], ["x"],
           ["--all=1"], ["-h"], ["--help"], ["-ah"], ["--", "-a"], ["-u", "-a"], ["-"]],
    "ps": [["-a"], ["--json"]],
    "show": [["1"], ["@", "--json"], ["--json", "3"], [], ["1", "2"], ["--", "-1"], ["-1"],
             ["--help"], [""]],
    "why": [["1"], ["12_3"], [], ["1", "2"], ["--json", "1"]],
    "logs": [["1"], ["-f", "1"], ["1", "--err", "--follow"], ["-fe", "1"], []],
    "cancel": [["1"], ["1", "2", "12_3"], [], ["--", "-1"], ["-x", "1"]],
    "hold": [["1", "@"]],
    "release": [["1"], []],
    "requeue": [["1"]],
    "update": [["1", "-m", "20G"], ["-n", "x", "1", "2", "-p", "high", "--time=1h"],
               ["1", "-g2", "-c", "4", "--ram", "1G"], ["1", "-m"], ["-m", "1G"],
               ["1", "--name", "-x"]],
    "wait": [["1"], ["1", "--timeout", "90s"], ["--timeout=0", "1", "2"], ["--timeout"], []],
    "gpus": [[], ["--json"], ["--all-hosts", "--json"], ["x"]],
    "offenders": [[], ["--this-host"], ["--json", "--json"]],
    "clean": [[], ["x"]],
}


@pytest.mark.parametrize("name,argv", [(n, a) for n, cases in CASES.items() for a in cases])
def test_the_light_parser_reads_what_typer_reads(name, argv, monkeypatch):
    parsed = light.parse(COMMANDS[ALIASES.get(name, name)], argv)
    if parsed is not None:  # None: it leaves this argv to Typer
        assert parsed == typer_values(name, argv, monkeypatch)


def test_the_light_parser_takes_the_usual_command_lines():
    """Not everything falls through: the common forms are parsed light."""
    for name, argv in [("ls", []), ("ls", ["-a", "--json"]), ("ls", ["-u", "ann", "-s", "held"]),
                       ("show", ["12", "--json"]), ("cancel", ["1", "2_3"]),
                       ("wait", ["1", "--timeout", "1h"]), ("update", ["1", "-m", "2G"]),
                       ("gpus", ["--all-hosts"])]:
        assert light.parse(COMMANDS[name], argv) is not None, (name, argv)


WORDS = st.sampled_from(["-a", "-e", "-s", "-u", "-ae", "-es", "--all", "--user", "--state",
                         "--last", "--since", "--json", "--start", "--expand", "--all-hosts",
                         "--this-host", "--last=2", "--user=x", "--", "-", "-h", "--help",
                         "--nope", "-z", "held", "2", "0", "-1", "1h", "x", "", "--all=1"])


@settings(max_examples=examples(150), deadline=None)
@given(name=st.sampled_from(["ls", "cancel", "show", "update", "wait"]),
       argv=st.lists(st.one_of(WORDS, st.sampled_from(["-m", "-g2", "--timeout", "12", "@"])),
                     max_size=6))
def test_whatever_the_light_parser_takes_typer_takes_alike(name, argv):
    parsed = light.parse(COMMANDS[name], argv)
    if parsed is None:
        return
    with pytest.MonkeyPatch.context() as mp:
        assert parsed == typer_values(name, argv, mp)


# ---- the same answers, both ways, from one daemon -----------------------------------------

DURATION = re.compile(r"\b\d+(d\d\dh|h\d\dm|m\d\ds|s)\b")


@pytest.fixture(scope="module")
def queue():
    """One daemon for the module: a held job, a held 3-element array, a completed job and a
    failed one."""
    where = tempfile.mkdtemp(prefix="gq-", dir="/tmp")
    host = GqHost(Path(where) / "home", "4x80G")
    try:
        host.start()
        held = host.submit("--hold", "-n", "train", "-g", "0", "--", "true")
        array = host.submit("--hold", "-n", "sweep", "-g", "0", "--array", "0-2", "--", "true")
        done = host.submit("-n", "done", "-g", "0", "--", "sh", "-c", "echo out; echo err >&2")
        failed = host.submit("-n", "bad", "-g", "0", "--", "false")
        host.wait_ended(done)
        host.wait_ended(failed)
        yield host, {"H": str(held), "A": str(array), "D": str(done), "F": str(failed)}
    finally:
        host.close()
        kill_processes_mentioning(where)
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def jobs(queue, monkeypatch):
    host, ids = queue
    monkeypatch.setenv("GQ_HOME", host.env["GQ_HOME"])
    monkeypatch.chdir(host.work)
    return ids


def both_ways(argv: list[str], capsys) -> tuple[tuple, tuple]:
    """(exit code, stdout, stderr) of `gq ARGV` on the light path and through Typer, times
    of day and durations masked (a held job's wait grows between the two)."""
    out = []
    for use_light in (True, False):
        with pytest.raises(SystemExit) as done:
            main(list(argv), light=use_light)
        got = capsys.readouterr()
        out.append((done.value.code, DURATION.sub("T", got.out), DURATION.sub("T", got.err)))
    return out[0], out[1]


SAME = [
    "ls", "ls -a", "ls -ae", "ls --all --json", "ls -s held", "ls --last 2 -a", "ls --since 1h",
    "ls -u nobody", "ls --this-host --start", "ps -a", "ls --json", "ls --last 0", "ls --last x",
    "ls --since 3q", "ls --bogus", "ls extra", "ls -s", "ls -s nosuch", "ls --all=1",
    "show H", "show H --json", "show @", "show 99999", "show", "show 1 2", "show x",
    "why H", "why A", "why F", "why A_1", "why nope",
    "logs D", "logs D --err", "logs H", "logs",
    "wait D", "wait D F", "wait D --timeout 1s", "wait H --timeout 0", "wait --timeout 3q D",
    "wait",
    "cancel D", "cancel 99999", "cancel", "cancel -1",
    "hold H", "hold A", "release D", "release",
    "update H -n renamed", "update H -g x", "update H --time 3q", "update D -m 1G", "update",
    "gpus", "gpus --json", "gpus --this-host", "offenders", "offenders --json", "clean",
]


CHANGES = {"update", "hold", "clean"}


@pytest.mark.parametrize("line", SAME)
def test_each_hot_command_answers_the_same_both_ways(line, jobs, capsys):
    argv = [jobs.get(w, w) for w in line.split()]
    argv = [f"{jobs['A']}_1" if w == "A_1" else w for w in argv]
    if argv[0] in CHANGES:  # the first run changes the job; the two compared change nothing
        both_ways(argv, capsys)
    light_answer, typer_answer = both_ways(argv, capsys)
    assert light_answer == typer_answer


def buffered(env: dict[str, str]) -> dict[str, str]:
    """The environment as a user's shell gives it: stdout into a pipe is buffered."""
    return {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}


def test_the_light_path_runs_as_a_process(jobs, queue):
    """`gq` itself, in a process: the exit codes and lines of a good and a bad command, all
    written out (the light path ends the process without the interpreter's teardown)."""
    env = buffered(queue[0].env)
    good = subprocess.run([sys.executable, "-m", "gq", "why", jobs["H"]], env=env,
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and f"Job {jobs['H']} is held" in good.stdout
    bad = subprocess.run([sys.executable, "-m", "gq", "ls", "--last", "0"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("gq: invalid value for '--last'")
    assert len(bad.stderr.splitlines()) == 1


def test_a_process_whose_reader_went_ends_quietly(jobs, queue):
    """`gq ls | head`: a reader that has gone before the listing is written is no error; the
    process ends 0 and says nothing (the light path ends without the interpreter's teardown,
    which would flush stdout again and complain)."""
    proc = subprocess.Popen([sys.executable, "-m", "gq", "ls", "--all"], env=buffered(queue[0].env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert (proc.wait(timeout=60), err) == (0, b"")


def test_a_rare_command_whose_reader_went_ends_quietly(queue):
    """The same through Typer (a command not on the light path)."""
    proc = subprocess.Popen([sys.executable, "-m", "gq", "config", "show"],
                            env=buffered(queue[0].env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert (proc.wait(timeout=60), err) == (0, b"")
