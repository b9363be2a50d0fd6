"""The protocol as a written schema (gq/protocol/ops.py, gq/protocol/shapes.py): every operation
has one handler, a Slurm peer serves or refuses each by name, the wire names of a submit are the
same on both sides, and what the daemon answers has the shape the schema says."""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
import types
import typing
from pathlib import Path

import pytest

import gq

from gq.cli.submit_args import parse_argv, request_args
from gq.daemon import arrays, mem_history, notify
from gq.daemon.ops import HANDLERS
from gq.daemon.peers.route import ROUTED
from gq.protocol import shapes
from gq.protocol.ops import EVERY_HOST, ONE_JOB, SOME_JOBS, SPECS, Op, Trait, parse_op
from gq.slurm.link import REFUSED, SlurmLink

ROOT = Path(gq.__file__).resolve().parent.parent


def keys(shape) -> set[str]:
    return set(typing.get_type_hints(shape))


def test_every_operation_has_one_handler_and_a_spec():
    assert set(HANDLERS) == set(Op)
    assert set(SPECS) == set(Op)
    for op, handler in HANDLERS.items():
        assert handler.__name__ == f"op_{op.value}", op


def test_a_slurm_peer_serves_or_refuses_every_operation_by_name():
    served = _slurm_served()
    assert not served & set(REFUSED)
    assert served | set(REFUSED) == set(Op)
    methods = {name[3:] for name, _ in inspect.getmembers(SlurmLink) if name.startswith("op_")}
    assert methods == {op.value for op in served}  # no method that is not in the table


def _slurm_served() -> set[Op]:
    """The keys of the table SlurmLink builds (read from its source: building one connects)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(SlurmLink.__init__)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and node.keys and all(
                isinstance(k, ast.Attribute) and getattr(k.value, "id", "") == "Op"
                for k in node.keys):
            return {Op[k.attr] for k in node.keys}
    raise AssertionError("no table of served operations in SlurmLink.__init__")


def test_the_router_takes_what_the_traits_say():
    assert ONE_JOB == {Op.SHOW, Op.WHY, Op.LOG}
    assert SOME_JOBS == {Op.CANCEL, Op.HOLD, Op.RELEASE, Op.REQUEUE, Op.UPDATE, Op.WAIT}
    assert EVERY_HOST == {Op.LIST: "jobs", Op.GPUS: "gpus", Op.OFFENDERS: "offenders"}
    assert ROUTED == {Op.SUBMIT} | ONE_JOB | SOME_JOBS | set(EVERY_HOST)
    for op in SOME_JOBS:
        assert "ids" in keys(SPECS[op].request), op
    for op in ONE_JOB:
        assert "id" in keys(SPECS[op].request), op
    assert parse_op("list") is Op.LIST and parse_op("nope") is None and parse_op(3) is None
    assert Trait.WAITS in SPECS[Op.WAIT].traits


def test_what_gq_submit_sends_is_in_the_schema(tmp_path):
    argv = ["-g", "1-2", "-p", "high", "--mem", "20G", "--cpus", "2", "--ram", "4G",
            "--time", "1h", "--name", "x", "--after", "1", "--afterok", "2", "--afternotok",
            "3", "--array", "0-3%2", "--signal", "USR1", "--grace", "30s", "--preemptible",
            "--retry-oom", "1", "--hold", "--notify", "end", "--pool", "p", "--interactive",
            "--host", "any", "--cwd", str(tmp_path), "--", "python", "train.py"]
    values, command = parse_argv(argv)
    sent = request_args(values, command)
    assert set(sent) <= keys(shapes.SubmitArgs), set(sent) - keys(shapes.SubmitArgs)
    values, command = parse_argv(["--sweep", "lr=1,2", "--mail", "a@b", "--", "true"])
    assert set(request_args(values, command)) <= keys(shapes.SubmitArgs)


def _read_keys(source: str) -> set[str]:
    """The request fields a piece of code reads: args.get("x"), args["x"], "x" in args, and
    helpers called as f(args, "x", ...)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "pop") and _is_args(node.func.value)
                and node.args and isinstance(node.args[0], ast.Constant)):
            out.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and _is_args(node.value) and isinstance(
                node.slice, ast.Constant):
            out.add(node.slice.value)
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
              and any(_is_args(c) for c in node.comparators)):
            out.add(node.left.value)
        elif (isinstance(node, ast.Call) and len(node.args) >= 2 and _is_args(node.args[0])
              and isinstance(node.args[1], ast.Constant)):
            out.add(node.args[1].value)
    return {k for k in out if isinstance(k, str)}


