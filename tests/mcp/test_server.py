"""A graph as an MCP tool: in process, `tenxgraph mcp` over stdio, `/mcp` on `tenxgraph serve`.

Checked with the official `mcp` client, with tenxgraph's own MCPTools, and with the MCP
Inspector's CLI (npm; skipped without node).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.mcp import MCPTools, graph_server
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tests.mcp.conftest import node_bin, spare_port, stop, wait_for_port
from tests.mcp.served_graph import graph as served

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.mcp.served_graph:graph"


async def test_calls_of_one_connection_continue_one_thread_unless_told():
    app = served.recompile(checkpointer=InMemoryCheckpointer())
    async with Client(graph_server(app)) as client:
        [tool] = (await client.list_tools()).tools
        assert tool.name == "ask" and tool.input_schema["required"] == ["message"]
        first = (await client.call_tool("ask", {"message": "one"})).structured_content
        second = (await client.call_tool("ask", {"message": "two"})).structured_content
        other = await client.call_tool("ask", {"message": "three", "thread_id": "elsewhere"})
    assert first["answer"] == "1 message(s), last: one"
    assert second["answer"] == "2 message(s), last: two"
    assert first["thread_id"] == second["thread_id"] != "elsewhere"
    assert other.structured_content == {
        "answer": "1 message(s), last: three",
        "thread_id": "elsewhere",
        "interrupt": None,
    }
    stored = await app.aget_state({"thread_id": "elsewhere"})
    assert [m.role for m in stored.context] == ["user", "assistant"]


async def test_a_graph_without_a_checkpointer_runs_each_call_afresh():
    app = create_agent(ScriptedModel(["a", "b"]))
    async with Client(graph_server(app, tool="agent")) as client:
        result = await client.call_tool("agent", {"message": "hi"})
    assert result.structured_content == {"answer": "a", "thread_id": None, "interrupt": None}


async def test_tenxgraph_mcp_over_stdio_with_the_official_client(tmp_path):
    db = str(tmp_path / "threads.db")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tenxgraph.cli", "mcp", TARGET, "--db", db, "--user", "ana"],
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        one = (await client.call_tool("ask", {"message": "hello"})).structured_content
        two = (await client.call_tool("ask", {"message": "again"})).structured_content
    assert two["answer"] == "2 message(s), last: again"
    assert one["thread_id"] == two["thread_id"]
    from tenxgraph.storage.checkpointer import SqliteCheckpointer

    checkpointer = SqliteCheckpointer(db)
    app = served.recompile(checkpointer=checkpointer)
    state = await app.aget_state({"thread_id": one["thread_id"], "user_id": "ana"})
    assert state is not None and len(state.context) == 4
    await checkpointer.aclose()


async def test_tenxgraph_mcp_is_a_tool_of_another_tenxgraph_agent(tmp_path):
    """MCP out, then in: tenxgraph's own client calls a tenxgraph graph served over stdio."""
    command = [sys.executable, "-m", "tenxgraph.cli", "mcp", TARGET, "--tool", "counter"]
    async with MCPTools(
        [*command, "--db", str(tmp_path / "t.db")], cwd=str(ROOT), name="counter"
    ) as tools:
        assert [t.name for t in tools.tools()] == ["counter"]
        answer = await tools.call("counter", {"message": "hi", "thread_id": "t1"})
    assert answer == {"answer": "1 message(s), last: hi", "thread_id": "t1", "interrupt": None}


@pytest.fixture
def served_http(tmp_path) -> Iterator[str]:
    """`tenxgraph serve` of the counting graph with keys k-ana (ana) and k-bo (bo): its base URL."""
    port = spare_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "tenxgraph.cli", "serve", TARGET,
            "--db", str(tmp_path / "served.db"), "--port", str(port),
            "--api-key", "k-ana=ana", "--api-key", "k-bo=bo",
        ],
        cwd=str(ROOT),
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


