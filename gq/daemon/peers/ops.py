"""Protocol operations for peers: add, remove, list and check them; estimate a job's start for
`--host any`; read a job's log for `gq logs HOST:ID`."""

from __future__ import annotations

import base64
import os
from typing import Any

from gq.daemon.admins import require_admin
from gq.daemon.authz import require_owner
from gq.daemon.context import Context
from gq.daemon.lookup import resolve_id
from gq.daemon.peers.forwarding import check_may_forward
from gq.daemon.peers.placement import estimate
from gq.daemon.peers.registry import join, spec_of
from gq.daemon.peers.slurm_add import op_slurm_peer_add
from gq.daemon.userfiles import job_file_owner, read_owned
from gq.protocol import VERSION, BadInput, GqError

LOG_CHUNK = 1 << 20  # bytes of a log per answer: well under the protocol's line limit
RESERVED = ("any", "local")


def _name(daemon: Context, args: dict) -> str:
    name = str(args.get("name") or args.get("address") or "").strip()
    if not name or any(c.isspace() or c in ":/@" for c in name):
        raise BadInput(f"peer name {name!r}: expected a host name without spaces, ':', '/' or "
                       "'@' (give --name for an IPv6 address)")
    if name in RESERVED or name == daemon.hostname:
        taken = "reserved" if name in RESERVED else "this host's name"
        raise BadInput(f"peer name {name!r} is taken ({taken}): give another with --name")
    return name


def _port(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise BadInput(f"--port {value!r}: expected a port number, 1 to 65535")
    return value


async def op_peer_add(daemon: Context, caller, args: dict) -> dict:
    """Connect (host key checked), run `gq rpc` there, check its version, remember it."""
    from gq.remote.ssh import PeerLink, ping_time

    check_may_forward(caller)
    peers = daemon.peers
    if args.get("slurm"):
        return await op_slurm_peer_add(daemon, caller, args, _name(
            daemon, {**args, "name": args.get("name") or args.get("address") or "slurm"}))
    name = _name(daemon, args)
    if name in peers.states and not args.get("replace"):
        raise BadInput(f"{name} is already a peer (gq peers rm {name} first, or --replace)")
    row = {"name": name, "address": str(args.get("address") or name),
           "port": _port(args.get("port")), "user": args.get("user") or None,
           "identity": args.get("identity") or None, "gq_home": args.get("gq_home") or None,
           "gq_command": args.get("gq_command") or "gq", "added_at": daemon.clock()}
    if row["identity"] and not os.path.isfile(row["identity"]):
        raise BadInput(f"--identity {row['identity']}: no such file")
    link = PeerLink(spec_of(row), peers.known_hosts, peers.config.connect_timeout)

    def same_protocol(info: dict) -> None:
        if info.get("protocol") != VERSION:
            raise GqError(f"{name} runs gq {info.get('version')}, which speaks protocol "
                          f"{info.get('protocol')}; this one speaks {VERSION}: upgrade one")

    return await join(peers, row, link, bool(args.get("accept_new")),
                      lambda: ping_time(link, peers.config.timeout), same_protocol)


def op_peer_rm(daemon: Context, caller, args: dict) -> dict:
    check_may_forward(caller)
    name = str(args.get("name") or "")
    daemon.peers.remove(name)
    waiting = [j.id for j in daemon.store.queue() if j.forward == name]
    return {"removed": name, "waiting_jobs": waiting}


def op_peers(daemon: Context, caller, args: dict) -> list[dict]:
    return [s.json() for s in daemon.peers.states.values()]


async def op_peer_check(daemon: Context, caller, args: dict) -> list[dict]:
    """Check the peers named (all by default) now, whatever their back-off. Admins only:
    each check is SSH connections to every peer (anyone may read the last ones: op_peers)."""
    import asyncio

    require_admin(daemon, caller, "force checks of peers (gq peers ls shows the last check of "
                                  "each)")
    names = args.get("names") or list(daemon.peers.states)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadInput("expected the names of peers (see gq peers ls)")
    for name in names:
        daemon.peers.state(name)
    states = await asyncio.gather(*(daemon.peers.check(n, force=True) for n in names))
    return [s.json() for s in states]


def op_estimate(daemon: Context, caller, args: dict) -> dict:
    return estimate(daemon, caller, args)


def op_log(daemon: Context, caller, args: dict) -> dict:
    """Part of a job's output (or error) file from `offset`, base64, and the job's state."""

    job = daemon.store.get_job(resolve_id(daemon, caller, args.get("id", "")))
    require_owner(daemon, caller, [job], "read the output of")
    path = (daemon.layout.stderr if args.get("err") else daemon.layout.stdout)(job.id, job.user)
    offset = args.get("offset") or 0
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise BadInput(f"offset {offset!r}: expected a byte offset")
    # A system daemon reads it as root in a directory the user controls: only their own
    # regular file, never through a link, never blocking on a FIFO (gq/daemon/userfiles.py).
    owner, base = job_file_owner(daemon.layout, job)
    data = read_owned(path, owner, offset, LOG_CHUNK, base)
    return {"id": job.id, "state": str(job.state), "reason": job.reason,
            "data": base64.b64encode(data).decode(), "offset": offset + len(data)}
