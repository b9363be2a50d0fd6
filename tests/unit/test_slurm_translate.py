"""The Slurm peer's pure parts, from literals: a submit request -> sbatch, and Slurm's states
and reasons -> gq's."""

from __future__ import annotations

import pytest

from gq.protocol import BadInput
from gq.slurm.nodes import card_count, gres_gpus, parse
from gq.slurm.poller import gpus_of, job_from_row, parse_row, seconds
from gq.slurm.states import exit_code, gq_reason, gq_state, in_words
from gq.slurm.translate import SlurmTarget, sbatch

TARGET = SlurmTarget("hpc", "gpu", "lab", {"high": "urgent"})
BASE = {"command": ["python", "train.py", "--lr", "1e-3"], "cwd": "/data/run",
        "env": {"WANDB_MODE": "offline", "PATH": "/home/me/bin", "GQ_HOME": "/x"}}


def test_a_full_request_becomes_sbatch_options():
    batch = sbatch({**BASE, "gpus": 2, "cpus": 8, "ram": 32 * 2**30, "time_limit": 5400,
                    "priority": "high", "preemptible": True, "signal": "SIGUSR1",
                    "signal_before": 300, "afterok": ["12", "13"], "after": ["9"],
                    "hold": True, "name": "train", "idempotency_key": "k1"}, TARGET)
    assert batch.argv == [
        "sbatch", "--parsable", "--chdir=/data/run", "--output=/data/run/slurm-%j.out",
        "--error=/data/run/slurm-%j.err", "--export=ALL", "--job-name=train",
        "--partition=gpu", "--account=lab", "--gres=gpu:2", "--cpus-per-task=8",
        "--mem=32768M", "--time=0-01:30:00", "--qos=urgent", "--requeue",
        "--signal=B:USR1@300", "--dependency=afterany:9,afterok:12:13", "--hold",
        "--comment=gq:k1"]
    assert batch.notes == []


def test_the_script_sets_gq_variables_and_runs_the_command_in_place():
    script = sbatch({**BASE, "umask": 0o027}, TARGET).script
    assert "umask 027\n" in script
    assert "export WANDB_MODE=offline\n" in script
    assert "PATH=" not in script and "GQ_HOME" not in script  # the node's own
    assert 'export GQ_JOB_ID="hpc:$SLURM_JOB_ID"\n' in script
    assert 'GQ_RESTART_COUNT="${SLURM_RESTART_COUNT:-0}"' in script
    assert script.endswith("exec python train.py --lr 1e-3\n")


def test_defaults_low_tier_and_loose_mappings():
    assert "--gres=gpu:1" in sbatch(BASE, TARGET).argv  # gq's default: one GPU
    assert not any(a.startswith("--gres") for a in sbatch({**BASE, "gpus": 0}, TARGET).argv)
    low = sbatch({**BASE, "priority": "low"}, SlurmTarget("hpc")).argv
    assert "--nice=1000" in low and "--requeue" in low
    loose = sbatch({**BASE, "priority": "high", "signal": "SIGUSR1", "grace": 5},
                   SlurmTarget("hpc"))
    assert "--no-requeue" in loose.argv
    assert [n.split(":")[0] for n in loose.notes] == ["hpc", "--signal USR1 without @DUR",
                                                      "--grace 5s"]


@pytest.mark.parametrize("limit, expected", [(1, "0-00:01:00"), (61, "0-00:02:00"),
                                             (86400 + 3600, "1-01:00:00")])
def test_time_limits_round_up_to_slurms_minutes(limit, expected):
    assert f"--time={expected}" in sbatch({**BASE, "time_limit": limit}, TARGET).argv