async def test_the_mcp_endpoint_of_serve_is_behind_the_api_keys(served_http):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url = f"{served_http}/mcp"
    async with (
        httpx2.AsyncClient(headers={"x-api-key": "k-ana"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        answer = await client.call_tool("ask", {"message": "hi", "thread_id": "mine"})
        again = await client.call_tool("ask", {"message": "ho", "thread_id": "mine"})
    assert answer.structured_content["answer"] == "1 message(s), last: hi"
    assert again.structured_content["answer"] == "2 message(s), last: ho"
    with httpx.Client(base_url=served_http) as http:
        refused = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401
        own = http.get("/threads/mine/state", headers={"x-api-key": "k-ana"})
        assert own.status_code == 200  # the MCP call's thread is ana's ordinary thread
        other = http.get("/threads/mine/state", headers={"x-api-key": "k-bo"})
        assert other.status_code == 404


async def test_mcp_tools_reach_serve_with_a_key(served_http):
    async with MCPTools.http(f"{served_http}/mcp", headers={"authorization": "Bearer k-bo"}) as t:
        answer = await t.call("ask", {"message": "hey", "thread_id": "bo-1"})
    assert answer["answer"] == "1 message(s), last: hey"


def _inspector(*args: str) -> dict:
    inspector = node_bin("mcp-inspector")
    done = subprocess.run(
        [str(inspector), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_lists_and_calls_tenxgraph_mcp_over_stdio(tmp_path):
    base = [sys.executable, "-m", "tenxgraph.cli", "mcp", TARGET, "--db", str(tmp_path / "i.db")]
    listed = _inspector(*base, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["ask"]
    called = _inspector(
        *base, "--method", "tools/call", "--tool-name", "ask", "--tool-arg", "message=hello"
    )
    assert called["structuredContent"]["answer"] == "1 message(s), last: hello"


def test_the_inspector_calls_the_endpoint_of_serve_with_a_key(served_http):
    url = f"{served_http}/mcp"
    called = _inspector(
        url, "--transport", "http", "--header", "x-api-key: k-ana",
        "--method", "tools/call", "--tool-name", "ask",
        "--tool-arg", "message=hi", "--tool-arg", "thread_id=inspected",
    )  # fmt: skip
    assert called["structuredContent"]["thread_id"] == "inspected"
    assert not called.get("isError")


def test_an_app_opens_the_graphs_mcp_servers_at_start_and_closes_them_at_stop(sdk_command):
    """What each `tenxgraph serve` worker does with the MCP servers its graph uses."""
    from fastapi.testclient import TestClient

    from tenxgraph.server import create_app

    tools = MCPTools.stdio(*sdk_command, "tools", name="sdk")
    model = ScriptedModel([])
    app = create_agent(model, [tools], checkpointer=InMemoryCheckpointer())
    assert app.toolsets() == [tools]
    with TestClient(create_app(app)) as client:
        assert client.get("/ok").status_code == 200
        assert "add" in {tool.name for tool in tools.tools()}  # listed at start
        [session] = tools._sessions.values()
        assert session.alive()
    assert tools._sessions == {}  # closed at stop
    assert not session.alive()


def test_serving_a_graph_leaves_the_applications_logging_alone():
    """The SDK's MCPServer() calls logging.basicConfig; a fresh process shows it did not."""
    code = (
        "import logging\n"
        "from tenxgraph.core.graph import create_agent\n"
        "from tenxgraph.core.llm import ScriptedModel\n"
        "from tenxgraph.mcp import graph_server\n"
        "graph_server(create_agent(ScriptedModel([])))\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), logging.getLevelName(root.level))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=True
    )
    assert done.stdout.split() == ["0", "WARNING"]


async def test_a_question_of_the_graph_is_answered_by_the_next_message():
    from tenxgraph.core.graph import interrupt
    from tenxgraph.core.state import Message, ToolCallBlock

    def deploy(env: str) -> str:
        """Deploy to an environment."""
        return f"deployed to {env}: {interrupt({'question': f'deploy to {env}?'})}"

    call = ToolCallBlock(id="c1", name="deploy", args={"env": "prod"})
    model = ScriptedModel([Message(role="assistant", content=[call]), "Deployed."])
    app = create_agent(model, [deploy], checkpointer=InMemoryCheckpointer())
    async with Client(graph_server(app)) as client:
        asked = await client.call_tool("ask", {"message": "deploy", "thread_id": "d"})
        done = await client.call_tool("ask", {"message": "yes", "thread_id": "d"})
    assert asked.structured_content["interrupt"] == {"question": "deploy to prod?"}
    assert done.structured_content["answer"] == "Deployed."
    state = await app.aget_state({"thread_id": "d"})
    [result] = [b for m in state.context for b in m.tool_results()]
    assert result.output == "deployed to prod: yes"


def _deploy_agent(**pauses: list[str]) -> tuple[Any, ScriptedModel]:
    from tenxgraph.core.state import Message, ToolCallBlock

    def deploy(env: str) -> str:
        """Deploy to an environment."""
        return f"deployed to {env}"

    call = ToolCallBlock(id="c1", name="deploy", args={"env": "prod"})
    model = ScriptedModel([Message(role="assistant", content=[call]), "Deployed."])
    app = create_agent(model, [deploy], checkpointer=InMemoryCheckpointer())
    return app.recompile(**pauses), model


WAITING = [{"name": "deploy", "args": {"env": "prod"}}]


@pytest.mark.parametrize(
    ("pauses", "shown"),
    [
        (
            {"interrupt_before": ["tools"]},
            {"paused": "before", "node": "tools", "tool_calls": WAITING},
        ),
        ({"interrupt_after": ["tools"]}, {"paused": "after", "node": "tools"}),
    ],
)
async def test_a_pause_at_a_node_shows_where_and_the_next_message_goes_on(pauses, shown):
    app, model = _deploy_agent(**pauses)
    async with Client(graph_server(app)) as client:
        paused = await client.call_tool("ask", {"message": "deploy", "thread_id": "d"})
        done = await client.call_tool("ask", {"message": "go ahead", "thread_id": "d"})
    assert not paused.is_error and paused.structured_content["thread_id"] == "d"
    assert paused.structured_content["interrupt"] == shown
    assert not done.is_error, done.content
    assert done.structured_content == {"answer": "Deployed.", "thread_id": "d", "interrupt": None}
    state = await app.aget_state({"thread_id": "d"})
    [result] = [b for m in state.context for b in m.tool_results()]
    assert result.output == "deployed to prod"
    said = [m.text() for m in state.context if m.role == "user"]
    assert said == ["deploy"]  # the go-ahead is not a message of the conversation
    assert len(model.requests) == 2


async def test_a_resumed_run_that_adds_no_message_answers_with_the_threads_last():
    app = create_agent(ScriptedModel(["Hello there."]), checkpointer=InMemoryCheckpointer())
    app = app.recompile(interrupt_after=["agent"])
    async with Client(graph_server(app)) as client:
        paused = await client.call_tool("ask", {"message": "hi", "thread_id": "r"})
        done = await client.call_tool("ask", {"message": "go on", "thread_id": "r"})
    assert paused.structured_content["interrupt"] == {"paused": "after", "node": "agent"}
    assert paused.structured_content["answer"] == "Hello there."
    answered = {"answer": "Hello there.", "thread_id": "r", "interrupt": None}
    assert done.structured_content == answered


async def test_what_the_thread_refuses_comes_back_as_the_tools_error_text():
    app = create_agent(ScriptedModel([]), checkpointer=InMemoryCheckpointer())  # no answers
    async with Client(graph_server(app)) as client:
        failed = await client.call_tool("ask", {"message": "hi", "thread_id": "f"})
        again = await client.call_tool("ask", {"message": "hello?", "thread_id": "f"})
    assert failed.is_error and "script" in failed.content[0].text.lower()
    assert again.is_error and "rollback" in again.content[0].text
