"""The #SBATCH parser (gq/sbatch): block rules, every option and time form, verdicts."""

import pytest

from gq.sbatch.compat import SlurmCompat, parse_compat
from gq.sbatch.forms import gpu_request, slurm_mem, slurm_time
from gq.sbatch.options import understand

G = 1 << 30


def parse(*lines, **kw):
    return understand("job.sh", ["#!/bin/bash", *lines, "echo run"], **kw)


@pytest.mark.parametrize("text, seconds", [
    ("30", 1800), ("30:15", 1815), ("2:00:00", 7200), ("1-12", 129600),
    ("1-12:30", 131400), ("1-12:30:05", 131405), ("0", None), ("UNLIMITED", None),
    ("infinite", None), ("90", 5400),
])
def test_every_time_form(text, seconds):
    assert slurm_time(text) == seconds


@pytest.mark.parametrize("text", ["1h", "1:2:3:4", "x-1", "-5", ""])
def test_bad_times_are_refused(text):
    with pytest.raises(ValueError, match="MM:SS"):
        slurm_time(text)


@pytest.mark.parametrize("text, size", [
    ("16G", 16 * G), ("4000", 4000 << 20), ("512M", 512 << 20), ("1T", 1 << 40),
    ("0", None), ("32GB", 32 * G), ("1024K", 1 << 20),
])
def test_memory_sizes_bare_numbers_are_megabytes(text, size):
    assert slurm_mem(text) == size


@pytest.mark.parametrize("text, gres, out", [
    ("gpu:2", True, (None, 2)), ("gpu:a100:4", True, ("a100", 4)), ("gpu", True, (None, 1)),
    ("2", False, (None, 2)), ("a100:3", False, ("a100", 3)),
])
def test_gpu_requests(text, gres, out):
    assert gpu_request(text, gres) == out


def test_block_ends_at_the_first_command_and_double_hash_is_a_comment():
    u = understand("job.sh", ["#!/bin/bash", "", "# a comment", "##SBATCH -c 9",
                              "# SBATCH -c 8", "#SBATCH -c 2", "module load cuda",
                              "#SBATCH -c 7"])
    assert u.values["cpus"] == "2"
    assert [v.line for v in u.verdicts] == [6]


def test_equals_or_space_quotes_and_later_wins():
    u = parse('#SBATCH --job-name "my run"  # the name', "#SBATCH --time 10",
              "#SBATCH --time=20", "#SBATCH -c4")
    assert u.values["name"] == "my run"
    assert u.values["time"] == "1200s"
    assert u.values["cpus"] == "4"
    overridden = [v for v in u.verdicts if "overridden" in v.says]
    assert [v.line for v in overridden] == [3]


def test_unique_prefix_of_a_long_option():
    assert parse("#SBATCH --job=x").values["name"] == "x"


def test_no_gpu_unless_asked_or_the_lab_default():
    assert parse("#SBATCH -c 2").values["gpus"] == "0"
    assert parse("#SBATCH -c 2", compat=SlurmCompat(default_gpus=1)).values["gpus"] == "1"


@pytest.mark.parametrize("line, key, value", [
    ("#SBATCH -J train", "name", "train"),
    ("#SBATCH --cpus-per-task=7", "cpus", "7"),
    ("#SBATCH --mem=8G", "ram", "8G"),
    ("#SBATCH --mem=4000", "ram", "4000M"),
    ("#SBATCH --gres=gpu:2", "gpus", "2"),
    ("#SBATCH -G 3", "gpus", "3"),
    ("#SBATCH --gpus=a100:2", "gpus", "2"),
    ("#SBATCH --gpus-per-node=4", "gpus", "4"),
    ("#SBATCH --gpus-per-task=1", "gpus", "1"),
    ("#SBATCH -t 1-00:00:00", "time", "86400s"),
    ("#SBATCH -a 0-9%2", "array", "0-9%2"),
    ("#SBATCH -D /tmp", "cwd", "/tmp"),
    ("#SBATCH -d afterok:12:13", "afterok", ["12,13"]),
    ("#SBATCH --dependency=afterany:5,afternotok:6", "after", ["5"]),
    ("#SBATCH -d after:12:13", "afterstart", ["12,13"]),  # sbatch's after: the start
    ("#SBATCH --hold", "hold", True),
    ("#SBATCH --no-requeue", "no_preemptible", True),
    ("#SBATCH --signal=B:USR1@90", "signal", "SIGUSR1@90s"),
    ("#SBATCH --signal=USR1", "signal", "SIGUSR1@60s"),
])
def test_mapped_options(line, key, value):
    u = parse(line)
    assert u.values[key] == value
    assert not u.refusals, u.refusals


