"""`sim_register`: a process of any user registers on a system daemon's simulated cards.

The simulator's files are root's (`/var/lib/gq/sim`): no user may write them, or one could
claim another's memory, or free it. So a burn in a system daemon's job (gq/sim/burn.py) asks the
daemon instead. Which process registers is the kernel's word, the socket's peer credentials,
never the request's: a user can register their own process only, on cards that exist, with room
on them (checked and written under the simulator's registration lock, as a burn of a daemon of
one's own does it), at most MAX_PER_USER at a time. The record is removed once that process is
gone (SimBackend.read), unless it leaks on purpose (`--leak`: zombie memory, counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gq.daemon.submission import Caller
from gq.protocol import BadInput, GqError

if TYPE_CHECKING:
    from gq.daemon.context import Context

MAX_PER_USER = 64  # records of one uid, leaked ones included


def op_sim_register(daemon: Context, caller: Caller, args: dict) -> dict:
    from gq.gpu.sim import (
        SimBackend, SimProc, held_memory, load_cards, process_create_time, registration_lock,
        write_proc,
    )
    from gq.gpu.sim_claims import choose_cards, out_of_memory

    backend = daemon.backend
    if not isinstance(backend, SimBackend):
        raise BadInput("this daemon's cards are not simulated: there is nothing to register on")
    visible, mem, util, leak = _checked(args)
    created = process_create_time(caller.pid) if caller.pid > 0 else None
    if created is None or created < 0:
        raise GqError("the registering process is gone (or not known to this daemon)")
    state_dir = backend.state_dir
    with registration_lock(state_dir):
        try:
            cards = choose_cards(load_cards(state_dir), visible)
        except ValueError as e:
            raise BadInput(str(e)) from None
        held = held_memory(state_dir)
        if sum(1 for h in held if h.proc.uid == caller.uid) >= MAX_PER_USER:
            raise GqError(f"{caller.user} has {MAX_PER_USER} processes on the simulated cards "
                          "already, as many as one user may")
        oom = out_of_memory(state_dir, cards, mem)
        if oom:
            return {"oom": oom}
        write_proc(state_dir, SimProc(pid=caller.pid, create_time=created,
                                      cards=[c.uuid for c in cards], mem=mem, util=util,
                                      leak=leak, uid=caller.uid))
    return {"pid": caller.pid, "create_time": created,
            "cards": [{"index": c.index, "uuid": c.uuid} for c in cards]}


def _checked(args: dict) -> tuple[str | None, int, int, bool]:
    visible, mem, util, leak = (args.get("visible"), args.get("mem"), args.get("util", 100),
                                args.get("leak", False))
    if visible is not None and (not isinstance(visible, str) or len(visible) > 4096):
        raise BadInput("visible: expected the CUDA_VISIBLE_DEVICES text")
    if isinstance(mem, bool) or not isinstance(mem, int) or not 0 <= mem < 1 << 60:
        raise BadInput("mem: expected bytes, 0 or more")
    if isinstance(util, bool) or not isinstance(util, int) or not 0 <= util <= 100:
        raise BadInput("util: expected a percentage from 0 to 100")
    if not isinstance(leak, bool):
        raise BadInput("leak: expected true or false")
    return visible, mem, util, leak
