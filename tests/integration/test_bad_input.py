"""Bad input: one `gq: ` line on stderr, exit code 2, nothing queued."""

from __future__ import annotations

import pytest

from gq.cli.submit_args import request_args
from gq.protocol import BadInput, Connection

BAD_SUBMITS = {
    "malformed mem": (["--mem", "12XB", "--", "true"], "--mem"),
    "zero mem": (["--mem", "0", "--", "true"], "positive"),
    "mem without a unit": (["--mem", "20", "--", "true"],
                           "--mem '20': a size needs a unit: did you mean 20G?"),
    "negative mem": (["--mem=-5G", "--", "true"], "--mem"),
    "mem over the card": (["--mem", "81G", "--", "true"], "more than the cards"),
    "negative gpus": (["--gpus", "-1", "--", "true"], "--gpus -1"),
    "gpus not a number": (["-g", "two", "--", "true"], "--gpus two: expected a whole number"),
    "more gpus than the host": (["--gpus", "5", "--", "true"], "has only 4 GPUs"),
    "empty command": (["--"], "no command given"),
    "no command at all": ([], "no command given"),
    "empty command word": (["--", ""], "no command given"),
    "after an unknown id": (["--after", "999", "--", "true"], "--after 999: no such job"),
    "after garbage": (["--afterok", "x1", "--", "true"], "expected a job id"),
    "malformed duration": (["--time", "5x", "--", "true"], "--time"),
    "zero duration": (["-t", "0m", "--", "true"], "positive"),
    "name with a slash": (["-n", "a/b", "--", "true"], "must not contain '/'"),
    "name with control chars": (["-n", "a\x1b[31m", "--", "true"], "control characters"),
    "name too long": (["-n", "x" * 65, "--", "true"], "at most 64"),
    "cwd that does not exist": (["--cwd", "/no/such/dir", "--", "true"], "no such directory"),
    "unknown option": (["--bogus", "--", "true"], "no such option: --bogus"),
    "bad priority": (["-p", "urgent", "--", "true"], "expected high, normal or low"),
    "bad env": (["--env", "NOEQUALS", "--", "true"], "KEY=VALUE"),
    "cpus over the host": (["-c", "999", "--", "true"], "--cpus 999"),
    "option without value": (["--mem"], "--mem needs a value"),
    "unknown signal": (["--signal", "FOO", "--", "true"], "--signal 'FOO': expected a signal"),
    "uncatchable signal": (["--signal", "KILL", "--", "true"], "cannot catch SIGKILL"),
    "signal before no limit": (["--signal", "USR1@5m", "--", "true"], "needs --time"),
    "signal before the start": (["-t", "1h", "--signal", "USR1@2h", "--", "true"],
                                "--signal USR1@2h00m: must be shorter than --time 1h00m"),
    "signal with a bad duration": (["--signal", "USR1@soon", "--", "true"],
                                   "--signal USR1@soon: after @"),
    "negative grace": (["--grace=-5s", "--", "true"], "--grace '-5s'"),
    "grace not a duration": (["--grace", "long", "--", "true"], "--grace 'long'"),
    "negative retry-oom": (["--retry-oom", "-1", "--", "true"], "--retry-oom -1: must be 0"),
    "retry-oom without a GPU": (["-g", "0", "--retry-oom", "1", "--", "true"],
                                "--retry-oom retries with more GPU memory"),
    "preemptible both ways": (["--preemptible", "--no-preemptible", "--", "true"],
                              "contradict"),
    "mem auto without a GPU": (["-g", "0", "--mem", "auto", "--", "true"],
                               "--mem auto is GPU memory per GPU and needs --gpus 1 or more"),
}


