"""`gq peers add --slurm [HOST]`: check that Slurm answers there, then remember the peer."""

from __future__ import annotations

import json
import time
from typing import Any

from gq.daemon.context import Context
from gq.daemon.peers.registry import join, spec_of
from gq.protocol import BadInput
from gq.slurm.link import SlurmLink

TIERS = ("high", "normal", "low")


def qos_map(items: Any) -> dict[str, str]:
    """['high=urgent', 'low=scavenger'] -> {'high': 'urgent', 'low': 'scavenger'}."""
    out = {}
    for item in items or []:
        tier, sep, qos = str(item).partition("=")
        if not sep or tier not in TIERS or not qos.strip():
            raise BadInput(f"--qos {item!r}: expected TIER=QOS, TIER one of high, normal, low")
        out[tier] = qos.strip()
    return out


async def op_slurm_peer_add(daemon: Context, caller, args: dict, name: str) -> dict:
    peers = daemon.peers  # op_peer_add checked that the caller may change peers
    if name in peers.states and not args.get("replace"):
        raise BadInput(f"{name} is already a peer (gq peers rm {name} first, or --replace)")
    options = {"partition": args.get("partition") or None,
               "account": args.get("account") or None, "qos": qos_map(args.get("qos"))}
    row = {"name": name, "address": str(args.get("address") or ""),
           "port": args.get("port"), "user": args.get("user") or None,
           "identity": args.get("identity") or None, "gq_home": None, "gq_command": "gq",
           "added_at": daemon.clock(), "kind": "slurm", "options": json.dumps(options)}
    # a peer replaced (--replace) keeps the jobs sent there; a new one has none
    link = SlurmLink(spec_of(row), peers.known_hosts, peers.config.connect_timeout,
                     daemon.store.slurm_jobs.of(name))

    def ping():
        began = time.monotonic()
        return link.call("ping", {}, peers.config.timeout), time.monotonic() - began

    joined = await join(peers, row, link, bool(args.get("accept_new")), ping)
    return {**joined, "slurm": options}