@pytest.mark.parametrize("extra, words", [
    ({"mem": 20 * 2**30}, "--mem 20G: --host hpc (a Slurm peer) gives whole GPUs"),
    ({"mem": "auto"}, "--mem auto:"),
    ({"array": {"start": 0}}, "--array/--sweep"),
    ({"retry_oom": 2}, "--retry-oom"),
    ({"notify": "echo"}, "--notify"),
    ({"preempt_mode": "freeze"}, "--preempt-mode freeze: --host hpc (a Slurm peer) preempts"),
    ({"cwd": "rel"}, "--cwd 'rel': a Slurm job needs an absolute directory"),
    ({"afterok": ["gpu2:3"]}, "--afterok gpu2:3"),
    ({"signal_before": 60, "signal": "SIGUSR1"}, "--signal USR1@1m00s: needs --time"),
])
def test_what_cannot_be_translated_is_refused_in_one_line(extra, words):
    with pytest.raises(BadInput) as e:
        sbatch({**BASE, **extra}, TARGET)
    assert e.value.message.startswith(words) and "\n" not in e.value.message


@pytest.mark.parametrize("state, reason, gq, shown", [
    ("PENDING", "Priority", "pending", "Priority"),
    ("PENDING", "Resources", "pending", "Resources"),
    ("PENDING", "None", "pending", "Priority"),
    ("PENDING", "JobHeldUser", "held", "Held"),
    ("PENDING", "JobHeldAdmin", "held", "Held"),
    ("PENDING", "Dependency", "pending", "Dependency"),
    ("PENDING", "DependencyNeverSatisfied", "pending", "DependencyNeverSatisfied"),
    ("PENDING", "QOSMaxGRESPerUser", "pending", "QOSMaxGRESPerUser"),
    ("PENDING", "AssocGrpGRESRunMinutes", "pending", "AssocGrpGRESRunMinutes"),
    ("PENDING", "QOSMaxJobsPerUserLimit", "pending", "QuotaLimit"),
    ("REQUEUE_HOLD", "JobHeldAdmin", "held", "Held"),
    ("CONFIGURING", "None", "running", None),
    ("RUNNING", "None", "running", None),
    ("COMPLETING", "None", "running", None),
    ("SIGNALING", "None", "preempting", "None"),
    ("COMPLETED", "None", "completed", None),
    ("FAILED", "NonZeroExitCode", "failed", "NonZeroExitCode"),
    ("CANCELLED+", "None", "cancelled", "None"),
    ("TIMEOUT", "TimeLimit", "timeout", "TimeLimit"),
    ("OUT_OF_MEMORY", "OutOfMemory", "oom", "OutOfMemory"),
    ("NODE_FAIL", "NodeDown", "lost", "NodeDown"),
    ("PREEMPTED", "None", "cancelled", "None"),
])
def test_slurm_states_and_reasons_map_onto_gqs(state, reason, gq, shown):
    assert gq_state(state, reason) == gq
    got = gq_reason(gq, reason)
    assert got == (None if shown == "None" else shown)


def test_why_in_words():
    assert in_words("pending", "Resources", "2026-01-01T10:00:00Z") == (
        "pending in Slurm: it waits in Slurm for the resources it asks for to become free; "
        "Slurm expects it to start at 2026-01-01T10:00:00Z")
    assert "squeue(1)" in in_words("pending", "SomethingNew")
    assert in_words("completed", "None") == "completed in Slurm"


@pytest.mark.parametrize("status, code", [("0", 0), ("768", 3), ("9", 137), ("0:0", 0),
                                          ("2:0", 2), ("0:15", 143), ("N/A", None)])
def test_exit_codes(status, code):
    assert exit_code(status) == code


def test_squeue_rows():
    row = parse_row("12|PENDING|Resources|0|2026-01-01T10:00:00|N/A|N/A|1:00:00|4|0|0|"
                    "(null)||gres/gpu:2|me|gpu|/d/slurm-%j.out|/d/slurm-%j.err|/d|gq:k|my|job|")
    assert row["JobID"] == "12" and row["Name"] == "my|job"
    job = job_from_row(row, {"command": ["python", "x.py"]})
    assert (job["account"], job["slurm"]["nodes"], job["command"]) == (None, None,
                                                                      ["python", "x.py"])
    assert gpus_of(row["tres-per-node"]) == 2 and gpus_of("gres:gpu:a100:3") == 3
    assert gpus_of("N/A") == 0
    assert (seconds("1:00:00"), seconds("2-00:00:00"), seconds("30"), seconds("UNLIMITED")) \
        == (3600.0, 172800.0, 1800.0, None)


