"""`gq mcp` with the MCP SDK's own stdio client, against real daemons: the tools and their
annotations, submit, why, logs, cancel, every tool with the integers an agent sends, refusals
in gq's words, and another user's job refused (system mode)."""

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


def server_of(host) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "gq", "mcp"],
                                 env=host.env, cwd=str(host.work))


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
        shown = await tool(session, "show", id=str(sleeper["id"]))
        # `stopping` until its run has let go of its card (docs/reliability.md)
        assert "cancelled" in (shown["state"], shown["stop"]), shown
        text = await refused(session, "submit", command=["true"], mem="12XB")
        assert "gq: --mem '12XB': expected a size" in text
        triaged = await tool(session, "triage",
                             path=str(ROOT / "tests/data/triage/dev/nccl-pytorch-4921.log"))
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


def test_every_tool_takes_the_integers_an_agent_sends(host):
    import gq

    async def body(session):
        assert session.server_info.name == "gq" and session.server_info.version == gq.__version__
        ran = await tool(session, "submit", command=["true"], gpus=1, cpus=1, retry_oom=1)
        ranged = await tool(session, "submit", command=["sleep", "60"],
                            gpus={"min": 1, "max": 2}, after=[ran["id"]], hold=True)
        assert (ranged["gpus"], ranged["gpus_max"]) == (1, 2)
        texts = await tool(session, "submit", command=["sleep", "60"], gpus="1-2", hold=True)
        assert (texts["gpus"], texts["gpus_max"]) == (1, 2)
        with anyio.fail_after(60):
            while (await tool(session, "show", id=ran["id"]))["state"] != "completed":
                await anyio.sleep(0.1)
        assert (await tool(session, "why", id=ran["id"]))["state"] == "completed"
        assert (await tool(session, "logs", id=ran["id"], tail=3))["lines"] == []
        assert (await tool(session, "show", id="@"))["id"] == texts["id"]
        assert [j["id"] for j in (await tool(session, "ls", all=True))["jobs"]] == [
            ran["id"], ranged["id"], texts["id"]]
        assert len((await tool(session, "gpus"))["gpus"]) == 4
        assert (await tool(session, "offenders"))["offenders"] == []
        assert "health" in await tool(session, "stats", since="1d")
        log = ROOT / "tests/data/triage/dev/nccl-pytorch-4921.log"
        assert (await tool(session, "triage", path=str(log), exit_code=1))["failure"] == "nccl"
        for action, args in (("update", {"priority": "high"}), ("hold", {}), ("release", {}),
                             ("cancel", {})):
            done = await tool(session, action, ids=[texts["id"], str(ranged["id"])], **args)
            assert [r["ok"] for r in done["results"]] == [True, True], (action, done)
        assert (await tool(session, "requeue", ids=[ran["id"]]))["results"][0]["ok"] is True

        # Refusals: gq's one line, never the validation library's words.
        for text in (await refused(session, "show", id=True),
                     await refused(session, "cancel", ids=[1.5]),
                     await refused(session, "submit", command=["true"], gpus=[2])):
            assert text.startswith("gq: ") and "\n" not in text, text
            assert "pydantic" not in text and "Input should" not in text, text
        assert await refused(session, "show", id=True) == (
            "gq: show: id: expected a job id like 12, '12_3' or '@'")
        assert await refused(session, "show", id=99999) == "gq: job id 99999: no such job"
        assert await refused(session, "why") == "gq: why: id is required"
        bad_size = await refused(session, "submit", command=["true"], mem=12)
        assert bad_size.startswith("gq: --mem '12'") and "\n" not in bad_size, bad_size
        assert (await refused(session, "submit", command=["true"], ram="lots")).startswith(
            "gq: --ram 'lots'")
        unknown = await refused(session, "kill", ids=[1])
        assert unknown.startswith("gq: no tool 'kill'; the tools are cancel, gpus, "), unknown

    run_session(server_of(host), body)