def _is_args(node) -> bool:
    return isinstance(node, ast.Name) and node.id in ("args", "request")


def test_what_the_daemon_reads_of_a_submit_is_in_the_schema():
    sources = [(ROOT / "gq" / p).read_text() for p in
               ("job_request.py", "daemon/submission.py", "daemon/enqueue.py")]
    sources += [inspect.getsource(f) for f in (
        arrays.expand_dependencies, arrays.elements, mem_history.apply_mem_history,
        notify.check_notify)]
    read = set().union(*map(_read_keys, sources))
    assert read, "the scan found nothing: it cannot fail"
    assert read <= keys(shapes.SubmitArgs), read - keys(shapes.SubmitArgs)


def _shape_errors(value, shape, where: str) -> list[str]:
    origin = typing.get_origin(shape)
    if origin in (typing.Union, types.UnionType):  # any one of them
        each = [_shape_errors(value, s, where) for s in typing.get_args(shape)]
        return [] if any(not e for e in each) else min(each, key=len)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        (item,) = typing.get_args(shape)
        return [e for i, element in enumerate(value)
                for e in _shape_errors(element, item, f"{where}[{i}]")]
    if typing.is_typeddict(shape):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        errors = []
        if extra := set(value) - keys(shape):
            errors.append(f"{where}: fields not in {shape.__name__}: {sorted(extra)}")
        if missing := shape.__required_keys__ - set(value):
            errors.append(f"{where}: {shape.__name__} lacks {sorted(missing)}")
        return errors
    return []


def test_the_daemons_answers_have_the_schemas_shapes(host):
    gate = host.work / "gate"
    running = host.submit("-g", "1", "--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    held = host.submit("--hold", "--", "true")
    host.wait_state(running, "running")
    answers = {
        Op.PING: host.call("ping"),
        Op.CONFIG: host.call("config"),
        Op.SUBMIT: host.call("submit", command=["true"], cwd=str(host.work), env={},
                             hold=True, umask=0o22, priority="low"),
        Op.LIST: host.call("list", all=True),
        Op.TOP: host.call("top"),
        Op.SHOW: host.call("show", id=str(running)),
        Op.WHY: host.call("why", id=str(held)),
        Op.LOG: host.call("log", id=str(running)),
        Op.GPUS: host.call("gpus"),
        Op.HOLD: host.call("hold", ids=[str(running)]),
        Op.RELEASE: host.call("release", ids=[str(held)]),
        Op.ESTIMATE: host.call("estimate", command=["true"], cwd=str(host.work), env={}),
        Op.PEERS: host.call("peers"),
    }
    gate.touch()
    answers[Op.WAIT] = host.call("wait", ids=[str(running)])
    answers[Op.CANCEL] = host.call("cancel", ids=[str(held)])
    answers[Op.CLEAN] = host.call("clean")
    pages = [host.call("list", all=True, page=1), host.call("list", columns=["id", "state"], page=1)]
    errors = [e for op, answer in answers.items()
              for e in _shape_errors(answer, SPECS[op].answer, op.value)]
    errors += [e for page in pages for e in _shape_errors(page, SPECS[Op.LIST].answer, "page")]
    assert not errors, "\n".join(sorted(set(errors)))


@pytest.mark.parametrize("op", sorted(Op))
def test_each_request_shape_is_a_typeddict(op):
    assert typing.is_typeddict(SPECS[op].request)
    assert os.path.basename(inspect.getsourcefile(SPECS[op].request)) == "shapes.py"
