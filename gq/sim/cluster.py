"""`gq sim --cluster` specs (HOSTSx<cards as in GQ_SIM_GPUS>) turned into the policy's Hosts.

`3x8x80G` is 3 hosts of 8 cards of 80 GiB; `2x8xH100/2` is 2 hosts of 8 H100s linked in pairs;
`2x4xH100,4xA100-40G` is 2 hosts, each with 4 H100s and 4 A100-40Gs. Everything after the first
`HOSTSx` is exactly a GQ_SIM_GPUS value, read by the same parser (`gq.gpu.sim.parse_sim_spec`),
islands included, so a simulated cluster is described the way a simulated daemon is.
"""

from __future__ import annotations

import re

from gq.gpu.sim import parse_sim_spec
from gq.policy import Card, Host

DEFAULT_CLUSTER = "4x8x80G"
DEFAULT_CPUS_PER_HOST = 128
MAX_HOSTS = 1024  # a replay pass costs time per host; far beyond what gq targets

CLUSTER_HELP = ("expected HOSTSxCARDS, where CARDS is written as in GQ_SIM_GPUS: e.g. 3x8x80G "
                "(3 hosts of 8 80G cards), 2x8xH100/2, 2x4xH100,4xA100-40G")

_HOSTS = re.compile(r"\s*(\d+)\s*[xX]\s*(.+)", re.S)


def parse_cluster(
    text: str, cpus_per_host: int = DEFAULT_CPUS_PER_HOST, ram_per_host: int | None = None
) -> tuple[Host, ...]:
    """The hosts a spec describes, named host0, host1, ...; ValueError with one line if bad."""
    if cpus_per_host < 1:
        raise ValueError(f"--cpus-per-host {cpus_per_host}: expected 1 or more")
    m = _HOSTS.fullmatch(text)
    if m is None:
        raise ValueError(f"--cluster {text!r}: {CLUSTER_HELP}")
    n_hosts, cards_text = int(m.group(1)), m.group(2).strip()
    if not 1 <= n_hosts <= MAX_HOSTS:
        raise ValueError(f"--cluster {text!r}: {n_hosts} hosts; expected 1 to {MAX_HOSTS}")
    try:
        specs = parse_sim_spec(cards_text)
    except ValueError as e:
        # '8x80G' reads as 8 hosts of '80G', which names no card count: show both halves.
        raise ValueError(f"--cluster {text!r}: {n_hosts} hosts of cards {e} (a cluster is "
                         f"HOSTSxCARDS, e.g. 3x8x80G: 3 hosts of 8 80G cards)") from None
    if not specs:
        raise ValueError(f"--cluster {text!r}: hosts without cards; {CLUSTER_HELP}")
    cards = tuple(Card(i, s.memory_total, 0, s.island) for i, s in enumerate(specs))
    return tuple(Host(cpus=cpus_per_host, ram=ram_per_host, cards=cards, name=f"host{i}")
                 for i in range(n_hosts))


def describe_cluster(hosts: tuple[Host, ...]) -> str:
    """'4 hosts x 8 cards (80G), 128 CPU cores each', for tables and reports."""
    from gq.units import format_size

    sizes: list[str] = []
    for card in hosts[0].cards:
        size = format_size(card.memory_total)
        if size not in sizes:
            sizes.append(size)
    same = all(h.cards == hosts[0].cards and h.cpus == hosts[0].cpus for h in hosts)
    per_host = f"{len(hosts[0].cards)} cards ({', '.join(sizes)}), {hosts[0].cpus} CPU cores"
    if not same:
        return f"{len(hosts)} hosts, {sum(len(h.cards) for h in hosts)} cards"
    return f"{len(hosts)} host{'s' * (len(hosts) != 1)} x {per_host} each"


def total_cards(hosts: tuple[Host, ...]) -> int:
    return sum(len(h.cards) for h in hosts)
