"""Every operation of a system daemon, sent random, badly typed and oversized arguments by two
users (and root, for what only admins may do): no internal error, nothing of another user's job
beyond what docs/admin.md allows them to see, and the daemon still serving."""

from __future__ import annotations

import inspect
import json
import re
import subprocess

import pytest

from gq.daemon import arrays, mem_history, notify, sim_register, submission, telemetry_ops
from gq.daemon.ops import HANDLERS
from gq.daemon.peers import forwarding, placement
from tests.support.sysmode import SystemHost, two_users

SECRET = "s3cret-of-the-owner"
PER_OP = 40  # requests of each operation by each user

# Sends every op PER_OP times with arguments drawn (seeded) from values of every wrong type,
# each request on a connection of its own; prints one line per request: op, ok, error.
FUZZ = """
import json, random, socket, sys
path, seed, per_op, own_keys = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
own_keys = json.loads(own_keys)  # op -> the argument names its handler reads
rng = random.Random(seed)
KEYS = ["id", "ids", "names", "name", "address", "offset", "err", "states", "state", "user",
        "all", "brief", "since", "until", "card", "job", "start", "duration", "cards", "pool",
        "account", "command", "cwd", "env", "gpus", "mem", "cpus", "ram", "priority", "hosts",
        "array", "sweep", "after", "afterok", "notify", "mail", "time_limit", "port", "slurm",
        "prefix", "words", "kind", "interval", "idempotency_key", "umask", "replace", "host"]
VALUES = [None, True, False, 0, 1, -1, 2**70, 1.5, float("1e308"), "", "x", "1", "@", "1_0",
          "\\u0661\\u0660", "../../etc", "\\x00", [], [1], ["1"], [None], [[]], {}, {"a": 1},
          {"1": []}, "x" * 200_000, list(range(5000)), {"k" + str(i): i for i in range(2000)}]
def requests(op):
    for key in own_keys[op]:  # each of its own arguments, with every wrong value
        for value in VALUES:
            yield {key: value}
    for _ in range(per_op):  # and any arguments at all, a few at a time
        yield {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 6))}
for op in own_keys:
    for args in requests(op):
        if op == "wait":  # a valid id would wait for good: never ask for one
            args["ids"] = rng.choice([None, [], [None], [[]], "x", [{}], [1.5]])
        s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(path)
        s.sendall(json.dumps({"v": 1, "op": op, "args": args}).encode() + b"\\n")
        line = s.makefile("rb").readline()
        s.close()
        try:
            reply = json.loads(line)
        except ValueError:
            reply = {"ok": False, "error": "no answer: " + line[:100].decode(errors="replace")}
        text = json.dumps(reply)
        print(json.dumps({"op": op, "ok": reply.get("ok"), "error": reply.get("error"),
                          "secret": "s3cret-of-the-owner" in text}), flush=True)
"""


@pytest.fixture(scope="module")
def users():
    with two_users("z", "y") as made:
        yield made


# Where handlers read more of their arguments than in their own body.
ALSO_READ = {"submit": [submission, arrays, notify, mem_history, forwarding, placement],
             "estimate": [submission, placement], "stats": [telemetry_ops],
             "sim_register": [sim_register]}


def own_keys(ops) -> dict[str, list[str]]:
    """The argument names each operation's handler reads (from their source)."""
    found = {}
    for op in ops:
        source = "".join(inspect.getsource(x) for x in [HANDLERS[op], *ALSO_READ.get(op, [])])
        keys = set(re.findall(r"""args(?:\.get\(|\[)["']([a-z_]+)["']""", source))
        keys |= set(re.findall(r"""_[a-z_]+\(args, ["']([a-z_]+)["']""", source))
        found[op] = sorted(keys | ({"ids"} if "_each(" in source else set()))
    return found


def fuzz(host: SystemHost, user, seed: int, ops) -> list[dict]:
    argv = [host.python, "-c", FUZZ, str(host.socket), str(seed), str(PER_OP),
            json.dumps(own_keys(ops))]
    proc = (host.run_as(user, argv, timeout=500) if user is not None else
            subprocess.run(argv, capture_output=True, text=True, timeout=500))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.timeout(900)
def test_fuzzed_requests_of_two_users_get_no_internal_error_nor_anothers_secrets(users):
    ann, bob = users.ann, users.bob
    host = SystemHost().start()
    try:
        theirs = host.submit(bob, "--hold", "-g", "0", "--", "true",
                             env=host.user_env(bob, API_TOKEN=SECRET))
        mine = host.submit(ann, "--hold", "-g", "0", "--", "true")
        by_ann = fuzz(host, ann, 0, sorted(HANDLERS))
        by_bob = fuzz(host, bob, 1, sorted(HANDLERS))
        # ... and root, an admin, for what only admins may do (but stop the daemon, or try
        # SSH connections to whatever address it is given).
        by_root = fuzz(host, None, 2, sorted(set(HANDLERS) - {"shutdown", "peer_add"}))
        assert len(by_ann) > len(HANDLERS) * PER_OP
        internal = sorted({f"{r['op']}: {r['error']}"[:300] for r in by_ann + by_bob + by_root
                           if "internal error" in (r["error"] or "")
                           or (r["error"] or "").startswith("no answer")})
        assert internal == [], "\n".join(internal)
        leaked = sorted({r["op"] for r in by_ann if r["secret"]})
        assert leaked == [], leaked
        # Nobody's job was changed by the other (only refused); both are served still.
        for job, other in ((theirs, ann), (mine, bob)):
            acts = [e for e in host.job(job)["events"] if other.name in (e["detail"] or "")
                    + (e["reason"] or "") and not (e["detail"] or "").startswith("refused")]
            assert acts == [], acts
        assert host.gq(bob, "ls").returncode == 0 and host.call("ping")
    finally:
        host.close()
