"""Advice checked against what the job tried and the host (issue #39 item 4)."""

from __future__ import annotations

from gq.triage.advice import mem_hint, tried_bytes
from gq.triage.classify import suggest
from gq.triage.rules import GPU_OOM

G = 1 << 30
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 90.00 GiB. GPU 0 has a "
       "total capacity of 79.15 GiB of which 78.50 GiB is free.")


def test_a_job_that_tried_more_than_the_largest_card_is_told_the_truth():
    """It was told to resubmit with --mem 7.5G and --retry-oom 2 on an 80 GiB card."""
    text = suggest(GPU_OOM, 7, "7.5G", [OOM], largest_card=80 * G)
    assert "--mem 7.5G" not in text and "--retry-oom 2" not in text
    assert "allocate 90G at once" in text and "(80G)" in text and "larger card" in text and "sharding" in text and "--host" in text


def test_a_mem_hint_is_at_least_what_it_tried_and_at_most_a_card():
    assert tried_bytes([OOM]) == 90 * G
    assert tried_bytes(["RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB"]) \
        == 512 << 20
    assert mem_hint(5 * G, 12 * G, 80 * G) == 17 * G  # held 5, tried 12 more
    assert mem_hint(60 * G, 30 * G, 80 * G) == 80 * G  # never more than a card
    assert mem_hint(0, None, 80 * G) is None
    text = suggest(GPU_OOM, 7, "17G", ["... Tried to allocate 12.00 GiB ..."], 80 * G)
    assert "--mem 17G" in text


def test_a_mem_that_held_plus_tried_cannot_fit_a_card_is_no_advice():
    """Held 70G, tried 20 more on 80G cards: a --mem capped at a card would not fit either."""
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has "
           "a total capacity of 79.15 GiB of which 9.1 GiB is free. Including non-PyTorch "
           "memory, this process has 70.00 GiB memory in use.")
    offline = suggest(GPU_OOM, evidence=[oom], largest_card=80 * G)
    assert "held 70G and tried to allocate 20G more, 90G in all" in offline
    assert "e.g. --mem" not in offline
    # offline, with a card that holds it: a --mem of at least what it held and tried
    assert "e.g. --mem 105G" in suggest(GPU_OOM, evidence=[oom], largest_card=160 * G)
    assert "e.g. --mem 90G" in suggest(GPU_OOM, evidence=[oom], largest_card=90 * G)


def test_a_whole_card_job_that_filled_the_largest_card_gets_no_mem():
    text = suggest(GPU_OOM, 3, None, ["torch.OutOfMemoryError: CUDA out of memory."],
                   80 * G, held=79 * G, whole_card=True)
    assert "filled a whole card" in text and "e.g. --mem" not in text


def test_the_daemons_view_checks_its_advice_against_the_largest_card():
    from gq.daemon.views import failure_json
    from gq.model import Job

    job = Job(id=5, user="ann", command=["train"], cwd="/", mem=10 * G, gpus=1,
              failure=GPU_OOM, failure_evidence=["... Tried to allocate 20.00 GiB ..."])
    told = failure_json(job, 80 * G)["failure_suggestion"]
    assert "e.g. --mem 30G" in told  # what it held and tried, at most a card
    assert "more than the largest card here (16G)" in failure_json(job, 16 * G)[
        "failure_suggestion"]


def test_each_cause_gets_advice_that_fits_it():
    from gq.triage.classify import classify

    def advice(log: str) -> tuple[str, str]:
        found = classify(log)
        return found.failure, suggest(found.failure, 4, evidence=found.evidence)

    failure, text = advice("RuntimeError: Found no NVIDIA driver on your system. Please check "
                           "that you have an NVIDIA GPU and installed a driver\n")
    assert failure == "cuda_error" and "NVIDIA driver" in text and "nvidia-smi" in text
    failure, text = advice("gq: cannot enter /home/ann/run3: No such file or directory\n")
    assert failure == "import_env" and "--cwd DIR" in text and "activate" not in text
    failure, text = advice("RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. "
                           "DefaultCPUAllocator: not enough memory: you tried to allocate "
                           "1073741824 bytes.\n")
    assert failure == "host_oom" and "host memory (not card memory)" in text
    failure, text = advice("slurmstepd: error: *** JOB 81 ON gpu7 CANCELLED AT "
                           "2024-05-01T10:00:00 DUE TO TIME LIMIT ***\n")
    assert failure == "timeout_signal" and "time limit" in text and "--time" in text
    failure, text = advice("OSError: [Errno 122] Disk quota exceeded: '/home/ann/ckpt'\n")
    assert failure == "disk_full" and "quota" in text
    failure, text = advice("[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught "
                           "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)"
                           " ran for 600054 milliseconds before timing out.\n")
    assert failure == "nccl" and "timed out" in text
