"""Bad input refused before any daemon is asked: the CLI's parser and the config file's checks.
One `gq: ` line on stderr, exit code 2, and the daemon never reached, so nothing is queued.
(What the daemon refuses: tests/integration/test_bad_input.py.)"""

from __future__ import annotations

import os

import pytest

import gq.cli.client as client
from gq.config import load_config
from gq.protocol import GqError
from tests.support.cli import gq_in_process

PARSE_REFUSALS = {
    "malformed mem": (["--mem", "12XB", "--", "true"], "--mem"),
    "zero mem": (["--mem", "0", "--", "true"], "positive"),
    "mem without a unit": (["--mem", "20", "--", "true"],
                           "--mem '20': a size needs a unit: did you mean 20G?"),
    "negative mem": (["--mem=-5G", "--", "true"], "--mem"),
    "gpus not a number": (["-g", "two", "--", "true"], "--gpus two: expected a whole number"),
    "empty command": (["--"], "no command given"),
    "no command at all": ([], "no command given"),
    "malformed duration": (["--time", "5x", "--", "true"], "--time"),
    "zero duration": (["-t", "0m", "--", "true"], "positive"),
    "cwd that does not exist": (["--cwd", "/no/such/dir", "--", "true"], "no such directory"),
    "unknown option": (["--bogus", "--", "true"], "no such option: --bogus"),
    "bad env": (["--env", "NOEQUALS", "--", "true"], "KEY=VALUE"),
    "option without value": (["--mem"], "--mem needs a value"),
    "unknown signal": (["--signal", "FOO", "--", "true"], "--signal 'FOO': expected a signal"),
    "uncatchable signal": (["--signal", "KILL", "--", "true"], "cannot catch SIGKILL"),
    "signal with a bad duration": (["--signal", "USR1@soon", "--", "true"],
                                   "--signal USR1@soon: after @"),
    "negative grace": (["--grace=-5s", "--", "true"], "--grace '-5s'"),
    "grace not a duration": (["--grace", "long", "--", "true"], "--grace 'long'"),
    "preemptible both ways": (["--preemptible", "--no-preemptible", "--", "true"],
                              "contradict"),
}

# To Python "١٠" (Arabic-Indic), "²" and "1_0" are numbers; to gq only ASCII digits are.
NOT_ASCII_NUMBERS = {
    "arabic-indic mem": (["--mem", "١٠G", "--", "true"], "--mem"),
    "underscore cpus": (["--cpus", "0_1", "--", "true"], "--cpus 0_1: expected a whole number"),
    "arabic-indic gpus": (["-g", "١", "--", "true"], "--gpus ١: expected a whole number"),
    "superscript time": (["-t", "²h", "--", "true"], "--time"),
    "arabic-indic minutes": (["-t", "١٠", "--", "true"], "--time"),
    "arabic-indic signal": (["--signal", "١٠", "--", "true"], "--signal"),
    "superscript array": (["--array", "0-²", "--", "true"], "--array"),
}


