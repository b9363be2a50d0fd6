"""`gq mcp`: gq's read commands and actions as Model Context Protocol tools, on stdio, for
coding agents (docs/agents.md). Each tool asks the daemon over its socket, as the CLI does: the
daemon knows the caller by the socket's credentials, so an agent may do what its user may do by
hand, nothing more. Needs the `mcp` extra: pip install 'gq-gpu[mcp]'."""

import os
from typing import Any

from gq import __version__
from gq.protocol import GqError
from gq.protocol.op_names import Op

MAX_TAIL = 2000  # lines `logs` returns at most
MAX_BYTES = 256 << 10  # and bytes read from the end of the log
MCP_PAGE = 200  # jobs `ls` returns at most (the following ones: its `next`)

INSTRUCTIONS = (
    "gq is the GPU job queue of this host. Jobs are identified by numbers (or '@', your last "
    "job). Read with ls, show, why, logs, gpus, offenders, stats; triage classifies any log "
    "file. Act with submit, cancel, hold, release, update, requeue: they act as the user who "
    "runs this server, on that user's jobs only. A failed job's `failure` says why it died "
    "and `failure_suggestion` what to do."
)


# What agents naturally send: an id as a number or a string (12, "12", "12_3", "@"), a count as a
# number, a GPU range as "2-4" or {"min": 2, "max": 4}. Each is turned into the text the CLI would
# have typed, so that gq's own parsers judge it and refuse it in gq's words. The tools' annotations
# are evaluated where they are defined (no `from __future__ import annotations`): the SDK reads
# them, and JobId needs pydantic, which comes with the SDK.


EXPECTED = {  # an argument's name -> what a refusal says it should be
    "id": "a job id like 12, '12_3' or '@'",
    "ids": "a list of job ids like [12, '12_3', '@']",
    "gpus": "a number of GPUs like 2, a range like '2-4', or {\"min\": 2, \"max\": 4}",
    "cpus": "a whole number of CPU cores", "retry_oom": "a whole number of retries",
    "tail": "a whole number of lines", "exit_code": "a whole number",
    "command": "the command as a list of strings", "env": "an object of NAME: value strings",
    "after": "a list of job ids", "all": "true or false", "hold": "true or false",
    "states": "a list of states like ['running', 'failed']",
}


def refusal(tool: str, error: Any) -> str:
    """gq's one line for arguments that do not fit a tool's schema (never pydantic's text)."""
    problems = []
    for e in error.errors():
        name = str(e["loc"][0]) if e["loc"] else "arguments"
        if e["type"] == "missing":
            problems.append(f"{name} is required")
        else:
            problems.append(f"{name}: expected {EXPECTED.get(name, 'a ' + _kind(e['type']))}")
    return f"gq: {tool}: " + "; ".join(dict.fromkeys(problems))


def _kind(pydantic_type: str) -> str:
    return pydantic_type.split("_")[0] if pydantic_type[:3] in ("int", "boo", "str", "lis",
                                                                 "dic", "flo") else "value"


def text_id(value: int | str) -> str:
    """An id as the CLI types it."""
    return str(value)


def text_gpus(value: Any) -> str | None:
    """A number, "2-4" or a {min, max} range as --gpus takes it."""
    if value is None or isinstance(value, (int, str)):
        return None if value is None else str(value)
    return f"{value.min}-{value.max}"


def text_count(value: int | str | None) -> str | None:
    return None if value is None else str(value)


