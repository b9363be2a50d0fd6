"""`gq mcp` with the MCP SDK's own stdio client, against real daemons: the tools and their
annotations, submit, why, logs, cancel, and another user's job refused (system mode)."""

from __future__ import annotations

import sys

import pytest

from tests.support.paths import ROOT

mcp = pytest.importorskip("mcp", reason="gq mcp needs the mcp extra: pip install 'gq[mcp]'")
import anyio  # noqa: E402  (the SDK's dependency)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

READS = {"ls", "show", "why", "logs", "gpus", "offenders", "stats", "triage"}
ACTIONS = {"submit", "cancel", "hold", "release", "update", "requeue"}


def run_session(params: StdioServerParameters, body) -> object:
    async def main():
        with anyio.fail_after(90):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await body(session)
    return anyio.run(main)


async def tool(session, tool_name: str, **args) -> dict:
    result = await session.call_tool(tool_name, args)
    assert not result.is_error, result.content
    return result.structured_content


async def refused(session, tool_name: str, **args) -> str:
    result = await session.call_tool(tool_name, args)
    assert result.is_error, result
    return result.content[0].text


def test_an_agent_lists_tools_submits_reads_why_and_cancels(host):
    params = StdioServerParameters(command=sys.executable, args=["-m", "gq", "mcp"],
                                   env=host.env, cwd=str(host.work))
    fails = ("import sys; print('epoch 1', flush=True); "
             "sys.exit('KeyError: 7 not in the label map')")

    async def body(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == READS | ACTIONS
        for name in READS:
            assert tools[name].annotations.read_only_hint is True, name
        for name in ACTIONS:
            assert tools[name].annotations.read_only_hint is False, name
        assert tools["cancel"].annotations.destructive_hint is True
        assert tools["requeue"].annotations.destructive_hint is True
        assert tools["submit"].annotations.destructive_hint is False

        failed = await tool(session, "submit", command=[sys.executable, "-c", fails], gpus="0",
                            name="agent-job")
        assert failed["name"] == "agent-job" and failed["user"]
        with anyio.fail_after(60):
            while (why := await tool(session, "why", id=str(failed["id"])))["failure"] is None:
                await anyio.sleep(0.1)
        assert why["failure"] == "data_error" and why["state"] == "failed"
        assert "KeyError: 7 not in the label map" in why["failure_evidence"][-1]
        assert "Failure: data_error" in why["why"] and why["failure_suggestion"]
        logs = await tool(session, "logs", id=str(failed["id"]), stream="stdout", tail=5)
        assert logs["lines"] == ["epoch 1"]
        listed = await tool(session, "ls", all=True)
        assert [j["failure"] for j in listed["jobs"] if j["id"] == failed["id"]] == [
            "data_error"]

        sleeper = await tool(session, "submit", command=["sleep", "60"], gpus="0")
        done = await tool(session, "cancel", ids=[str(sleeper["id"])])
        assert done["results"][0]["ok"] is True
        assert (await tool(session, "show", id=str(sleeper["id"])))["state"] == "cancelled"
        text = await refused(session, "submit", command=["true"], mem="12XB")
        assert "gq: --mem '12XB': expected a size" in text
        triaged = await tool(session, "triage",
                             path=str(ROOT / "tests/support/data/failures/nccl-pytorch-4921.log"))
        assert triaged["failure"] == "nccl"

    run_session(params, body)


@pytest.fixture
def system_host():
    from tests.support.sysmode import SystemHost, Users, require_root

    require_root()
    users = Users()
    host = SystemHost().start()
    try:
        yield host, users
    finally:
        host.close()
        users.remove()


def test_an_agent_cannot_touch_another_users_job(system_host):
    host, users = system_host
    alice, bob = users.user("a"), users.user("b")
    theirs = host.submit(alice, "--gpus", "0", "--", "sleep", "60")
    params = StdioServerParameters(
        command="setpriv",
        args=["--reuid", str(bob.uid), "--regid", str(bob.gid), "--init-groups",
              host.python, "-m", "gq", "mcp"],
        env=host.user_env(bob), cwd=bob.home)

    async def body(session):
        for action in ("cancel", "requeue", "hold"):
            text = await refused(session, action, ids=[str(theirs)])
            assert f"gq: job {theirs} belongs to {alice.name}; only {alice.name} or an admin" in (
                text), text
        mine = await tool(session, "submit", command=["true"], gpus="0")
        assert mine["user"] == bob.name  # identity from the socket, not from the request

    run_session(params, body)
    assert host.job(theirs)["state"] == "running"
