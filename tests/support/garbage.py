"""Malformed request frames for the daemon's socket, each one invalid by construction, from a
seeded generator: the same 10,000 frames on every run."""

from __future__ import annotations

import json
import random

from gq.protocol import MAX_LINE, VERSION

# Operations whose arguments are mangled below. Not `shutdown` (valid from the owner whatever
# its arguments) nor `ping`, `gpus` and `complete`, which take any arguments.
OPS_WITH_ARGS = ("submit", "list", "show", "why", "cancel", "hold", "release", "requeue",
                 "wait")
NO_SUCH_JOB = 10**6  # ids from here on name no job in the test's daemon


def junk(rng: random.Random):
    """A JSON value of a random type, never a valid job id or command."""
    return rng.choice([
        lambda: None, lambda: True, lambda: -1, lambda: 10**30, lambda: -(10**30),
        lambda: 1.5e308, lambda: rng.random(), lambda: "", lambda: "x" * rng.randint(1, 300),
        lambda: "\udcff\u0000é" * rng.randint(1, 5), lambda: [], lambda: {},
        lambda: [None, 3, {"a": []}], lambda: {"nested": {"deeper": [1, "2", None]}},
        lambda: [[[[[]]]]], lambda: str(NO_SUCH_JOB + rng.randint(0, 10**6)),
    ])()


def _bad_args(rng: random.Random, op: str) -> dict:
    valid_submit = {"command": ["true"], "cwd": "/", "env": {}, "hold": True}
    if op == "submit":
        key = rng.choice(["command", "cwd", "env", "gpus", "mem", "cpus", "ram", "priority",
                          "time_limit", "after", "afterok", "name", "signal", "grace",
                          "retry_oom", "array", "sweep", "notify", "preemptible",
                          "signal_before", "idempotency_key"])
        bad = {
            "command": rng.choice([[], [""], "true", [1, 2], [None], {"a": 1}, ["a\0b"]]),
            "cwd": rng.choice(["relative", "/no/such/dir", 5, ["/"], "/tmp\0"]),
            "env": rng.choice([["A=1"], "A=1", {"A": 1}, {"A": None}, {"A": "\0"}]),
            "gpus": rng.choice([-1, "1", 1.5, 10**30, True, [1]]),
            "mem": rng.choice([0, -5, "20", 1000, 10**30, [1]]),
            "cpus": rng.choice([0, -1, "2", 10**30, 2.5]),
            "ram": rng.choice([0, -1, "1G", [1]]),
            "priority": rng.choice(["urgent", 1, None, ["high"]]),
            "time_limit": rng.choice([0, -1, "1h", [60]]),
            "after": rng.choice(["1", [str(NO_SUCH_JOB)], [None], [[1]], ["x1"], 7]),
            "afterok": rng.choice([[str(10**40)], [-3], ["@@"]]),
            "name": rng.choice(["a/b", "x" * 65, "\x1b[31m", 5, "a\0"]),
            "signal": rng.choice(["FOO", "KILL", 9.5, ["TERM"]]),
            "grace": rng.choice([-1, "1m", [1]]),
            "retry_oom": rng.choice([-1, "2", 10**30, 1.5]),
            "array": rng.choice(["0-3", 5, {"ids": "x"}, [-1], {"indexes": [1, "a"]}]),
            "sweep": rng.choice(["lr=1", 5, [[1]], {"lr": 5}]),
            "notify": rng.choice([5, ["x"], {"a": 1}]),
            "preemptible": rng.choice(["yes", 1, [True]]),
            "signal_before": rng.choice([60, -1, "5m"]),  # 60: without a time limit
            "idempotency_key": rng.choice(["", 5, ["k"], "k" * 129, "a\tb"]),
        }[key]
        return {**valid_submit, key: bad}
    if op == "list":
        return {rng.choice(["states", "user"]): rng.choice([5, [5], ["running", 3], {"a": 1},
                                                            ["nosuchstate"], [None]])}
    if op in ("show", "why"):
        return rng.choice([{}, {"id": junk(rng)}, {"id": str(NO_SUCH_JOB)}])
    return {"ids": rng.choice([junk(rng), [junk(rng)], [str(NO_SUCH_JOB)], [], None,
                               [str(10**40)], ["1_x"], [f"{NO_SUCH_JOB}_1"]])}


def frame(rng: random.Random) -> bytes:
    """One malformed line, newline included."""
    kind = rng.randrange(9)
    if kind == 0:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200))).replace(
            b"\n", b" ") + b"\n"
    if kind == 1:  # a valid request cut short
        whole = json.dumps({"v": VERSION, "op": "submit", "args": {"command": ["true"]}})
        return whole[:rng.randrange(len(whole))].encode() + b"\n"
    if kind == 2:  # JSON that is not an object, or is nested too deep to parse
        return rng.choice([b"[]", b"1", b'"submit"', b"null", b"true", b"[" * 100_000,
                           b'{"v": 1, "op": "list", "args": ' * 50_000, b"NaN",
                           b'{"v": 1, "op": "show", "args": {"id": Infinity}}']) + b"\n"
    if kind == 3:  # wrong or missing protocol version
        req = {"op": "list", "args": {}}
        if rng.random() < 0.8:
            req["v"] = rng.choice([0, 2, "1", None, [1], 1.0001, True])
        return json.dumps(req).encode() + b"\n"
    if kind == 4:  # unknown or mistyped operation
        op = rng.choice(["", "submitt", "SUBMIT", "op_submit", "__init__", None, 1, ["list"],
                         {"op": "list"}, "x" * rng.randint(1, 1000)])
        return json.dumps({"v": VERSION, "op": op, "args": {}}).encode() + b"\n"
    if kind == 5:  # arguments that are not an object
        return json.dumps({"v": VERSION, "op": rng.choice(OPS_WITH_ARGS),
                           "args": rng.choice([[1], "ids", 5, True])}).encode() + b"\n"
    if kind == 6:  # invalid UTF-8 inside a string
        return b'{"v": 1, "op": "show", "args": {"id": "\xff\xfe' + bytes(
            [rng.randrange(128, 256) for _ in range(8)]) + b'"}}\n'
    op = rng.choice(OPS_WITH_ARGS)  # a known operation with mangled arguments
    return json.dumps({"v": VERSION, "op": op, "args": _bad_args(rng, op)}).encode() + b"\n"


def oversized() -> bytes:
    return b'{"v": 1, "op": "submit", "args": {"command": ["' + b"x" * MAX_LINE + b'"]}}\n'
