"""A job's states by name, in their groups, as the protocol spells them: plain strings and no
imports, for the commands that must not load gq/model.py (dataclasses: ~10 ms a command).
gq/model.py builds its JobState groups from these, so that there is one list."""

WAITING = frozenset({"pending", "held"})
RUNNING = frozenset({"running", "preempting"})  # holding cards
FROZEN = frozenset({"frozen"})  # its GPU state in host memory, its process alive and stopped
# Shown, not stored: decided cancelled or timed out, its run not gone yet (its cards held).
STOPPING = frozenset({"stopping"})
ACTIVE = WAITING | RUNNING | FROZEN | STOPPING
# Every state, in the order a listing groups them: what runs, what waits, how it ended.
ORDER = ("running", "preempting", "stopping", "frozen", "pending", "held", "completed", "failed",
         "cancelled", "timeout", "oom", "lost")
ENDED = frozenset(ORDER) - ACTIVE