def test_memory_per_cpu_and_per_gpu_are_host_memory():
    assert parse("#SBATCH -c 4 --mem-per-cpu=2G").values["ram"] == "8G"
    u = parse("#SBATCH --gres=gpu:2 --mem-per-gpu=10G")
    assert u.values["ram"] == "20G"
    assert "mem" not in u.values  # never gq's GPU --mem
    assert parse("#SBATCH --mem=0").values.get("ram") is None


def test_signal_scope_batch_or_steps():
    assert parse("#SBATCH --signal=B:USR1@90").job["signal_scope"] == "batch"
    assert parse("#SBATCH --signal=USR1@90").job["signal_scope"] == "steps"


def test_output_error_and_export_are_kept_for_the_job():
    u = parse("#SBATCH -o %x-%j.out", "#SBATCH --export=NONE")
    assert u.job["output"] == "%x-%j.out" and "error" not in u.job
    assert u.job["export"] == "NONE"


def test_the_refusal_sentence():
    u = understand("job.sh", ["#!/bin/bash", "#SBATCH -c 2", "#SBATCH -J x",
                              "#SBATCH --nodes=2"])
    [refused] = u.refusals
    assert refused.sentence("job.sh") == (
        "job.sh line 4: #SBATCH --nodes=2: gq runs a job on one host; submit it to a Slurm "
        "peer (gq submit --host NAME) or remove the line")


@pytest.mark.parametrize("line", [
    "#SBATCH -N 2", "#SBATCH -n 4", "#SBATCH --ntasks-per-node=8", "#SBATCH --begin=now+1h",
    "#SBATCH -d singleton", "#SBATCH --frobnicate", "#SBATCH -c x",
    "#SBATCH --mem=1G --mem-per-cpu=1G", "#SBATCH --time=1h", "#SBATCH --wrap=hostname",
])
def test_refused_options_say_what_to_do(line):
    u = parse(line)
    assert u.refusals
    assert all(len(v.says) > 20 for v in u.refusals)


@pytest.mark.parametrize("line", [
    "#SBATCH -N 1", "#SBATCH -n 1", "#SBATCH --ntasks-per-node=1", "#SBATCH --nodes=1-1",
])
def test_one_node_one_task_is_fine(line):
    assert not parse(line).refusals and not parse(line).warnings


@pytest.mark.parametrize("line", [
    "#SBATCH --constraint=a100", "#SBATCH --exclusive", "#SBATCH -p nowhere",
    "#SBATCH -A lab", "#SBATCH -q whatever", "#SBATCH --gres=gpu:v100:1",
    "#SBATCH --mail-type=BEGIN", "#SBATCH -m block",
])
def test_cluster_tuning_is_warned(line):
    u = parse(line)
    assert u.warnings and not u.refusals


def test_partition_qos_and_account_through_the_lab_mapping():
    compat = parse_compat({"partitions": {"gpu": "default", "debug": "interactive"},
                           "qos": {"high": "high"}})
    u = parse("#SBATCH -p debug -q high", compat=compat)
    assert u.values["pool"] == "interactive" and u.values["priority"] == "high"
    assert "pool" not in parse("#SBATCH -p gpu", compat=compat).values
    assert not parse("#SBATCH -A vision", account="vision").warnings
    assert "account nlp" in parse("#SBATCH -A vision", account="nlp").warnings[0].says


def test_mail_goes_to_the_mail_user_or_the_submitter():
    assert parse("#SBATCH --mail-type=END,FAIL --mail-user=bo", user="al").values["mail"] == "bo"
    assert parse("#SBATCH --mail-type=ALL", user="al").values["mail"] == "al"


def test_bad_compat_tables_are_refused():
    for table in ({"qos": {"x": "urgent"}}, {"default_gpus": -1}, {"partition": {}}):
        with pytest.raises(ValueError):
            parse_compat(table)


def test_a_script_without_sbatch_lines_has_no_block():
    assert not understand("job.sh", ["#!/bin/sh", "#GQ -g 1", "echo"]).has_block


def test_output_patterns():
    from gq.sbatch.patterns import NO_INDEX, expand

    args = dict(job_id=12, array_id=10, index=2, name="tr", user="al", node="ws1")
    assert expand("%x-%j.out", **args) == "tr-12.out"
    assert expand("%A_%4a_%J_%u@%N %% %5j", **args) == "10_0002_12_al@ws1 % 00012"
    assert expand("%A-%a", **{**args, "array_id": None, "index": None}) == f"12-{NO_INDEX}"
