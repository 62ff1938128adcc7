"""MCPTools against servers written with the official SDK: schemas, results, faults, lifetimes."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.message_block import ImageBlock, TextBlock
from tenxgraph.errors import ConfigError
from tenxgraph.mcp import MCPServerError, MCPTools
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.storage.media import FilesystemMediaStore, MediaPolicy


def calls(*pairs: tuple[str, dict[str, Any]]) -> Message:
    blocks = [ToolCallBlock(id=f"c{i}", name=n, args=a) for i, (n, a) in enumerate(pairs)]
    return Message(role="assistant", content=blocks)


def results(result: dict[str, Any]) -> list[Any]:
    return [block for m in result["messages"] for block in m.tool_results()]


async def test_stdio_tools_are_listed_with_their_schemas_and_called(sdk_command):
    async with MCPTools.stdio(*sdk_command, "tools", name="sdk") as tools:
        names = [t.name for t in tools.tools()]
        assert {"echo", "add", "picture", "fail", "grow", "slow"} <= set(names)
        add = next(t for t in tools.tools() if t.name == "add")
        spec = add.spec()
        assert spec.description == "Add two integers."
        assert spec.parameters["properties"]["a"]["type"] == "integer"
        assert sorted(spec.parameters["required"]) == ["a", "b"]
        assert await tools.call("add", {"a": 2, "b": 3}) == {"result": 5}
        assert await tools.call("echo", {"text": "hi"}) == {"result": "hi"}


async def test_an_agent_calls_mcp_tools_and_gets_text_images_and_errors(sdk_command, tmp_path):
    model = ScriptedModel(
        [
            calls(("add", {"a": 1, "b": 2}), ("picture", {}), ("fail", {}), ("add", {"a": "x"})),
            "done",
        ]
    )
    store = FilesystemMediaStore(tmp_path / "media")
    checkpointer = SqliteCheckpointer(tmp_path / "t.db", media=MediaPolicy(store, offload_bytes=0))
    async with MCPTools.stdio(*sdk_command, "tools") as tools:
        app = create_agent(model, [tools], checkpointer=checkpointer)
        result = await app.ainvoke({"messages": [("user", "go")]}, {"thread_id": "t1"})
    add, picture, fail, bad = results(result)
    assert not add.is_error and add.output == {"result": 3}
    text, image = picture.output
    assert isinstance(text, TextBlock) and isinstance(image, ImageBlock)
    assert fail.is_error and "Error executing tool fail" in fail.output
    assert bad.is_error and "invalid arguments for MCP tool 'add'" in bad.output
    assert {spec.name for spec in model.requests[0].tools} >= {"add", "picture"}
    stored = await app.aget_state({"thread_id": "t1"})
    [stored_picture] = [b for m in stored.context for b in m.tool_results() if b.call_id == "c1"]
    url = stored_picture.output[1].media.url
    assert url.startswith("graph://media/")  # the image went to the media store
    await checkpointer.aclose()


async def test_a_tool_the_server_adds_is_seen_by_the_next_model_call(sdk_command):
    # the change notice travels beside the call's answer: a second call (echo) lets it land
    model = ScriptedModel(
        [calls(("grow", {})), calls(("echo", {"text": "x"})), calls(("extra", {})), "done"]
    )
    async with MCPTools.stdio(*sdk_command, "tools") as tools:
        app = create_agent(model, [tools])
        result = await app.ainvoke({"messages": [("user", "grow")]})
    assert "extra" not in {spec.name for spec in model.requests[0].tools}
    assert "extra" in {spec.name for spec in model.requests[2].tools}
    _grow, _echo, extra = results(result)
    assert extra.output == {"result": "extra here"}


async def test_a_hung_server_gives_an_error_result_and_a_log_line(sdk_command, caplog):
    model = ScriptedModel([calls(("wait", {})), "the server hangs"])
    caplog.set_level(logging.WARNING, "tenxgraph.mcp")
    async with MCPTools.stdio(*sdk_command, "hung", name="hung", timeout=1) as tools:
        app = create_agent(model, [tools])
        result = await app.ainvoke({"messages": [("user", "wait")]})
        [wait] = results(result)
        assert wait.is_error and "MCP server 'hung' did not answer within 1 s" in wait.output
        assert await tools.call("echo", {"text": "still here"}) == {"result": "still here"}
    assert "MCP server 'hung': tool 'wait' gave no answer in 1 s" in caplog.text


async def test_a_crashing_server_gives_an_error_result_and_is_started_again(sdk_command, caplog):
    caplog.set_level(logging.WARNING, "tenxgraph.mcp")
    model = ScriptedModel([calls(("die", {})), calls(("echo", {"text": "back"})), "done"])
    async with MCPTools.stdio(
        *sdk_command, "crash", name="crash", timeout=20, retry_after=0
    ) as tools:
        app = create_agent(model, [tools])
        result = await app.ainvoke({"messages": [("user", "die")]})
    die, echo = results(result)
    assert die.is_error and "MCP server 'crash'" in die.output
    assert not echo.is_error and echo.output == {"result": "back"}  # a new process
    assert "crash" in caplog.text


async def test_an_unreachable_server_fails_calls_without_failing_the_run(caplog):
    caplog.set_level(logging.ERROR, "tenxgraph.mcp")
    tools = MCPTools.stdio(sys.executable, "-c", "import sys; sys.exit(2)", name="gone")
    model = ScriptedModel(["no tools today"])
    app = create_agent(model, [tools])
    result = await app.ainvoke({"messages": [("user", "hi")]})
    assert result["messages"][-1].text() == "no tools today"
    assert model.requests[0].tools == []
    assert "MCP server 'gone' is unavailable" in caplog.text
    with pytest.raises(MCPServerError, match="MCP server 'gone' is not connected"):
        await tools.call("echo", {"text": "x"})
    await tools.aclose()


async def test_a_closed_http_port_is_unavailable_not_a_hang(caplog):
    from tests.mcp.conftest import spare_port

    caplog.set_level(logging.ERROR, "tenxgraph.mcp")
    tools = MCPTools.http(f"http://127.0.0.1:{spare_port()}/mcp", name="nobody", connect_timeout=5)
    await tools.aprepare()
    assert tools.tools() == []
    assert "MCP server 'nobody' is unavailable" in caplog.text
    await tools.aclose()


async def test_a_huge_result_is_cut_and_says_so(sdk_command):
    async with MCPTools.stdio(*sdk_command, "huge", max_output_chars=1000) as tools:
        output = await tools.call("flood", {})
    assert isinstance(output, str) and len(output) < 1200
    assert output.endswith("4999000 more characters of this MCP result were cut]")


async def test_a_stopped_call_is_cancelled_and_the_session_goes_on(sdk_command):
    model = ScriptedModel([calls(("slow", {"seconds": 60})), "gave up"])
    async with MCPTools.stdio(*sdk_command, "tools") as tools:
        app = create_agent(model, [tools], tool_timeout=0.5)
        result = await app.ainvoke({"messages": [("user", "slow")]})
        [slow] = results(result)
        assert slow.is_error and "timed out" in slow.output
        assert await tools.call("echo", {"text": "next"}) == {"result": "next"}


async def test_streamable_http(http_server):
    url = http_server("tools")
    async with MCPTools.http(url, prefix="web_") as tools:
        assert "web_add" in {t.name for t in tools.tools()}
        model = ScriptedModel([calls(("web_add", {"a": 40, "b": 2})), "42"])
        app = create_agent(model, [tools])
        result = await app.ainvoke({"messages": [("user", "add")]})
    [add] = results(result)
    assert add.output == {"result": 42}


async def test_sse(http_server):
    url = http_server("tools", "sse")
    assert url.endswith("/sse")
    async with MCPTools.sse(url, prefix="old_", headers={"x-api-key": "k"}) as tools:
        assert tools.transport == "sse"
        model = ScriptedModel([calls(("old_add", {"a": 40, "b": 2}), ("old_picture", {})), "42"])
        app = create_agent(model, [tools])
        result = await app.ainvoke({"messages": [("user", "add")]})
        assert await tools.call("header", {"name": "x-api-key"}) == {"result": "k"}
    add, picture = results(result)
    assert add.output == {"result": 42}
    assert isinstance(picture.output[1], ImageBlock)


async def test_sse_faults_are_results_not_hangs(http_server, caplog):
    """A hung call times out and the session goes on; a server that dies fails the call at once."""
    caplog.set_level(logging.WARNING, "tenxgraph.mcp")
    async with MCPTools.sse(http_server("hung", "sse"), name="hung", timeout=1) as tools:
        with pytest.raises(MCPServerError, match="MCP server 'hung' did not answer within 1 s"):
            await tools.call("wait", {})
        assert await tools.call("echo", {"text": "still here"}) == {"result": "still here"}
    async with MCPTools.sse(http_server("crash", "sse"), name="crash", timeout=60) as tools:
        with pytest.raises(MCPServerError, match="MCP server 'crash'"):
            await tools.call("die", {})  # the event stream breaks: no 60 s wait
        with pytest.raises(MCPServerError, match="MCP server 'crash' is not connected"):
            await tools.call("echo", {"text": "x"})
    assert "MCP server 'crash' is unavailable" in caplog.text


async def test_a_closed_sse_port_is_unavailable_not_a_hang(caplog):
    from tests.mcp.conftest import spare_port

    caplog.set_level(logging.ERROR, "tenxgraph.mcp")
    url = f"http://127.0.0.1:{spare_port()}/sse"
    tools = MCPTools.sse(url, name="nobody", connect_timeout=5)
    await tools.aprepare()
    assert tools.tools() == []
    assert "MCP server 'nobody' is unavailable" in caplog.text
    with pytest.raises(MCPServerError, match="MCP server 'nobody' is not connected"):
        await tools.call("echo", {"text": "x"})
    await tools.aclose()


def test_sync_invoke_connects_on_its_own_loop(sdk_command):
    tools = MCPTools.stdio(*sdk_command, "tools", include=["add"])
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1})), "2"])
    app = create_agent(model, [tools])
    result = app.invoke({"messages": [("user", "add")]})
    [add] = results(result)
    assert add.output == {"result": 2}
    assert [spec.name for spec in model.requests[0].tools] == ["add"]
    from tenxgraph._sync import run_sync

    run_sync(tools.aclose())


def test_bad_options_are_refused_before_anything_starts():
    with pytest.raises(ConfigError, match="http"):
        MCPTools("ftp://example/mcp")
    with pytest.raises(ConfigError, match="command line"):
        MCPTools([])
    with pytest.raises(ConfigError, match="headers"):
        MCPTools.stdio("x", headers={"a": "b"})
    with pytest.raises(ConfigError, match="timeout"):
        MCPTools.stdio("x", timeout=0)
    with pytest.raises(ConfigError, match="http"):
        MCPTools.sse("127.0.0.1:8000/sse")
    with pytest.raises(ConfigError, match="the sse MCP transport takes a URL"):
        MCPTools(["server", "--stdio"], transport="sse")
    with pytest.raises(ConfigError, match="the stdio MCP transport takes a command line"):
        MCPTools("http://127.0.0.1/sse", transport="stdio")
    with pytest.raises(ConfigError, match="'stdio', 'http' or 'sse'"):
        MCPTools("http://127.0.0.1/ws", transport="websocket")  # type: ignore[arg-type]


async def test_direct_calls_reach_mcp_tools(sdk_command):
    async with MCPTools.stdio(*sdk_command, "tools") as tools:
        app = create_agent(ScriptedModel([]), [tools])
        block = await app.acall_tool("add", {"a": 5, "b": 5})
    assert block.output == {"result": 10}
    await asyncio.sleep(0)


async def test_concurrent_first_uses_share_one_session(sdk_command):
    tools = MCPTools.stdio(*sdk_command, "tools")
    answers = await asyncio.gather(*(tools.call("add", {"a": i, "b": 1}) for i in range(4)))
    assert answers == [{"result": i + 1} for i in range(4)]
    [session] = tools._sessions.values()
    assert session.alive()
    await tools.aclose()
    assert not session.alive()


async def test_middleware_wraps_mcp_calls_like_any_tool_call(sdk_command):
    """MCP tools are ordinary tools: wrap_tool_call sees their calls and may answer them."""
    from tenxgraph.core.graph import ToolOutcome, wrap_tool_call

    seen: list[str] = []

    @wrap_tool_call
    async def refuse_fail(call, handler):
        seen.append(call.name)
        if call.name == "fail":
            return ToolOutcome("refused by policy", is_error=True)
        return await handler(call)

    model = ScriptedModel([calls(("add", {"a": 20, "b": 22}), ("fail", {})), "42"])
    async with MCPTools.stdio(*sdk_command, "tools") as tools:
        app = create_agent(model, [tools], middleware=[refuse_fail])
        result = await app.ainvoke({"messages": [("user", "add")]})
    add, fail = results(result)
    assert sorted(seen) == ["add", "fail"]
    assert add.output == {"result": 42}
    assert fail.is_error and fail.output == "refused by policy"


async def test_a_handshake_era_session_picks_up_the_change_notice_too(sdk_command):
    async with MCPTools.stdio(*sdk_command, "tools", protocol="legacy") as tools:
        assert "extra" not in {t.name for t in tools.tools()}
        await tools.call("grow", {})
        for _ in range(200):  # the notice is handled beside the call's answer, not before it
            await tools.aprepare()
            if "extra" in {t.name for t in tools.tools()}:
                break
            await asyncio.sleep(0.05)
        assert "extra" in {t.name for t in tools.tools()}


async def test_a_swarm_member_keeps_its_mcp_tools(sdk_command):
    from tenxgraph.core.graph import create_swarm
    from tenxgraph.storage.checkpointer import InMemoryCheckpointer

    math_model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), "3"])
    async with MCPTools.stdio(*sdk_command, "tools", include=["add"]) as tools:
        math = create_agent(math_model, [tools], name="math")
        writer = create_agent(ScriptedModel([]), name="writer")
        swarm = create_swarm([math, writer], checkpointer=InMemoryCheckpointer())
        assert swarm.toolsets() == [tools]
        result = await swarm.ainvoke({"messages": [("user", "1+2")]}, {"thread_id": "s"})
    [add] = results(result)
    assert add.output == {"result": 3}
    offered = {spec.name for spec in math_model.requests[0].tools}
    assert {"add", "transfer_to_writer"} <= offered