@pytest.fixture
def no_daemon(monkeypatch, tmp_path):
    """`gq` with a GQ_HOME where no daemon runs, and a test failure if it tries to reach or
    start one."""

    def reached(*args, **kwargs):
        raise AssertionError("the CLI asked a daemon")

    monkeypatch.setattr(client, "try_connect", reached)
    monkeypatch.setattr(client, "start_daemon", reached)
    env = {"GQ_HOME": str(tmp_path / "home"), "GQ_SIM_GPUS": "4x80G",
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def gq(*argv: str):
        return gq_in_process(list(argv), env, tmp_path)

    return gq


def assert_one_line_refusal(proc, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("gq: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert needle in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("argv,needle", [*PARSE_REFUSALS.values(), *NOT_ASCII_NUMBERS.values()],
                         ids=[*PARSE_REFUSALS, *NOT_ASCII_NUMBERS])
def test_bad_submit_is_refused_with_one_line(no_daemon, argv, needle):
    assert_one_line_refusal(no_daemon("submit", *argv), needle)


def test_typer_usage_errors_are_one_line_too(no_daemon):
    proc = no_daemon("ls", "--frobnicate")
    assert proc.returncode == 2
    assert proc.stderr == "gq: no such option: --frobnicate (see gq ls --help)\n"


@pytest.mark.parametrize("argv, line", [
    # gq submit's own parser, the light path's hot commands (which leave it to Typer), a
    # Typer command, a subcommand's
    (["submit", "--gpu", "2", "--", "true"], "--gpu; did you mean --gpus? (see gq submit"),
    (["submit", "--hol", "--", "true"], "--hol; did you mean --hold? (see gq submit"),
    (["ls", "--al"], "--al; did you mean --all? (see gq ls"),
    (["update", "1", "--mme", "3G"], "--mme; did you mean --mem? (see gq update"),
    (["stats", "--sinse", "1d"], "--sinse; did you mean --since? (see gq stats"),
    (["daemon", "status", "--jsn"], "--jsn; did you mean --json? (see gq daemon status"),
])
def test_a_mistyped_option_gets_a_did_you_mean_in_one_line(no_daemon, argv, line):
    proc = no_daemon(*argv)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"gq: no such option: {line} --help)\n"


# What the daemon reads at start (gq/daemon/main.py); that its refusal reaches the user as one
# line, exit code 1, is tests/integration/test_bad_input.py's.
BAD_CONFIGS = [
    ('[host]\ncpus = "x"\n', "[host] cpus = 'x': expected a whole number"),
    ("[host\n", "config.toml: Expected ']'"),
    ('[daemon]\nkill_wait = "soon"\n', "expected a duration"),
    ("[hots]\ncpus = 4\n", "unknown setting [hots]"),
    ('[preemption]\nexempt = "soon"\n', "[preemption] exempt = 'soon': expected a duration"),
    ('[preemption]\ngrace = "-1s"\n', "[preemption] grace = '-1s'"),
    ("[preemption]\nmax_requeues = -1\n", "[preemption] max_requeues = -1"),
    ('[preemption]\npreemptible = ["urgent"]\n', "expected a list of tiers"),
    ("[preemption]\nenabled = false\n", "unknown setting [preemption] enabled"),
    ('[notify]\ntimeout = "soon"\n', "[notify] timeout = "),
    ("[notify]\non_finish = 3\n", "[notify] on_finish = 3: expected a command"),
    ('[notify]\non_end = "x"\n', "unknown setting [notify] on_end"),
    ('[peers]\ncheck_every = "often"\n', "[peers] check_every = 'often': expected a duration"),
    ('[peers]\nall_hosts = "yes"\n', "[peers] all_hosts = 'yes': expected true or false"),
    ('[host]\ncpus = 4\n\n[access]\nqueue = "x"\n', "config.toml line 5: [access] queue = 'x'"),
    ('[access]\nadmins = "a b"\n', "line 2: [access] admins = 'a b': expected the name of a "
                                    "group"),
    ("[daemon]\nmax_connections_per_user = 0\n", "line 2: [daemon] max_connections_per_user"),
    ('[daemon]\nmax_request = "1K"\n', "[daemon] max_request = '1K': expected a size from 64K"),
    ('[daemon]\nidle_timeout = "never"\n', "line 2: [daemon] idle_timeout = 'never'"),
    ("[limits.users.ann]\nhigh_share = 2\n", "line 2: [limits.users.ann] high_share = 2"),
    ("[host]\ncpus = 4\ncores = 3\n", "config.toml line 3: unknown setting [host] cores"),
]


@pytest.mark.parametrize("config,needle", BAD_CONFIGS)
def test_a_bad_config_file_is_refused_with_the_reason(tmp_path, config, needle):
    path = tmp_path / "config.toml"
    path.write_text(config)
    with pytest.raises(GqError) as refused:
        load_config(path)
    assert refused.value.message.startswith(f"{path}")
    assert needle in refused.value.message and "\n" not in refused.value.message
