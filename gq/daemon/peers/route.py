"""Requests that reach other hosts: jobs named HOST:ID (or moved to a peer), submits with
--host, and reads of every host (`gq ls --all-hosts`). Everything else goes to the handler."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from gq.daemon.context import Context
from gq.daemon.lookup import resolve_id
from gq.daemon.peers.forwarding import check_may_forward, remote, submit
from gq.daemon.peers.placement import LOCAL
from gq.protocol import BadInput, GqError
from gq.protocol.ops import EVERY_HOST, ONE_JOB, SOME_JOBS, Op, listed_jobs
from gq.remote.spec import Unreachable
from gq.units import iso

# Which requests may reach another host, by the operations' traits (gq/protocol/ops.py).
ROUTED = frozenset({Op.SUBMIT, *ONE_JOB, *SOME_JOBS, *EVERY_HOST})
UNPAGED = ("columns", "page", "after")  # of `list`, for one host's answer only


def route(daemon: Context, caller, op: Op, args: dict[str, Any], handler):
    """The handler's answer, or a coroutine that asks peers for all or part of it. Only for
    the operations in ROUTED: the server calls the others' handlers directly."""
    peers = daemon.peers
    if op is Op.SUBMIT:
        target = args.get("host")
        if target in (None, "", daemon.hostname, "local"):
            return handler(daemon, caller, {k: v for k, v in args.items() if k != "host"})
        return submit(daemon, caller, args, str(target))
    if op in EVERY_HOST:
        hosts = args.get("hosts")
        local_args = {k: v for k, v in args.items() if k != "hosts"}
        if hosts == "all" or (hosts is None and peers.config.all_hosts and peers.states):
            # Every host's jobs come in one answer, as before columns and pages (`gq ls`).
            local_args = {k: v for k, v in local_args.items() if k not in UNPAGED}
            return every_host(daemon, caller, op, local_args, handler)
        return handler(daemon, caller, local_args)
    if op in ONE_JOB:
        where, ident = locate(daemon, caller, args.get("id", ""))
        if where == LOCAL:
            return handler(daemon, caller, args)
        if op is Op.LOG:  # the peer lets its login read the file: keep it to the owner here
            check_may_forward(caller)
        return _one(daemon, where, op, {**args, "id": ident})
    if op in SOME_JOBS and isinstance(args.get("ids"), list) and args["ids"]:
        groups: dict[str, list[str]] = {}
        for text in args["ids"]:
            where, ident = locate(daemon, caller, text)
            groups.setdefault(where, []).append(ident)
        if list(groups) == [LOCAL] and op is not Op.WAIT:
            return handler(daemon, caller, args)
        if op is not Op.WAIT and set(groups) != {LOCAL}:
            check_may_forward(caller)
        return _some(daemon, caller, op, args, groups, handler)
    return handler(daemon, caller, args)


def locate(daemon: Context, caller, text: Any) -> tuple[str, str]:
    """(LOCAL, id) or (peer, its id there) for 'ID', 'HOST:ID', or a job moved to a peer."""

    text = str(text).strip()
    host, sep, rest = text.rpartition(":")
    if sep:
        if host in (daemon.hostname, "local"):
            return LOCAL, rest
        daemon.peers.state(host)  # a peer, or BadInput
        return host, rest
    if not daemon.peers.states:
        return LOCAL, text
    try:
        moved = daemon.store.get_job(resolve_id(daemon, caller, text), env=False).moved_to
    except BadInput:
        return LOCAL, text  # the handler says what is wrong with it
    if moved and moved.rpartition(":")[0] in daemon.peers.states:
        return moved.rpartition(":")[0], moved.rpartition(":")[2]
    return LOCAL, text


async def _one(daemon: Context, peer: str, op: str, args: dict[str, Any]) -> dict[str, Any]:
    return remote(await daemon.peers.call(peer, op, args), peer)


async def _some(daemon: Context, caller, op: str, args: dict[str, Any], groups: dict[str, list[str]],
                handler) -> list[dict[str, Any]]:
    async def part(where: str, ids: list[str]) -> list[dict[str, Any]]:
        if where == LOCAL:
            answer = handler(daemon, caller, {**args, "ids": ids})
            answer = await answer if asyncio.iscoroutine(answer) else answer
            if op == "wait":  # a job that waited here for a peer is waited for there
                answer = [await _follow(daemon, j) for j in answer]
            return answer
        call = _wait_there if op == "wait" else _call_there
        return [remote(j, where) for j in await call(daemon, where, op, ids)]

    parts = await asyncio.gather(*(part(w, ids) for w, ids in groups.items()))
    return [item for p in parts for item in p]


