"""Bytes that are not UTF-8, through a real `gq` process and a real job: the round trip of
tests/soak/test_cli_input.py, with argv as the kernel hands it over."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_bytes_that_are_not_utf8_reach_the_job_and_come_back(host):
    raw = b"\xff\xfe caf\xc3\xa9 \x80"
    env = {**host.env, "PYTHONIOENCODING": "utf-8:strict"}  # as in a strict UTF-8 locale
    gq_cmd = [sys.executable.encode(), b"-m", b"gq"]
    refused = subprocess.run([*gq_cmd, b"submit", b"-n", b"n\xff", b"--", b"true"], env=env,
                             capture_output=True, cwd=host.work)
    assert refused.returncode == 2 and b"--name 'n\\udcff': not valid UTF-8" in refused.stderr
    proc = subprocess.run([*gq_cmd, b"submit", b"--env", b"K=\xfe", b"--", b"printf", b"%s|",
                           raw], env=env, capture_output=True, cwd=host.work, check=True)
    job_id = proc.stdout.strip().decode()
    assert host.wait_ended(int(job_id))["state"] == "completed"
    shown = subprocess.run([*gq_cmd, b"show", b"--json", job_id.encode()], env=env,
                           capture_output=True, check=True).stdout
    assert b"\\udcff\\udcfe" in shown and shown.isascii()  # JSON escapes them
    job = json.loads(shown)
    assert [os.fsencode(a) for a in job["command"]] == [b"printf", b"%s|", raw]
    assert os.fsencode(job["env"]["K"]) == b"\xfe"
    table = subprocess.run([*gq_cmd, b"show", job_id.encode()], env=env, capture_output=True,
                           check=True).stdout
    # For people, as `ls -b` shows them: each byte that was not UTF-8 in octal (the raw
    # \x80 ... \x9f would be C1 controls to an 8-bit terminal); what was UTF-8 as it was.
    assert rb"'\377\376 caf" + "é".encode() + rb" \200'" in table
    logs = subprocess.run([*gq_cmd, b"logs", job_id.encode()], env=env, capture_output=True,
                          check=True).stdout
    assert logs == raw + b"|"
