"""How the read commands show every host (--all-hosts): the answers of `list`, `gpus` and
`offenders` with hosts="all", host by host, saying which hosts are down."""

from __future__ import annotations

import sys
from typing import Any

from gq.cli.output import say


def warn_down(hosts: list[dict[str, Any]]) -> None:
    for h in hosts:
        if h["state"] != "up":
            seen = f"last seen {h['last_seen'].replace('T', ' ')}" if h["last_seen"] else \
                "never seen"
            say(f"gq: {h['name']} is down ({seen}; {h['error']}): its part is as last seen",
                file=sys.stderr)


def split_hosts(answer: Any, key: str) -> list[dict[str, Any]]:
    """The items of an answer, saying on stderr which hosts are down."""
    if not isinstance(answer, dict):
        return answer
    warn_down(answer["hosts"])
    return answer[key]


def print_hosts_gpus(hosts: list[dict[str, Any]]) -> None:
    from gq.cli.details import print_gpus, print_slurm_nodes

    _each_host(hosts, lambda h: (print_slurm_nodes if h.get("kind") == "slurm" else
                                 print_gpus)(h["gpus"]))


def print_hosts_offenders(hosts: list[dict[str, Any]], now: float) -> None:
    from gq.cli.stats_cmd import print_offenders

    def part(h: dict[str, Any]) -> None:
        if h.get("kind") == "slurm":
            print("not watched: a Slurm cluster's jobs are its own to account for (seff, "
                  "sacct; docs/slurm.md)")
        else:
            print_offenders(h["offenders"], now)

    _each_host(hosts, part)


def _each_host(hosts: list[dict[str, Any]], print_part) -> None:
    warn_down(hosts)
    for n, h in enumerate(hosts):
        slurm = " (Slurm)" if h.get("kind") == "slurm" else ""
        say(("\n" if n else "") + h["name"] + slurm + ("" if h["state"] == "up" else
                                                       " (down: as last seen)"))
        print_part(h)
