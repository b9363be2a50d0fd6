"""`--host any`: when each host would start a job, and which host gets it.

Each daemon answers for itself (the `estimate` operation) by running the pure policy on its
queue as it is plus the job, without queuing it: the same `decide` as its scheduling pass, so
an array's `%N` limit holds back the same elements. An array is estimated with its elements
(the first ESTIMATED_ELEMENTS of them): its wait is its first element's, and `starting` says how
many would start at once. The host where the job starts soonest wins, then the one that starts
more elements at once, then the fullest fitting cards, as placement does on one host, then this
host."""

from __future__ import annotations

import asyncio
from typing import Any

from dataclasses import replace

from gq.daemon.arrays import elements
from gq.daemon.context import Context
from gq.daemon.lookup import host_limits, resolve_id
from gq.daemon.submission import build_job
from gq.model import ArrayPart
from gq.policy import decide
from gq.policy.placement import Capacity
from gq.protocol import BadInput, GqError
from gq.remote.spec import Unreachable

HYPOTHETICAL = -1  # the id of the job being estimated (an array's elements: -1, -2, ...)
ESTIMATED_ELEMENTS = 256  # of an array; a pass costs time per job
LOCAL = ""  # this host, among the candidates


def estimate(daemon: Context, caller, args: dict[str, Any]) -> dict[str, Any]:
    """{"error": why this host cannot take the job} or {"wait": seconds until it would start
    here (None: later than the reservations reach), "leftover": free card memory its cards
    would keep}. Dependencies name jobs of this host, as they would in a submit."""

    now = daemon.clock()
    try:
        job = build_job(args, caller, host_limits(daemon),
                        lambda t, f: resolve_id(daemon, caller, t, f), now)
    except BadInput as e:
        return {"error": e.message}
    job.id = HYPOTHETICAL
    hypothetical = [job]
    try:
        parts = elements(args, job.command)
    except BadInput as e:
        return {"error": e.message}
    if parts is not None:
        listed, limit = parts
        hypothetical = [
            replace(job, id=HYPOTHETICAL - n, command=e.command,
                    array=ArrayPart(HYPOTHETICAL, e.index, len(listed), limit, e.params))
            for n, e in enumerate(listed[:ESTIMATED_ELEMENTS])]
    running = daemon.store.holding_jobs()
    plan = decide(daemon.scheduler_input([*daemon.local_queue(), *hypothetical], running))
    ours = {j.id for j in hypothetical}
    starting = sum(s.job_id in ours for s in plan.starts)
    start = next((s for s in plan.starts if s.job_id == HYPOTHETICAL), None)
    if start is not None:
        wait, cards = 0.0, start.gpu_ids
    elif HYPOTHETICAL in plan.forecasts:
        forecast = plan.forecasts[HYPOTHETICAL]
        wait, cards = max(0.0, forecast.start - now), forecast.gpu_ids
    else:
        wait, cards = None, ()
    capacity = Capacity(daemon.host(), running)
    need = lambda c: c.total if job.mem is None else job.mem  # noqa: E731
    leftover = sum(max(0, c.free - need(c)) for i, c in capacity.cards.items() if i in cards)
    return {"error": None, "wait": wait, "leftover": leftover, "starting": starting,
            "reason": plan.reasons.get(HYPOTHETICAL)}


def rank(name: str, answer: dict[str, Any]) -> tuple:
    wait = answer["wait"]
    return (wait is None, round(wait or 0.0), -answer.get("starting", 1), answer["leftover"],
            name != LOCAL, name)


async def choose(daemon: Context, caller, args: dict[str, Any], with_local: bool = True
                 ) -> tuple[str | None, dict[str, str], list[str]]:
    """The host to send the job to (LOCAL for this one, None if no reachable host can take
    it), why each host that answered refused it, and the peers that did not answer."""

    peers = daemon.peers
    names = [n for n in peers.states if peers.may_try(n)]
    unreachable = [n for n in peers.states if n not in names]
    answers = await asyncio.gather(
        *(peers.call(n, "estimate", args, peers.config.list_timeout) for n in names),
        return_exceptions=True)
    candidates = {LOCAL: estimate(daemon, caller, args)} if with_local else {}
    refused: dict[str, str] = {}
    for name, answer in zip(names, answers):
        if isinstance(answer, Unreachable):
            unreachable.append(name)
        elif isinstance(answer, GqError):
            refused[name] = answer.message
        elif isinstance(answer, BaseException):
            raise answer
        else:
            candidates[name] = answer
    for name, answer in list(candidates.items()):
        if answer.get("error"):
            refused[name or daemon.hostname] = answer["error"]
            del candidates[name]
    best = min(candidates, key=lambda n: rank(n, candidates[n]), default=None)
    return best, refused, unreachable
