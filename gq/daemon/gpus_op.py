"""`gpus`: each card, the jobs on it and what they hold, and its pool."""

from __future__ import annotations

from gq.daemon.context import Context
from gq.daemon.submission import Caller
from gq.daemon.views import gpu_json


def op_gpus(daemon: Context, caller: Caller, args: dict) -> list[dict]:
    holding = daemon.store.holding_jobs()
    hide = not daemon.authority.sees_all(caller)  # others' jobs: how much, not whose
    out = []
    pools = daemon.config.pools.for_cards([g.index for g in daemon.cards]).cards
    pool_of = {g.index: ",".join(sorted(n for n, cards in pools.items() if g.index in cards))
               or None for g in daemon.cards}  # a card may be in several pools
    freeze = daemon.freezing.cards_freeze_json()
    for card in daemon.cards:
        used = _held_by_jobs(daemon, card)
        on_card = [
            {"id": j.id, "user": j.user, "name": j.name, "mem": j.mem or card.memory_total,
             "whole_card": j.mem is None, "state": str(j.state),
             "used": None if used is None else used.get(j.id, 0)}
            if not (hide and j.uid != caller.uid) else
            {"id": None, "user": None, "name": None, "mem": j.mem or card.memory_total,
             "whole_card": j.mem is None, "state": str(j.state),
             "used": None if used is None else used.get(j.id, 0)}
            for j in holding
            if card.index in j.gpu_ids
        ]
        out.append(gpu_json(card, on_card, daemon.reading.external.get(card.index)))
        out[-1]["pool"] = pool_of.get(card.index)  # None: no pools configured
        out[-1]["freeze"] = freeze.get(card.index)  # whether its jobs can be frozen, why not
    return out


def _held_by_jobs(daemon: Context, card) -> dict[int, int | None] | None:
    """Bytes each job's processes hold on the card (None: the card's process list, or that
    job's memory on it, cannot be read). Only the process tree proves a job's memory."""
    if card.processes is None:
        return None
    used: dict[int, int | None] = {}
    for proc in card.processes:
        owner = daemon.reading.owners.get(proc.pid)
        if owner is None or not owner.alive or owner.by_environment or owner.job_id is None:
            continue
        before = used.get(owner.job_id, 0)
        used[owner.job_id] = (None if before is None or proc.used_memory is None
                              else before + proc.used_memory)
    return used