def make_server():
    """The MCP server with every tool registered (the `mcp` package is imported here)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp_types import ToolAnnotations
        from pydantic import BaseModel, StrictInt, ValidationError
    except ImportError:
        raise GqError("gq mcp needs the MCP SDK: pip install 'gq-gpu[mcp]' (or pip install "
                      "mcp)") from None

    JobId = StrictInt | str  # JSON's true is no job id, though Python's True == 1

    class GpuRange(BaseModel):
        min: StrictInt
        max: StrictInt

    class GqServer(MCPServer):
        """Refusals in gq's words: an unknown tool, arguments that fit no schema."""

        async def call_tool(self, name, arguments, context=None):
            if self._tool_manager.get_tool(name) is None:
                known = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
                raise ToolError(f"gq: no tool {name!r}; the tools are {known}")
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as e:
                if isinstance(e.__cause__, ValidationError):
                    raise ToolError(refusal(name, e.__cause__)) from None
                if type(e.__cause__) is ToolError:  # a tool's own `gq: ...`, without the
                    raise ToolError(str(e.__cause__)) from None  # SDK's prefix
                raise

    server = GqServer("gq", instructions=INSTRUCTIONS, version=__version__)
    reads = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    def acts(destructive: bool, idempotent: bool) -> Any:
        return ToolAnnotations(read_only_hint=False, destructive_hint=destructive,
                               idempotent_hint=idempotent, open_world_hint=False)

    def ask(op: str, **args: Any) -> Any:
        from gq.cli.client import call

        try:
            if "id" in args:
                args["id"] = text_id(args["id"])
            if "ids" in args:
                args["ids"] = [text_id(i) for i in args["ids"]]
            return call(op, **args)
        except GqError as e:
            raise ToolError(f"gq: {e}") from None

    @server.tool(annotations=reads)
    def ls(all: bool = False, user: str | None = None,
           states: list[str] | None = None, after: int | None = None) -> dict[str, Any]:
        """Jobs: pending and running ones, or also ended ones with all=true, at most 200 an
        answer, by id: `next` is the `after` that asks for the following ones (null: no
        more). Each has id, name, user, state, reason (why a pending one waits), gpus, mem
        (bytes), exit_code and, when it failed, failure (the class of why it died)."""
        answer = ask(Op.LIST, all=all, user=user, states=states or [], brief=False,
                     page=MCP_PAGE, after=after)
        return {"jobs": answer["jobs"], "next": answer["next"]}

    @server.tool(annotations=reads)
    def show(id: JobId) -> dict[str, Any]:
        """Everything known about one job: its request, times, cards, history, and for a
        failed one failure, failure_evidence (log lines) and failure_suggestion."""
        return ask(Op.SHOW, id=id)

    @server.tool(annotations=reads)
    def why(id: JobId) -> dict[str, Any]:
        """Why a job waits and when it should start, or how it ended and, if it failed, why
        and what to do."""
        return ask(Op.WHY, id=id)

    @server.tool(annotations=reads)
    def logs(id: JobId, stream: str = "stdout", tail: int = 100) -> dict[str, Any]:
        """The last `tail` lines (at most 2000) of a job's output: stream 'stdout' or
        'stderr'."""
        if stream not in ("stdout", "stderr"):
            raise ToolError("gq: stream: expected stdout or stderr")
        job = ask(Op.SHOW, id=id)
        lines = _tail(job.get(stream), max(1, min(int(tail), MAX_TAIL)))
        return {"id": job["id"], "state": job["state"], "stream": stream, "lines": lines}

    @server.tool(annotations=reads)
    def gpus() -> dict[str, Any]:
        """The cards: memory held by each job and by processes outside gq, utilisation."""
        return {"gpus": ask(Op.GPUS)}

    @server.tool(annotations=reads)
    def offenders() -> dict[str, Any]:
        """Jobs and processes wasting cards (idle, over-declared, zombie memory), with the
        evidence and a suggestion each."""
        return {"offenders": ask(Op.OFFENDERS)}

    @server.tool(annotations=reads)
    def stats(since: str = "7d") -> dict[str, Any]:
        """The lab's numbers over the last `since` (e.g. 7d, 12h): health indicators,
        utilisation, waits, failures by class, GPU-hours per user."""
        from gq.units import parse_duration

        try:
            seconds = parse_duration(since)
        except ValueError as e:
            raise ToolError(f"gq: since: {e}") from None
        return ask(Op.STATS, since=seconds)

    @server.tool(annotations=reads)
    def triage(path: str, exit_code: int | None = None) -> dict[str, Any]:
        """Why a run died, from any log file (a Slurm job's output, an old run's log):
        failure (class), evidence (lines), suggestion."""
        from gq.cli.triage_cmd import triage_file

        try:
            return triage_file(path, exit_code)
        except GqError as e:
            raise ToolError(f"gq: {e}") from None

    @server.tool(annotations=acts(destructive=False, idempotent=False))
    def submit(command: list[str], gpus: StrictInt | str | GpuRange | None = None,
               mem: str | int | None = None, cpus: StrictInt | str | None = None,
               ram: str | int | None = None, time: str | None = None,
               priority: str | None = None, name: str | None = None, cwd: str | None = None,
               env: dict[str, str] | None = None, after: list[JobId] | None = None,
               retry_oom: StrictInt | str | None = None, hold: bool = False) -> dict[str, Any]:
        """Queue a job, as `gq submit`: command is the argv list. gpus: cards (default 1, 0
        for CPU-only), or a range '2-4' or {"min": 2, "max": 4} (as many as are free then);
        mem: memory per card like '20G' (without it, whole cards); time: a wall-time limit
        like '2h'; after: ids it starts after; priority: high, normal or low; retry_oom:
        retries with 1.5 times the memory after running out of GPU memory. Returns the queued
        job."""
        from gq.cli.client import submit_job
        from gq.cli.submit_args import request_args

        try:
            values: dict[str, Any] = {
                "gpus": text_gpus(gpus), "mem": text_count(mem), "ram": text_count(ram),
                "time": time, "priority": priority, "name": name, "cwd": cwd,
                "hold": hold or None, "cpus": text_count(cpus),
                "retry_oom": text_count(retry_oom),
                "env": [f"{k}={v}" for k, v in (env or {}).items()] or None,
                "after": [text_id(i) for i in after] if after else None}
            return submit_job(request_args({k: v for k, v in values.items() if v is not None},
                                           list(command)))
        except GqError as e:
            raise ToolError(f"gq: {e}") from None

    def action(op: str, ids: list[JobId], **args: Any) -> dict[str, Any]:
        return {"results": ask(op, ids=list(ids), **args)}

    @server.tool(annotations=acts(destructive=True, idempotent=True))
    def cancel(ids: list[JobId]) -> dict[str, Any]:
        """Stop jobs (SIGTERM to the process tree, SIGKILL after the grace) and forget them.
        Your own jobs only. Each result says ok and what happened."""
        return action(Op.CANCEL, ids)

    @server.tool(annotations=acts(destructive=False, idempotent=True))
    def hold(ids: list[JobId]) -> dict[str, Any]:
        """Keep pending jobs from starting until released."""
        return action(Op.HOLD, ids)

    @server.tool(annotations=acts(destructive=False, idempotent=True))
    def release(ids: list[JobId]) -> dict[str, Any]:
        """Let held jobs start."""
        return action(Op.RELEASE, ids)

    @server.tool(annotations=acts(destructive=False, idempotent=True))
    def update(ids: list[JobId], priority: str) -> dict[str, Any]:
        """Change the tier (high, normal, low) of pending or held jobs."""
        return action(Op.UPDATE, ids, priority=priority)

    @server.tool(annotations=acts(destructive=True, idempotent=False))
    def requeue(ids: list[JobId]) -> dict[str, Any]:
        """Queue jobs again with the same id: a running one is stopped as for preemption (it
        resumes from GQ_CHECKPOINT_DIR), an ended one is queued as it was."""
        return action(Op.REQUEUE, ids)

    return server


def _tail(path: str | None, lines: int) -> list[str]:
    """The last lines of a log, read as its user (this process runs as the caller)."""
    if not path:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise GqError(f"{path}: cannot read it: {e.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - MAX_BYTES)
        text = os.pread(fd, size - start, start).decode(errors="replace")
    finally:
        os.close(fd)
    return text.splitlines()[-lines:]


def serve() -> None:
    make_server().run("stdio")
