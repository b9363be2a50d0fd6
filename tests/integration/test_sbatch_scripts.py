"""`gq submit SCRIPT` with #SBATCH lines, on a real daemon: resources, names, arrays and
SLURM_* variables; refusals and --dry-run queue nothing."""

from __future__ import annotations

JOB = """#!/bin/bash
#SBATCH -c 2
#SBATCH --mem=1G --time=10:00
#SBATCH --gres=gpu:1
#SBATCH -J sb -o %x-%j.out
#SBATCH --array=0-3%2
echo "task=$SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID count=$SLURM_ARRAY_TASK_COUNT \\
id=$SLURM_JOB_ID cpus=$SLURM_CPUS_PER_TASK gpus=$SLURM_GPUS_ON_NODE ntasks=$SLURM_NTASKS"
"""


def write(host, text: str, name: str = "job.sh") -> None:
    path = host.work / name
    path.write_text(text)
    path.chmod(0o755)


def test_an_sbatch_script_gets_its_resources_array_and_slurm_variables(host):
    write(host, JOB)
    first = host.submit("job.sh")
    jobs = [host.wait_ended(first + i) for i in range(4)]
    for i, job in enumerate(jobs):
        assert (job["cpus"], job["ram"], job["time_limit"], job["gpus"], job["name"]) == (
            2, 1 << 30, 600, 1, "sb")
        assert (host.work / f"sb-{first + i}.out").read_text().strip() == (
            f"task={i} of {first} count=4 id={first + i} cpus=2 gpus=1 ntasks=1")


def test_a_script_that_asks_no_gpu_gets_none_and_a_plain_one_no_slurm_names(host):
    write(host, "#!/bin/sh\n#SBATCH -J cpu\necho \"[$CUDA_VISIBLE_DEVICES] $SLURM_JOB_NAME\"\n")
    job = host.wait_ended(host.submit("job.sh"))
    assert job["gpus"] == 0 and host.log(job["id"]).strip() == "[] cpu"
    write(host, "#!/bin/sh\n#GQ --gpus 0\necho \"[${SLURM_JOB_ID-unset}]\"\n", "plain.sh")
    job = host.wait_ended(host.submit("plain.sh"))
    assert host.log(job["id"]).strip() == "[unset]"


def test_the_command_line_wins_over_gq_lines_over_sbatch_lines(host):
    write(host, "#!/bin/sh\n#SBATCH -c 3 -J a --time=5\n#GQ -n b --cpus 2\ntrue\n")
    job = host.wait_ended(host.submit("-c", "1", "job.sh"))
    assert (job["cpus"], job["name"], job["time_limit"]) == (1, "b", 300)


def test_more_nodes_are_refused_in_one_line_with_nothing_queued(host):
    write(host, "#!/bin/bash\n#SBATCH -c 1\n#SBATCH -J x\n#SBATCH --nodes=2\necho\n")
    proc = host.gq("submit", "job.sh", check=False)
    assert proc.returncode == 2
    assert proc.stderr == ("gq: job.sh line 4: #SBATCH --nodes=2: gq runs a job on one host; "
                           "submit it to a Slurm peer (gq submit --host NAME) or remove the "
                           "line\n")
    # let through for a peer by the CLI, refused by the daemon for any host not a Slurm peer
    anywhere = host.gq("submit", "--host", "any", "job.sh", check=False)
    assert (anywhere.returncode, anywhere.stderr) == (2, proc.stderr)
    assert host.count_jobs() == 0


def test_dry_run_says_each_option_and_queues_nothing(host):
    write(host, "#!/bin/bash\n#SBATCH -c 2 --constraint=a100\n#SBATCH -t 1-0\n"
                "#SBATCH -d afterok:12:13 --signal=USR1@30\necho\n")
    proc = host.gq("submit", "--dry-run", "job.sh")
    # dependencies as ids, the signal with its lead: what gq would queue, as typed
    assert " signal_before=30s " in proc.stdout and " afterok=12,13 " in proc.stdout
    assert "job.sh line 2: #SBATCH -c 2: 2 CPU cores (gq -c 2)  [mapped]" in proc.stdout
    assert "#SBATCH --constraint=a100: only tunes a Slurm cluster" in proc.stdout
    assert "asks for no GPU" in proc.stdout and "nothing queued" in proc.stdout
    assert host.count_jobs() == 0


def test_srun_with_one_task_runs_in_place_and_more_tasks_fail_in_one_line(host):
    write(host, "#!/bin/bash\n#SBATCH -J s\nsrun -n 1 --label python3 -c 'print(6 * 7)'\n"
                "srun -N 2 true || echo refused\n")
    job = host.wait_ended(host.submit("job.sh"))
    assert host.log(job["id"]).strip().splitlines() == ["42", "refused"]
    assert host.log(job["id"], err=True).strip() == (
        "srun (gq): -N 2: gq runs one task on one host; start more processes from the script "
        "(torchrun, mpirun) or submit it to a Slurm peer")


def test_output_patterns_name_each_elements_file_with_stderr_in_it(host):
    write(host, "#!/bin/bash\n#SBATCH -J pat -o logs-%x-%A_%2a.txt\n#SBATCH --array=0-1\n"
                "echo out $SLURM_ARRAY_TASK_ID; echo err >&2\n")
    first = host.submit("job.sh")
    for i in range(2):
        host.wait_ended(first + i)
        path = host.work / f"logs-pat-{first}_0{i}.txt"
        assert sorted(path.read_text().split("\n")) == ["", "err", f"out {i}"]
        assert f"out {i}" in host.gq("logs", str(first + i)).stdout  # gq logs reads it


def test_an_output_path_that_is_a_fifo_fails_the_start_without_blocking(host):
    import os

    os.mkfifo(host.work / "trap.out")
    write(host, "#!/bin/sh\n#SBATCH -o trap.out\necho hi\n")
    job = host.wait_ended(host.submit("job.sh"))
    assert job["state"] == "failed"


def test_a_signal_without_b_reaches_the_scripts_steps_and_not_its_shell(host):
    # sbatch's --signal without B: goes to the steps; the batch shell must not get it (a
    # shell waiting on its step would not run its trap until the step ends)
    write(host, "#!/bin/bash\n#SBATCH -t 1 --signal=USR1@58\n"
                "trap 'echo shell signalled' USR1\n"
                "python3 -c 'import signal, sys, time\n"
                "signal.signal(signal.SIGUSR1, lambda *a: (print(\"step signalled\"), "
                "sys.exit(0)))\n"
                "while True: time.sleep(0.05)'\n"
                "echo shell done\n")
    job = host.wait_ended(host.submit("job.sh"), timeout=40)
    assert host.log(job["id"]) == "step signalled\nshell done\n"
