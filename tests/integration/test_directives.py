"""`#GQ` lines in a submitted script, read as Slurm reads `#SBATCH`: parsing and a real daemon."""

from __future__ import annotations

import pytest

from gq.cli.directives import apply_directives
from gq.protocol import BadInput

TRAIN = """#!/bin/sh
# train a model
#GQ --gpus 2 --mem 20G
#GQ --time 4h -n train   # a comment after the options
#GQ --env A=script --env B=script

#GQ --priority low
echo "gpus=$CUDA_VISIBLE_DEVICES A=$A B=$B args=$*"
#GQ --gpus 4
"""


def script(tmp_path, text: str = TRAIN, name: str = "train.sh", executable: bool = True) -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return str(path)


def test_directives_are_read_from_the_leading_comments_only(tmp_path):
    path = script(tmp_path)
    values, command = apply_directives({"cwd": str(tmp_path)}, ["train.sh", "x"])
    assert command == [path, "x"]
    assert values == {"cwd": str(tmp_path), "gpus": "2", "mem": "20G", "time": "4h",
                      "name": "train", "env": ["A=script", "B=script"], "priority": "low"}


def test_command_line_options_win_and_env_merges_by_name(tmp_path):
    script(tmp_path)
    values, _ = apply_directives({"cwd": str(tmp_path), "gpus": "1", "env": ["B=cli"]},
                                 ["./train.sh"])
    assert values["gpus"] == "1" and values["mem"] == "20G"
    assert values["env"] == ["A=script", "B=cli"]


def test_a_script_without_its_executable_bit_runs_through_its_interpreter(tmp_path):
    path = script(tmp_path, "#!/usr/bin/env python3\n#GQ -g 0\nprint(1)\n", "p.py",
                  executable=False)
    assert apply_directives({"cwd": str(tmp_path)}, ["p.py"])[1] == ["/usr/bin/env", "python3",
                                                                      path]
    plain = script(tmp_path, "echo hi\n", "plain.sh", executable=False)
    assert apply_directives({"cwd": str(tmp_path)}, ["plain.sh"])[1] == ["sh", plain]


def test_programs_and_binaries_are_not_scripts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "echo").write_text("#GQ --gpus 4\n")  # a file named like a program on PATH
    assert apply_directives({}, ["echo", "hi"]) == ({}, ["echo", "hi"])
    (tmp_path / "a.out").write_bytes(b"\x7fELF\0\0#GQ --gpus 4\n")
    assert apply_directives({}, ["./a.out"]) == ({}, ["./a.out"])
    assert apply_directives({}, ["python", "train.py"]) == ({}, ["python", "train.py"])


@pytest.mark.parametrize("line, message", [
    ("#GQ --gpu 2", "train.sh:2: #GQ --gpu 2: no such option: --gpu"),
    ("#GQ --gpus", "train.sh:2: #GQ --gpus: --gpus needs a value"),
    ("#GQ -- python x", "only options go on a #GQ line"),
    ("#GQ --gpus 2 python", "only options go on a #GQ line, not 'python'"),
    ("#GQ --name 'unclosed", "No closing quotation"),
])
def test_bad_directives_name_the_line(tmp_path, line, message):
    script(tmp_path, f"#!/bin/sh\n{line}\ntrue\n")
    with pytest.raises(BadInput, match=message.replace("(", r"\(")):
        apply_directives({"cwd": str(tmp_path)}, ["train.sh"])


def test_gqfoo_is_not_a_directive(tmp_path):
    script(tmp_path, "#!/bin/sh\n#GQX --bogus\n#GQ\ntrue\n")
    assert apply_directives({"cwd": str(tmp_path)}, ["train.sh"])[0] == {"cwd": str(tmp_path)}


# ---- a real daemon ------------------------------------------------------------------------


def test_submit_a_script_with_directives(host):
    script(host.work)
    job_id = host.submit("-p", "normal", "train.sh", "--lr", "3")
    job = host.wait_ended(job_id)
    assert (job["gpus"], job["mem"], job["time_limit"], job["name"], job["priority"]) == (
        2, 20 << 30, 4 * 3600, "train", "normal")
    assert job["command"] == [str(host.work / "train.sh"), "--lr", "3"]
    assert host.log(job_id).strip() == "gpus=0,1 A=script B=script args=--lr 3"


def test_an_unknown_directive_is_one_line_exit_2_and_nothing_queued(host):
    script(host.work, "#!/bin/sh\n#GQ --gpus 1 --frobnicate\ntrue\n")
    proc = host.gq("submit", "train.sh", check=False)
    assert proc.returncode == 2
    assert proc.stderr == ("gq: train.sh:2: #GQ --gpus 1 --frobnicate: no such option: "
                           "--frobnicate (see gq submit --help)\n")
    assert host.count_jobs() == 0


def test_the_typer_command_reads_directives_too(tmp_path, monkeypatch):
    from gq.cli import app as app_module
    from gq.cli import client

    script(tmp_path, "#!/bin/sh\n#GQ --gpus 0 --array 0-2\necho $GQ_ARRAY_INDEX\n")
    seen = {}
    monkeypatch.setattr(client, "submit_job", lambda args: seen.update(args) or {"id": 1})
    monkeypatch.chdir(tmp_path)
    assert app_module.run(["submit", "--hold", "train.sh"]) == 0
    assert seen["gpus"] == 0 and seen["array"] == {"indices": [0, 1, 2], "limit": None}
    assert seen["hold"] is True and seen["command"] == [str(tmp_path / "train.sh")]
