"""A process's claim on simulated cards: the cards its CUDA_VISIBLE_DEVICES names, and whether
they have the room, as the driver would answer. Checked by `gq burn` itself where it may write
the simulator's files (a daemon of one's own), and by a system daemon for every user's burn
(`sim_register`, gq/daemon/sim_register.py), whose files are root's."""

from __future__ import annotations

from pathlib import Path

from gq.model import Gpu


def choose_cards(cards: list[Gpu], visible: str | None) -> list[Gpu]:
    """The cards named by a CUDA_VISIBLE_DEVICES value (indices or uuids), in its order; a
    ValueError says in one line what is wrong with it."""
    if visible is None:
        raise ValueError("CUDA_VISIBLE_DEVICES is not set; set it to the cards to use, e.g. 0")
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if not entries:
        raise ValueError("no CUDA-capable device is visible (CUDA_VISIBLE_DEVICES is empty)")
    by_id = {c.visible_id: c for c in cards} | {c.uuid.lower(): c for c in cards}
    chosen: list[Gpu] = []
    for entry in entries:
        card = by_id.get(entry.lower())
        if card is None:
            known = ", ".join(c.visible_id for c in cards) or "none"
            raise ValueError(f"CUDA_VISIBLE_DEVICES entry {entry[:64]!r} is not a simulated "
                             f"card (cards: {known}, or their GPU-... uuids)")
        if card not in chosen:
            chosen.append(card)
    return chosen


def out_of_memory(state_dir: Path, cards: list[Gpu], mem: int) -> str | None:
    """PyTorch's message for the first card without `mem` free, or None when all have room.
    Called under the simulator's registration lock."""
    from gq.gpu.sim import held_memory, memory_held_per_card

    held = memory_held_per_card(held_memory(state_dir))
    for ordinal, card in enumerate(cards):
        free = max(0, card.memory_total - held.get(card.uuid, 0))
        if mem > free:
            # The ordinal is the device number inside this process, as torch numbers them.
            return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                    f"{gib(mem)}. GPU {ordinal} has a total capacity of "
                    f"{gib(card.memory_total)} of which {gib(free)} is free.")
    return None


def gib(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.2f} MiB"
