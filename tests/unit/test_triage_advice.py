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
