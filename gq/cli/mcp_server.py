"""`gq mcp`: gq's read commands and actions as Model Context Protocol tools, on stdio, for
coding agents (docs/agents.md). Each tool asks the daemon over its socket, as the CLI does: the
daemon knows the caller by the socket's credentials, so an agent may do what its user may do by
hand, nothing more. Needs the `mcp` extra: pip install 'gq[mcp]'."""

from __future__ import annotations

import os
from typing import Any

from gq.protocol import GqError

MAX_TAIL = 2000  # lines `logs` returns at most
MAX_BYTES = 256 << 10  # and bytes read from the end of the log

INSTRUCTIONS = (
    "gq is the GPU job queue of this host. Jobs are identified by numbers (or '@', your last "
    "job). Read with ls, show, why, logs, gpus, offenders, stats; triage classifies any log "
    "file. Act with submit, cancel, hold, release, update, requeue: they act as the user who "
    "runs this server, on that user's jobs only. A failed job's `failure` says why it died "
    "and `failure_suggestion` what to do."
)


def make_server():
    """The MCP server with every tool registered (the `mcp` package is imported here)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp_types import ToolAnnotations
    except ImportError:
        raise GqError("gq mcp needs the MCP SDK: pip install 'gq[mcp]' (or pip install mcp)"
                      ) from None
    server = MCPServer("gq", instructions=INSTRUCTIONS)
    reads = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    def acts(destructive: bool, idempotent: bool) -> Any:
        return ToolAnnotations(read_only_hint=False, destructive_hint=destructive,
                               idempotent_hint=idempotent, open_world_hint=False)

    def ask(op: str, **args: Any) -> Any:
        from gq.cli.client import call

        try:
            return call(op, **args)
        except GqError as e:
            raise ToolError(f"gq: {e}") from None

    @server.tool(annotations=reads)
    def ls(all: bool = False, user: str | None = None,
           states: list[str] | None = None) -> dict[str, Any]:
        """Jobs: pending and running ones, or also ended ones with all=true. Each has id,
        name, user, state, reason (why a pending one waits), gpus, mem (bytes), exit_code and,
        when it failed, failure (the class of why it died)."""
        return {"jobs": ask("list", all=all, user=user, states=states or [], brief=False)}

    @server.tool(annotations=reads)
    def show(id: str) -> dict[str, Any]:
        """Everything known about one job: its request, times, cards, history, and for a
        failed one failure, failure_evidence (log lines) and failure_suggestion."""
        return ask("show", id=id)

    @server.tool(annotations=reads)
    def why(id: str) -> dict[str, Any]:
        """Why a job waits and when it should start, or how it ended and, if it failed, why
        and what to do."""
        return ask("why", id=id)

    @server.tool(annotations=reads)
    def logs(id: str, stream: str = "stdout", tail: int = 100) -> dict[str, Any]:
        """The last `tail` lines (at most 2000) of a job's output: stream 'stdout' or
        'stderr'."""
        if stream not in ("stdout", "stderr"):
            raise ToolError("gq: stream: expected stdout or stderr")
        job = ask("show", id=id)
        lines = _tail(job.get(stream), max(1, min(int(tail), MAX_TAIL)))
        return {"id": job["id"], "state": job["state"], "stream": stream, "lines": lines}

    @server.tool(annotations=reads)
    def gpus() -> dict[str, Any]:
        """The cards: memory held by each job and by processes outside gq, utilisation."""
        return {"gpus": ask("gpus")}

    @server.tool(annotations=reads)
    def offenders() -> dict[str, Any]:
        """Jobs and processes wasting cards (idle, over-declared, zombie memory), with the
        evidence and a suggestion each."""
        return {"offenders": ask("offenders")}

    @server.tool(annotations=reads)
    def stats(since: str = "7d") -> dict[str, Any]:
        """The lab's numbers over the last `since` (e.g. 7d, 12h): health indicators,
        utilisation, waits, failures by class, GPU-hours per user."""
        from gq.units import parse_duration

        try:
            seconds = parse_duration(since)
        except ValueError as e:
            raise ToolError(f"gq: since: {e}") from None
        return ask("stats", since=seconds)

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
    def submit(command: list[str], gpus: str | None = None, mem: str | None = None,
               cpus: int | None = None, ram: str | None = None, time: str | None = None,
               priority: str | None = None, name: str | None = None, cwd: str | None = None,
               env: dict[str, str] | None = None, after: list[str] | None = None,
               retry_oom: int | None = None, hold: bool = False) -> dict[str, Any]:
        """Queue a job, as `gq submit`: command is the argv list. gpus: cards (default 1, 0
        for CPU-only); mem: memory per card like '20G' (without it, whole cards); time: a
        wall-time limit like '2h'; priority: high, normal or low; retry_oom: retries with 1.5
        times the memory after running out of GPU memory. Returns the queued job."""
        from gq.cli.client import submit_job
        from gq.cli.submit_args import request_args

        values: dict[str, Any] = {"gpus": gpus, "mem": mem, "ram": ram, "time": time,
                                  "priority": priority, "name": name, "cwd": cwd,
                                  "hold": hold or None}
        values.update(cpus=None if cpus is None else str(cpus),
                      retry_oom=None if retry_oom is None else str(retry_oom),
                      env=[f"{k}={v}" for k, v in (env or {}).items()] or None,
                      after=list(after) if after else None)
        try:
            return submit_job(request_args({k: v for k, v in values.items() if v is not None},
                                           list(command)))
        except GqError as e:
            raise ToolError(f"gq: {e}") from None

    def action(op: str, ids: list[str], **args: Any) -> dict[str, Any]:
        return {"results": ask(op, ids=list(ids), **args)}

    @server.tool(annotations=acts(destructive=True, idempotent=True))
    def cancel(ids: list[str]) -> dict[str, Any]:
        """Stop jobs (SIGTERM to the process tree, SIGKILL after the grace) and forget them.
        Your own jobs only. Each result says ok and what happened."""
        return action("cancel", ids)

    @server.tool(annotations=acts(destructive=False, idempotent=True))
    def hold(ids: list[str]) -> dict[str, Any]:
        """Keep pending jobs from starting until released."""
        return action("hold", ids)

    @server.tool(annotations=acts(destructive=False, idempotent=True))
    def release(ids: list[str]) -> dict[str, Any]:
        """Let held jobs start."""
        return action("release", ids)

    @server.tool(annotations=acts(destructive=False, idempotent=True))
    def update(ids: list[str], priority: str) -> dict[str, Any]:
        """Change the tier (high, normal, low) of pending or held jobs."""
        return action("update", ids, priority=priority)

    @server.tool(annotations=acts(destructive=True, idempotent=False))
    def requeue(ids: list[str]) -> dict[str, Any]:
        """Queue jobs again with the same id: a running one is stopped as for preemption (it
        resumes from GQ_CHECKPOINT_DIR), an ended one is queued as it was."""
        return action("requeue", ids)

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