@pytest.mark.parametrize("argv,needle", BAD_SUBMITS.values(), ids=BAD_SUBMITS.keys())
def test_bad_submit_is_refused_with_one_line(host, argv, needle):
    before = host.count_jobs()
    proc = host.gq("submit", *argv, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("gq: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert needle in proc.stderr
    assert proc.stdout == ""
    assert host.count_jobs() == before


@pytest.mark.parametrize("argv", [
    ["show", "999"], ["why", "12345"], ["cancel", "999"], ["hold", "7"], ["release", "abc"],
    ["requeue", "999"], ["wait", "999"], ["logs", "999"], ["show", "@"],
])
def test_unknown_job_ids_are_bad_input(host, argv):
    proc = host.gq(*argv, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gq: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_typer_usage_errors_are_one_line_too(host):
    proc = host.gq("ls", "--frobnicate", check=False)
    assert proc.returncode == 2
    assert proc.stderr == "gq: no such option: --frobnicate (see gq ls --help)\n"


def test_cancel_with_one_unknown_id_does_nothing(host):
    job = host.submit("--hold", "--", "true")
    proc = host.gq("cancel", str(job), "999", check=False)
    assert proc.returncode == 2
    assert host.job(job)["state"] == "held"


def test_nul_bytes_are_refused_by_the_cli_and_by_the_daemon(host):
    with pytest.raises(BadInput, match="NUL"):
        request_args({}, ["echo", "a\0b"])
    good = request_args({}, ["true"])
    before = host.count_jobs()
    for bad in ({**good, "command": ["echo", "a\0b"]}, {**good, "name": "a\0"},
                {**good, "env": {"K": "v\0"}}, {**good, "cwd": "/tmp\0"}):
        with Connection(host.home / "gq.sock") as conn, pytest.raises(BadInput, match="NUL"):
            conn.call("submit", **bad)
    assert host.count_jobs() == before


def test_mem_without_a_unit_is_refused_in_directives_and_the_protocol(host, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#GQ --mem 20\ntrue\n")
    script.chmod(0o755)
    proc = host.gq("submit", "--", str(script), check=False)
    assert proc.returncode == 2 and "did you mean 20G?" in proc.stderr, proc.stderr
    good = request_args({}, ["true"])
    before = host.count_jobs()
    for bad, meant in (("20", "20G"), (20, "20G"), ("512", "512G")):
        with Connection(host.home / "gq.sock") as conn, pytest.raises(
                BadInput, match=f"did you mean {meant}"):
            conn.call("submit", **{**good, "mem": bad})
    assert host.count_jobs() == before
    with Connection(host.home / "gq.sock") as conn:
        assert conn.call("submit", **{**good, "mem": "20G", "hold": True})


def test_garbage_on_the_socket_gets_an_error_not_a_crash(host):
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.connect(str(host.home / "gq.sock"))
    s.settimeout(30)
    s.sendall(b"this is not json\n{\"v\": 99, \"op\": \"ls\"}\n[1,2]\n")
    reader = s.makefile()
    replies = [reader.readline() for _ in range(3)]
    s.close()
    assert '"ok":false' in replies[0] and "not JSON" in replies[0]
    assert "protocol version 99" in replies[1]
    assert "expected a JSON object" in replies[2]
    assert host.call("ping")["pid"] > 0


def test_oversized_request_is_refused(host):
    from gq.protocol import MAX_LINE

    with Connection(host.home / "gq.sock") as conn, pytest.raises(BadInput, match="larger"):
        conn.call("submit", command=["x" * (MAX_LINE + 10)])
    assert host.call("ping")


@pytest.mark.parametrize("config,needle", [
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
])
def test_a_bad_config_file_is_refused_at_start_with_the_reason(make_host, config, needle):
    host = make_host("1x80G", start=False)
    (host.home / "config.toml").write_text(config)
    proc = host.gq("submit", "--", "true", check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("gq: the daemon failed to start: ")
    assert needle in proc.stderr and proc.stderr.count("gq:") == 1


def test_a_bad_sim_spec_is_refused_at_start(make_host):
    host = make_host("4y80G", start=False)
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and "GQ_SIM_GPUS='4y80G'" in proc.stderr


def test_per_tier_default_times_are_read_and_checked(make_host):
    host = make_host("1x80G", start=False)
    with open(host.home / "config.toml", "a") as config:
        config.write('\n[scheduler]\ndefault_time = { low = "3d", urgent = "1h" }\n')
    proc = host.gq("ls", check=False)
    assert proc.returncode == 1 and "default_time.urgent: expected high, normal or low" in proc.stderr


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


@pytest.mark.parametrize("argv,needle", NOT_ASCII_NUMBERS.values(),
                         ids=NOT_ASCII_NUMBERS.keys())
def test_numbers_are_ascii_digits_only(host, argv, needle):
    test_bad_submit_is_refused_with_one_line(host, argv, needle)
