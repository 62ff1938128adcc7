"""MCPTools against servers no one here wrote: the reference 'everything' server (npm, stdio,
streamable HTTP and SSE) and mcp-server-time (PyPI)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.message_block import ImageBlock, TextBlock
from tenxgraph.mcp import MCPTools
from tests.mcp.conftest import node_bin, spare_port, stop, wait_for_port


def _check_everything(tools: MCPTools) -> None:
    by_name = {tool.name: tool for tool in tools.tools()}
    assert {"echo", "get-sum", "get-tiny-image", "get-resource-reference"} <= set(by_name)
    assert by_name["get-sum"].spec().parameters["properties"]["a"]["type"] == "number"


async def _use_everything(tools: MCPTools) -> None:
    _check_everything(tools)
    assert await tools.call("echo", {"message": "hi"}) == "Echo: hi"
    image = await tools.call("get-tiny-image", {})
    assert [type(b) for b in image] == [TextBlock, ImageBlock, TextBlock]
    assert image[1].media.mime_type == "image/png"
    resource = await tools.call("get-resource-reference", {"resourceType": "Text", "resourceId": 2})
    [embedded] = [b for b in resource if isinstance(b, TextBlock) and b.annotations]
    assert embedded.annotations[0].url.endswith("/2")


async def test_everything_over_stdio():
    server = node_bin("mcp-server-everything")
    async with MCPTools.stdio(str(server), "stdio", name="everything") as tools:
        await _use_everything(tools)


@pytest.fixture
def everything_http() -> Iterator[str]:
    server = node_bin("mcp-server-everything")
    port = spare_port()
    process = subprocess.Popen(
        [str(server), "streamableHttp"], env={**os.environ, "PORT": str(port)}
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


async def test_everything_over_streamable_http(everything_http):
    async with MCPTools.http(everything_http, name="everything") as tools:
        await _use_everything(tools)
        model = ScriptedModel(
            [
                Message(
                    role="assistant",
                    content=[ToolCallBlock(id="c1", name="get-sum", args={"a": 2, "b": 40})],
                ),
                "42",
            ]
        )
        result = await create_agent(model, [tools]).ainvoke({"messages": [("user", "sum")]})
    [answer] = [b for m in result["messages"] for b in m.tool_results()]
    assert "42" in str(answer.output)


@pytest.fixture
def everything_sse() -> Iterator[str]:
    server = node_bin("mcp-server-everything")
    port = spare_port()
    process = subprocess.Popen([str(server), "sse"], env={**os.environ, "PORT": str(port)})
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        stop(process)


async def test_everything_over_sse(everything_sse):
    async with MCPTools.sse(everything_sse, name="everything") as tools:
        await _use_everything(tools)


async def test_mcp_server_time_from_pypi():
    async with MCPTools.stdio(sys.executable, "-m", "mcp_server_time", name="time") as tools:
        names = {tool.name for tool in tools.tools()}
        assert {"get_current_time", "convert_time"} <= names
        now = await tools.call("get_current_time", {"timezone": "UTC"})
    text = now if isinstance(now, str) else str(now)
    assert "UTC" in text
