"""`gq peers add|rm|ls|check`, and how the other commands show every host (--all-hosts)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, Optional

import typer

from gq.cli import output
from gq.cli.client import call
from gq.protocol.op_names import Op

peers_app = typer.Typer(help="SSH-reachable hosts that also run gq (docs/peers.md).",
                        no_args_is_help=True)
Json = Annotated[bool, typer.Option("--json", help="print JSON (a stable schema)")]


@peers_app.command("add")
def add(
    host: Annotated[Optional[str], typer.Argument(
        help="host name or address, as ssh takes it (~/.ssh/config applies); with --slurm, "
        "a login node  [default with --slurm: Slurm on this host]", metavar="HOST",
        show_default=False)] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="what gq calls it, in "
                    "HOST:ID and --host  [default: HOST]", metavar="NAME")] = None,
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="SSH login  [default: "
                    "~/.ssh/config's, else yours]", metavar="USER")] = None,
    port: Annotated[Optional[int], typer.Option("--port", "-p", help="SSH port  [default: 22]",
                    metavar="PORT")] = None,
    identity: Annotated[Optional[str], typer.Option("--identity", "-i", help="private key "
                        "file  [default: the agent's and ~/.ssh's keys]",
                        metavar="FILE")] = None,
    gq_home: Annotated[Optional[str], typer.Option("--gq-home", help="GQ_HOME of the daemon "
                       "there  [default: its default]", metavar="DIR")] = None,
    gq_command: Annotated[Optional[str], typer.Option("--gq-command", help="how to run gq "
                          "there, e.g. ~/venv/bin/gq  [default: gq]", metavar="CMD")] = None,
    accept_new: Annotated[bool, typer.Option("--accept-new", help="trust the host's key if "
                          "it is not known yet (a changed key is always refused)")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="replace a peer of that "
                       "name")] = False,
    slurm: Annotated[bool, typer.Option("--slurm", help="a Slurm cluster: jobs sent there go "
                     "to sbatch (docs/slurm.md)")] = False,
    partition: Annotated[Optional[str], typer.Option("--partition", help="with --slurm: "
                         "the partition jobs go to  [default: Slurm's]",
                         metavar="P")] = None,
    account: Annotated[Optional[str], typer.Option("--account", help="with --slurm: the "
                       "account jobs are charged to  [default: Slurm's]", metavar="A")] = None,
    qos: Annotated[Optional[list[str]], typer.Option("--qos", help="with --slurm: the QOS "
                   "of a tier, e.g. high=urgent (repeatable)", metavar="TIER=QOS")] = None,
    json: Json = False,
) -> None:
    """Add a peer: connect over SSH, check its host key and that gq runs there (or, with
    --slurm, that Slurm answers), remember it."""
    from gq.protocol import BadInput

    if identity:
        identity = os.path.abspath(os.path.expanduser(identity))
    if not host and not slurm:
        raise BadInput("gq peers add: give HOST (or --slurm for Slurm on this host)")
    if not slurm and (partition or account or qos):
        raise BadInput("--partition, --account and --qos are for a Slurm peer: add --slurm")
    peer = call(Op.PEER_ADD, address=host, name=name, user=user, port=port, identity=identity,
                gq_home=gq_home, gq_command=gq_command, accept_new=accept_new, replace=replace,
                slurm=slurm, partition=partition, account=account, qos=qos or [])
    if json:
        return output.print_json(peer)
    if peer["accepted_key"]:
        print(f"{peer['name']}: host key {peer['accepted_key']} accepted (saved in gq's "
              "known_hosts)")
    what = "Slurm" if peer["kind"] == "slurm" else "gq"
    print(f"added {peer['name']} ({peer['address']}): {what} {peer['version']} as "
          f"{peer['remote_user']} on {peer['remote_host']}, {_cards(peer)}, "
          f"{peer['latency_ms']} ms")


@peers_app.command("rm")
def rm(name: Annotated[str, typer.Argument(help="the peer's name", metavar="NAME")]) -> None:
    """Forget a peer. Its jobs keep running there."""
    done = call(Op.PEER_RM, name=name)
    print(f"removed {done['removed']}")
    if done["waiting_jobs"]:
        print(f"gq: job(s) {', '.join(map(str, done['waiting_jobs']))} wait to be sent to "
              f"{name}; cancel them, or add the peer again", file=sys.stderr)


@peers_app.command("ls")
def ls(json: Json = False) -> None:
    """Peers, whether they answer, and what was last seen of each."""
    peers = call(Op.PEERS)
    output.print_json(peers) if json else _print(peers)


@peers_app.command("check")
def check(
    names: Annotated[Optional[list[str]], typer.Argument(help="peers to check  [default: all]",
                                                         metavar="NAME...")] = None,
    json: Json = False,
) -> int:
    """Check peers now: reachability, latency, version, cards. Exit 1 if one is down."""
    peers = call(Op.PEER_CHECK, names=names or [])
    output.print_json(peers) if json else _print(peers)
    return 1 if any(p["state"] != "up" for p in peers) else 0


def _cards(peer: dict[str, Any]) -> str:
    names = ", ".join(peer["gpu_names"])
    return f"{peer['gpus']} GPU(s)" + (f" ({names})" if names else "")


def _print(peers: list[dict[str, Any]]) -> None:
    if not peers:
        print("no peers (add one: gq peers add HOST)")
        return
    rows = [[p["name"], p["address"], p["state"], (p["last_seen"] or "never").replace("T", " "),
             p["version"] or "-", "-" if p["latency_ms"] is None else f"{p['latency_ms']} ms",
             str(p["gpus"]), str(p["running"]), str(p["pending"])] for p in peers]
    print(output.table(["NAME", "ADDRESS", "STATE", "LAST_SEEN", "VERSION", "LATENCY", "GPUS",
                        "RUNNING", "PENDING"], rows))
    for p in peers:
        if p["error"]:  # most errors already begin with the peer's name
            named = p["error"].startswith(f"{p['name']}: ")
            output.say(p["error"] if named else f"{p['name']}: {p['error']}")
