"""Benchmark `gq ls --all-hosts` with one peer (over a real loopback sshd) against `gq ls`."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _harness import (
    TempDaemon, gq_script, interleaved, machine, print_table, round_options, verdict,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.sshd import LoopbackSshd  # noqa: E402 (the tests' loopback sshd)

JOBS_PER_HOST = 20  # held jobs on each host, so that both listings have rows to carry
TARGET = "at most 2x gq ls plus one SSH round trip"


def bench(rounds: int, warmup: int) -> dict:
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="gq-ssh-", dir="/tmp") as root, \
            TempDaemon(cpus) as local, TempDaemon(cpus) as peer:
        sshd = LoopbackSshd(Path(root) / "sshd")
        sshd.start()
        try:
            gq = gq_script()
            with local.connect() as conn:
                conn.call("peer_add", address="127.0.0.1", name="peer", port=sshd.port,
                          user=sshd.user, identity=str(sshd.user_key), gq_home=peer.home,
                          gq_command=f"{sys.executable} -m gq", accept_new=True)
                for daemon in (local, peer):
                    with daemon.connect() as c:
                        for _ in range(JOBS_PER_HOST):
                            c.call("submit", command=["true"], cwd="/", env={}, hold=True,
                                   gpus=0)
                pings = [conn.call("peer_check", names=["peer"])[0]["latency_ms"]
                         for _ in range(rounds)]
            commands = {"local": [gq, "ls"], "all_hosts": [gq, "ls", "--all-hosts"]}
            medians = interleaved(commands, local.env, rounds, warmup)
        finally:
            sshd.stop()
    local_ms, all_ms = medians["local"] * 1e3, medians["all_hosts"] * 1e3
    rtt_ms = statistics.median(pings)
    return {"rounds": rounds, "warmup": warmup, "jobs_per_host": JOBS_PER_HOST,
            "gq_ls_ms": round(local_ms, 2), "gq_ls_all_hosts_ms": round(all_ms, 2),
            "ssh_round_trip_ms": round(rtt_ms, 2), "ratio": round(all_ms / local_ms, 2),
            "budget_ms": round(2 * local_ms + rtt_ms, 2),
            "within_target": all_ms <= 2 * local_ms + rtt_ms}


def main() -> int:
    opts, rounds, warmup = round_options(__doc__)
    info = machine()
    out = bench(rounds, warmup)
    if opts.json:
        print(json.dumps({**info, **out}))
        return 0
    print(f"gq peers benchmark, {info['date']}; python {info['python']}; {info['cores']} cores")
    print(f"two daemons on this machine, the peer behind sshd on 127.0.0.1; "
          f"{JOBS_PER_HOST} held jobs on each")
    print_table([
        (f"medians of {rounds} interleaved rounds after {warmup} warm-up", "", ""),
        ("gq ls", f"{out['gq_ls_ms']:.1f} ms", "this host"),
        ("gq ls --all-hosts", f"{out['gq_ls_all_hosts_ms']:.1f} ms",
         "this host and the peer, over the daemon's kept SSH connection"),
        ("SSH round trip", f"{out['ssh_round_trip_ms']:.1f} ms",
         "a ping through the peer's relay (gq peers check)"),
        ("ratio", f"{out['ratio']:.2f}x",
         f"target: {TARGET} = {out['budget_ms']:.1f} ms  {verdict(out['within_target'])}"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
