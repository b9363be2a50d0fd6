"""Time limits with a warning signal, and out-of-memory deaths recognised and retried."""

from __future__ import annotations

import sys

from tests.support.hosts import wait_for

G = 1 << 30
CLOCK = 0.05  # the job's and the daemon's readings of the time of day, a moment apart
# Says when each signal arrives (the time of day), and does not stop on SIGTERM.
SIGNAL_LOGGER = ["--", sys.executable, "-c", """
import signal, time
def log(signum, frame):
    print(signal.Signals(signum).name, time.time(), flush=True)
for sig in (signal.SIGUSR1, signal.SIGTERM):
    signal.signal(sig, log)
print('ready', flush=True)
while True:
    time.sleep(1)
"""]


def oom_unless_mem_at_least(gib: int) -> list[str]:
    """Dies the way PyTorch does unless GQ_GPU_MEM is at least `gib`."""
    return ["--", "sh", "-c",
            f'echo "mem $GQ_GPU_MEM"; if [ "$GQ_GPU_MEM" -lt {gib * G} ]; then '
            'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; '
            'exit 1; fi']


def test_time_limit_signal_before_then_term_grace_kill(host):
    job = host.submit("--time", "4s", "--signal", "USR1@2s", "--grace", "2s", *SIGNAL_LOGGER)
    ended = host.wait_ended(job, timeout=30)
    assert ended["state"] == "timeout" and ended["reason"] == "time limit 4s reached"
    assert ended["exit_code"] == 137  # it ignored SIGTERM: SIGKILL after the grace
    got = [line.split() for line in host.log(job).splitlines()[1:]]
    assert [name for name, _ in got] == ["SIGUSR1", "SIGTERM"]
    timeline = host.job(job)["events"]
    # From the start the daemon recorded, which the limit counts from (the job's own clock
    # starts later, by however long its interpreter took): each signal no earlier than asked,
    # USR1 well before the limit. How late a loaded machine lets them be is not checked.
    (started,) = [e["at"] for e in timeline if e["new_state"] == "running"]
    usr1, term = (float(at) - started for _, at in got)
    assert usr1 >= 2 - CLOCK and term >= 4 - CLOCK and term - usr1 >= 1
    (stopped,) = [e["at"] for e in timeline if e["new_state"] == "timeout" and
                  e["old_state"] == "running"]
    (gone,) = [e["at"] for e in timeline if e["detail"] == "stopped (exit code 137)"]
    assert gone - stopped >= 1.9


def test_a_cuda_oom_ends_as_oom_and_other_failures_do_not(host):
    oom = host.submit("--", "sh", "-c", "echo 'RuntimeError: CUDA error: out of memory' >&2; "
                      "exit 1")
    assert (ended := host.wait_ended(oom))["state"] == "oom"
    assert ended["reason"] == "out of GPU memory" and ended["exit_code"] == 1
    assert host.job(oom)["events"][-1]["detail"] == "RuntimeError: CUDA error: out of memory"
    plain = host.submit("--", "sh", "-c", "echo 'MemoryError' >&2; exit 1")
    assert host.wait_ended(plain)["state"] == "failed"
    # An earlier run's message in the same log does not make a later failure an OOM.
    host.gq("requeue", str(plain))
    assert host.wait_ended(plain)["state"] == "failed"
    host.gq("requeue", str(oom))
    assert host.wait_ended(oom)["state"] == "oom"
    again = host.submit("--", "sh", "-c", '[ "$GQ_RESTART_COUNT" = 0 ] && '
                        "echo 'CUBLAS_STATUS_ALLOC_FAILED' >&2; exit 3")
    assert host.wait_ended(again)["state"] == "oom"
    host.gq("requeue", str(again))
    assert (host.wait_ended(again)["state"], host.job(again)["restarts"]) == ("failed", 1)


def test_retry_oom_grows_the_memory_until_it_fits_or_the_retries_run_out(host):
    fits = host.submit("--mem", "20G", "--retry-oom", "2", *oom_unless_mem_at_least(40))
    short = host.submit("--mem", "20G", "--retry-oom", "1", *oom_unless_mem_at_least(40))
    whole = host.submit("--mem", "60G", "--retry-oom", "1", *oom_unless_mem_at_least(80))
    done = host.wait_ended(fits)
    assert (done["state"], done["mem"], done["restarts"], done["oom_retries"]) == (
        "completed", 45 * G, 2, 2)
    assert host.log(fits).split() == ["mem", str(20 * G), "mem", str(30 * G), "mem",
                                      str(45 * G)]
    details = [e["detail"] for e in host.job(fits)["events"] if e["old_state"] == "oom"]
    assert details == ["retry 1 of 2 (--retry-oom) with --mem 30G",
                       "retry 2 of 2 (--retry-oom) with --mem 45G"]
    out_of_retries = host.wait_ended(short)
    assert (out_of_retries["state"], out_of_retries["mem"]) == ("oom", 30 * G)
    became_whole = host.wait_ended(whole)  # 90G is more than a card: the whole card
    assert (became_whole["state"], became_whole["mem"]) == ("completed", None)
    assert host.log(whole).split()[-1] == str(80 * G)


def test_the_oom_reason_gives_the_measured_peak(host):
    gate = host.work / "gate"
    job = host.submit("--mem", "20G", "--", "sh", "-c",
                      f"{sys.executable} -m gq.sim.burn --mem 12G & "
                      f'while [ ! -e "{gate}" ]; do sleep 0.05; done; kill $!; wait; '
                      "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory.' >&2; exit 1")
    wait_for(lambda: (host.job(job)["peak_mem"] or 0) >= 12 * G, what="the peak to be seen")
    gate.touch()
    ended = host.wait_ended(job)
    assert (ended["state"], ended["reason"]) == ("oom", "out of GPU memory, peak 12G "
                                                        "(--mem 20G)")


# Saves on USR1 and exits 138 (128 + SIGUSR1), as a trainer's signal handler often does.
SAVES_AND_EXITS = ["--", sys.executable, "-c", """
import os, signal, sys, time
def save(signum, frame):
    open(os.path.join(os.environ['GQ_CHECKPOINT_DIR'], 'step'), 'w').write('7')
    sys.exit(138)
signal.signal(signal.SIGUSR1, save)
print('restart', os.environ['GQ_RESTART_COUNT'], flush=True)
if os.environ['GQ_RESTART_COUNT'] != '0':
    sys.exit(0)
while True:
    time.sleep(1)
"""]


def test_an_exit_after_the_time_limit_signal_reads_as_timeout_with_the_way_on(host):
    job = host.submit("--time", "1m", "--signal", "USR1@59s", *SAVES_AND_EXITS)
    ended = host.wait_ended(job, timeout=30)
    assert (ended["state"], ended["exit_code"]) == ("timeout", 138)
    assert ended["reason"] == (f"it ended after its time-limit signal SIGUSR1, 59s before the "
                               f"limit; if it saved a checkpoint, `gq requeue {job}` continues it")
    why = host.gq("why", str(job)).stdout
    assert why.startswith(f"Job {job} ended as timeout with exit code 138 (it ended after its "
                          "time-limit signal SIGUSR1")
    host.gq("requeue", str(job))
    assert host.wait_ended(job, timeout=30)["state"] == "completed"
    assert host.log(job).split() == ["restart", "0", "restart", "1"]