@pytest.mark.parametrize("gres, gpus", [
    ("gpu:2", (2, [])), ("gpu:a100:4(S:0-1)", (4, ["a100"])), ("(null)", (0, [])),
    ("gpu:a100:1(IDX:0,2),gpu:v100:2(IDX:N/A),shard:8", (3, ["a100", "v100"])),
    ("gpu:(null):0(IDX:N/A)", (0, [])),
])
def test_gres_of_sinfo(gres, gpus):
    assert gres_gpus(gres) == gpus


def test_sinfo_rows_are_gpu_nodes_once_each():
    nodes = parse("n1|mixed|gpu*|8/56/0/64|gpu:a100:4(S:0-1)|gpu:a100:3(IDX:0-2)|\n"
                  "n1|mixed|long|8/56/0/64|gpu:a100:4(S:0-1)|gpu:a100:3(IDX:0-2)|\n"
                  "c1|idle|cpu|0/64/0/64|(null)|gpu:0|\n"
                  "n2|drained|gpu*|0/0/64/64|gpu:v100:2|gpu:v100:0(IDX:N/A)|\n")
    assert [(n["node"], n["state"], n["partitions"], n["gpus_used"], n["gpus"], n["cpus_used"])
            for n in nodes] == [("n1", "mixed", ["gpu", "long"], 3, 4, 8),
                                ("n2", "drained", ["gpu"], 0, 2, 0)]
    assert card_count(nodes) == (6, ["a100", "v100"])


BLOCK = ["#SBATCH -c 7 --gres=gpu:2", "#SBATCH -t 1:00:00 -J author", "#SBATCH -o %x-%j.out",
         "#SBATCH --nodes=2 --constraint=a100", "#SBATCH --requeue --signal=USR1@90"]
# What gq's #SBATCH parser made of BLOCK, merged into the request as the CLI sends it.
FROM_BLOCK = {"gpus": 2, "cpus": 7, "time_limit": 3600, "name": "author", "preemptible": True,
              "signal": "SIGUSR1", "signal_before": 90}


def test_a_scripts_sbatch_block_goes_as_written_and_only_gqs_command_line_is_added():
    sent = {**BASE, **FROM_BLOCK, "idempotency_key": "k",
            "sbatch_script": {"block": BLOCK, "given": []}}
    batch = sbatch(sent, TARGET)
    # nothing that would override the author's lines: not the parser's reading of them, nor
    # gq's own -o/-e or requeue defaults; the peer's partition and account where it has none
    assert batch.argv == ["sbatch", "--parsable", "--chdir=/data/run", "--export=ALL",
                          "--partition=gpu", "--account=lab", "--comment=gq:k"]
    head = batch.script.splitlines()
    assert head[0] == "#!/bin/bash" and head[1:6] == BLOCK  # before any command: sbatch reads it
    assert batch.script.endswith("exec python train.py --lr 1e-3\n")


def test_what_is_set_on_gqs_command_line_wins_over_the_authors_block():
    given = {**BASE, **FROM_BLOCK, "time_limit": 600, "gpus": 1, "priority": "high",
             "sbatch_script": {"block": BLOCK, "given": ["time_limit", "gpus", "priority"]}}
    argv = sbatch(given, TARGET).argv
    assert {"--time=0-00:10:00", "--gres=gpu:1", "--qos=urgent"} <= set(argv)
    assert not any(a.startswith(("--cpus-per-task", "--signal", "--job-name", "--output"))
                   for a in argv)


@pytest.mark.parametrize("block", [["#SBATCH -c 1\nrm -rf ~"], ["echo hi"], ["#SBATCH\r-c 1"],
                                   "#SBATCH -c 1", [3]])
def test_a_block_that_is_not_sbatch_lines_is_refused(block):
    with pytest.raises(BadInput, match="sbatch_script"):
        sbatch({**BASE, "sbatch_script": {"block": block, "given": []}}, TARGET)
