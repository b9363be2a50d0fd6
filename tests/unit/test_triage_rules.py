"""The classifier's judgement where logs mislead: the first error printed is often not the
cause of death, and what the daemon saw outranks what the log says."""

from __future__ import annotations

from gq.triage.classify import EndFacts, classify, suggest
from gq.triage.rules import CLASSES


def test_an_oom_warning_above_an_nccl_abort_is_an_nccl_death():
    log = ("UserWarning: CUDA out of memory. Tried to allocate 2.00 GiB; retrying with a "
           "smaller batch\n"
           "[rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum=44, OpType=ALLREDUCE) ran for 1800772 milliseconds\n"
           "terminate called after throwing an instance of 'c10::DistBackendError'\n"
           "Aborted (core dumped)\n")
    got = classify(log)
    assert got.failure == "nccl"
    assert any("Watchdog caught" in line for line in got.evidence)


def test_a_deprecation_warning_above_a_segfault_is_a_segfault():
    log = ("/usr/lib/python3/site-packages/torch/nn/functional.py:718: DeprecationWarning: "
           "ValueError: this will be an error\n"
           "Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call "
           "first):\n  File \"train.py\", line 3 in <module>\n")
    assert classify(log).failure == "segfault"


def test_an_oom_on_one_rank_explains_the_timeouts_of_the_others():
    log = ("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB.\n"
           "[rank5]:[E ProcessGroupNCCL.cpp:563] [Rank 5] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=1) ran for 600037 milliseconds\n")
    assert classify(log).failure == "gpu_oom"


def test_facts_outrank_the_log():
    log = "ValueError: bad label\n"
    assert classify(log).failure == "data_error"
    assert classify(log, EndFacts(stopped_by="time_limit")).failure == "timeout_signal"
    kernel = "Out of memory: Killed process 4242 (python) total-vm:1kB, anon-rss:1kB"
    got = classify(log, EndFacts(kernel_oom=kernel))
    assert (got.failure, got.evidence) == ("host_oom", [kernel])


def test_a_signal_alone_says_enough():
    assert classify("", EndFacts(signal=11)).failure == "segfault"
    assert classify("epoch 3\n", EndFacts(exit_code=137)).failure == "host_oom"
    assert classify("", EndFacts(signal=15)).failure == "timeout_signal"
    assert classify("", EndFacts(exit_code=127)).failure == "import_env"
    assert classify("loss 0.3\n", EndFacts(exit_code=1)).failure == "unknown"


def test_a_shell_report_of_sigkill_after_a_traceback_is_still_a_kill():
    log = "Traceback (most recent call last):\nKeyError: 3\n"
    # the KeyError is printed; the SIGKILL ended it: a signal outranks an ordinary exception
    assert classify(log, EndFacts(signal=9)).failure == "host_oom"


def test_evidence_is_short_and_each_line_once():
    log = "\n".join(["x" * 1000 + " CUDA out of memory"] * 10)
    got = classify(log)
    assert len(got.evidence) == 1 and len(got.evidence[0]) <= 300


def test_every_class_has_a_suggestion_naming_what_to_run():
    for failure in CLASSES:
        text = suggest(failure, 17, "30G")
        assert "`gq " in text or "--" in text, failure
        assert "{" not in text


def test_gq_tops_job_screen_shows_the_failure_next_to_the_state():
    from gq.tui.job_screen import detail_rows

    job = {"state": "oom", "reason": "out of GPU memory", "priority": "normal", "user": "ann",
           "gpus": 1, "gpu_ids": [], "mem": 10 << 30, "cpus": 1, "command": ["train"],
           "failure": "gpu_oom", "failure_evidence": ["torch.OutOfMemoryError: CUDA out of "
                                                      "memory"],
           "failure_suggestion": suggest("gpu_oom", 4, "15G")}
    rows = dict(detail_rows(job, now=0.0))
    assert rows["failure"] == "gpu_oom: torch.OutOfMemoryError: CUDA out of memory"
    assert "--mem 15G" in rows["what to do"]
    assert [label for label, _ in detail_rows(job, 0.0)][:3] == ["state", "failure",
                                                                  "what to do"]