async def _call_there(daemon: Context, peer: str, op: str, ids: list[str]) -> list[dict]:
    return await daemon.peers.call(peer, op, {"ids": ids})


async def _wait_there(daemon: Context, peer: str, op: str, ids: list[str]) -> list[dict]:
    """Wait on the peer, riding out lost connections: the job keeps running there."""

    while True:
        try:
            return await daemon.peers.call(peer, "wait", {"ids": ids}, None, force=True)
        except Unreachable:
            state = daemon.peers.state(peer)  # BadInput once it is no longer a peer
            await asyncio.sleep(max(0.2, state.retry_at - time.monotonic()))


async def _follow(daemon: Context, job: dict[str, Any]) -> dict[str, Any]:
    if not daemon.peers.states or not isinstance(job["id"], int):  # nothing moved away
        return job
    moved = daemon.store.get_job(job["id"], env=False).moved_to
    peer, _, ident = (moved or "").rpartition(":")
    if not moved or peer not in daemon.peers.states:
        return job
    return remote((await _wait_there(daemon, peer, "wait", [ident]))[0], peer)


async def every_host(daemon: Context, caller, op: str, args: dict[str, Any], handler) -> dict[str, Any]:
    """This host's answer and each peer's, named HOST:ID; a peer that does not answer in
    [peers] list_timeout is shown as last seen, and said to be down."""
    peers = daemon.peers
    names = list(peers.states)
    answers = await asyncio.gather(
        *(peers.call(n, op, args, peers.config.list_timeout) for n in names),
        return_exceptions=True)
    local = handler(daemon, caller, args)
    if op == "list":  # each host's first page (gq ls --all-hosts: one answer)
        local = listed_jobs(local)
        answers = [a if isinstance(a, BaseException) else listed_jobs(a) for a in answers]
    hosts = [{"name": daemon.hostname, "kind": "gq", "state": "up",
              "last_seen": iso(daemon.clock()), "error": None, "items": local}]
    key = EVERY_HOST[op]
    for name, answer in zip(names, answers):
        state = peers.states.get(name)
        kind = state.spec.kind if state else "gq"  # a Slurm peer's `gpus` are its nodes
        if isinstance(answer, GqError) or state is None:
            seen = (state.snapshot.get(key) or []) if state else []
            items = _matching(seen, args) if op == "list" else seen
            error = answer.message if isinstance(answer, GqError) else "removed"
            hosts.append({"name": name, "kind": kind, "state": "down", "error": error,
                          "last_seen": iso(state.last_seen) if state else None,
                          "items": [{**i, "seen_at": iso(state.last_seen)} for i in items]})
            continue
        if isinstance(answer, BaseException):
            raise answer
        if op == "gpus" or not (args.get("all") or args.get("states") or args.get("user")):
            peers.remember(name, **{key: answer})
        hosts.append({"name": name, "kind": kind, "state": "up", "error": None,
                      "last_seen": iso(state.last_seen), "items": answer})
    for h in hosts[1:]:
        h["items"] = [_remote_item(op, i, h["name"]) for i in h["items"]]
    if op == "list":
        return {"jobs": [j for h in hosts for j in h.pop("items")], "hosts": hosts}
    for h in hosts:
        h[key] = h.pop("items")
    return {"hosts": hosts}


def _remote_item(op: str, item: dict[str, Any], host: str) -> dict[str, Any]:
    """A peer's job or offence, its job named HOST:ID."""
    if op == "list":
        return remote(item, host)
    if op == "offenders" and item.get("job_id") is not None:
        return {**item, "job_id": f"{host}:{item['job_id']}"}
    return item


def _matching(jobs: list[dict], args: dict[str, Any]) -> list[dict]:
    """Last-known jobs of a down peer that the request asks for (only active ones are kept)."""
    states, user = args.get("states"), args.get("user")
    return [j for j in jobs if (not states or j["state"] in states)
            and (not user or j["user"] == user)]
