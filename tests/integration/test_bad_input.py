"""Bad input the daemon refuses: one `gq: ` line on stderr, exit code 2, nothing queued.
(What the CLI's parser and the config checks refuse without a daemon:
tests/unit/test_refusals.py.)"""

from __future__ import annotations

import pytest

from gq.cli.submit_args import request_args
from gq.protocol import BadInput, Connection

BAD_SUBMITS = {
    "mem over the card": (["--mem", "81G", "--", "true"], "more than the cards"),
    "negative gpus": (["--gpus", "-1", "--", "true"], "--gpus -1"),
    "more gpus than the host": (["--gpus", "5", "--", "true"], "has only 4 GPUs"),
    "empty command word": (["--", ""], "no command given"),
    "after an unknown id": (["--after", "999", "--", "true"], "--after 999: no such job"),
    "after garbage": (["--afterok", "x1", "--", "true"], "expected a job id"),
    "name with a slash": (["-n", "a/b", "--", "true"], "must not contain '/'"),
    "name with control chars": (["-n", "a\x1b[31m", "--", "true"], "control characters"),
    "name too long": (["-n", "x" * 65, "--", "true"], "at most 64"),
    "bad priority": (["-p", "urgent", "--", "true"], "expected high, normal or low"),
    "cpus over the host": (["-c", "999", "--", "true"], "--cpus 999"),
    "signal before no limit": (["--signal", "USR1@5m", "--", "true"], "needs --time"),
    "signal before the start": (["-t", "1h", "--signal", "USR1@2h", "--", "true"],
                                "--signal USR1@2h00m: must be shorter than --time 1h00m"),
    "negative retry-oom": (["--retry-oom", "-1", "--", "true"], "--retry-oom -1: must be 0"),
    "retry-oom without a GPU": (["-g", "0", "--retry-oom", "1", "--", "true"],
                                "--retry-oom retries with more GPU memory"),
    "mem auto without a GPU": (["-g", "0", "--mem", "auto", "--", "true"],
                               "--mem auto is GPU memory per GPU and needs --gpus 1 or more"),
}


def assert_refused(host, proc, needle: str, before: int) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("gq: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert needle in proc.stderr
    assert proc.stdout == ""
    assert host.count_jobs() == before


@pytest.mark.parametrize("argv,needle", BAD_SUBMITS.values(), ids=BAD_SUBMITS.keys())
def test_bad_submit_is_refused_with_one_line(shared_host, argv, needle):
    before = shared_host.count_jobs()
    assert_refused(shared_host, shared_host.gq("submit", *argv, check=False), needle, before)


def test_refusals_through_the_real_entry_point_exit_2(shared_host):
    """The process's own exit status and streams, for one refusal of the parser and one of
    the daemon (the rest are run in this process: tests/support/cli.py)."""
    for argv, needle in ((["--mem", "12XB", "--", "true"], "--mem '12XB'"),
                         (["--gpus", "5", "--", "true"], "has only 4 GPUs")):
        before = shared_host.count_jobs()
        proc = shared_host.gq("submit", *argv, check=False, process=True)
        assert_refused(shared_host, proc, needle, before)


@pytest.mark.parametrize("argv", [
    ["show", "999"], ["why", "12345"], ["cancel", "999"], ["hold", "7"], ["release", "abc"],
    ["requeue", "999"], ["wait", "999"], ["logs", "999"], ["show", "@"],
])
def test_unknown_job_ids_are_bad_input(shared_host, argv):
    proc = shared_host.gq(*argv, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gq: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_cancel_with_one_unknown_id_does_nothing(host):
    job = host.submit("--hold", "--", "true")
    proc = host.gq("cancel", str(job), "999", check=False)
    assert proc.returncode == 2
    assert host.job(job)["state"] == "held"


def test_nul_bytes_are_refused_by_the_cli_and_by_the_daemon(shared_host):
    with pytest.raises(BadInput, match="NUL"):
        request_args({}, ["echo", "a\0b"])
    good = request_args({}, ["true"])
    before = shared_host.count_jobs()
    for bad in ({**good, "command": ["echo", "a\0b"]}, {**good, "name": "a\0"},
                {**good, "env": {"K": "v\0"}}, {**good, "cwd": "/tmp\0"}):
        with (Connection(shared_host.home / "gq.sock") as conn,
              pytest.raises(BadInput, match="NUL")):
            conn.call("submit", **bad)
    assert shared_host.count_jobs() == before


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


def test_garbage_on_the_socket_gets_an_error_not_a_crash(shared_host):
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.connect(str(shared_host.home / "gq.sock"))
    s.settimeout(30)
    s.sendall(b"this is not json\n{\"v\": 99, \"op\": \"ls\"}\n[1,2]\n")
    reader = s.makefile()
    replies = [reader.readline() for _ in range(3)]
    s.close()
    assert '"ok":false' in replies[0] and "not JSON" in replies[0]
    assert "protocol version 99" in replies[1]
    assert "expected a JSON object" in replies[2]
    assert shared_host.call("ping")["pid"] > 0


def test_oversized_request_is_refused(shared_host):
    from gq.protocol import MAX_LINE

    with (Connection(shared_host.home / "gq.sock") as conn,
          pytest.raises(BadInput, match="larger")):
        conn.call("submit", command=["x" * (MAX_LINE + 10)])
    assert shared_host.call("ping")


# Each setting's check and message: tests/unit/test_refusals.py. Here, that a refusal reaches
# the user who started the daemon: a TOML error and a bad value.
@pytest.mark.parametrize("config,needle", [
    ("[host\n", "config.toml: Expected ']'"),
    ('[host]\ncpus = 4\n\n[access]\nqueue = "x"\n', "config.toml line 5: [access] queue = 'x'"),
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


def test_a_removed_working_directory_is_refused_in_one_line(shared_host, tmp_path):
    """#34 item 8: `mkdir d && cd d && rmdir "$PWD" && gq submit -- pwd` ended in a
    FileNotFoundError traceback; also with a relative --cwd. A script's too (directives)."""
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    before = shared_host.count_jobs()
    for argv in (["submit", "--", "pwd"], ["submit", "--cwd", "rel", "--", "pwd"],
                 ["submit", "./train.sh"]):
        proc = subprocess.run(["sh", "-c", 'cd "$0" && rmdir "$PWD" && exec "$@"', str(gone),
                               sys.executable, "-m", "gq", *argv], env=shared_host.env,
                              capture_output=True, text=True, timeout=60)
        assert_refused(shared_host, proc, "the current directory no longer exists", before)
        gone.mkdir()
