"""MCPTools against servers no one here wrote: the reference 'everything' server (npm, stdio,
streamable HTTP and SSE; its resources and prompts too) and mcp-server-time (PyPI)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.message_block import DataBlock, ImageBlock, TextBlock
from tenxgraph.errors import ConfigError
from tenxgraph.mcp import MCPServerError, MCPTools
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


async def test_everything_resources_and_prompts_over_stdio():
    server = node_bin("mcp-server-everything")
    async with MCPTools.stdio(str(server), "stdio", name="everything") as tools:
        resources = await tools.list_resources()
        templates = {t.name: t.uri_template for t in await tools.list_resource_templates()}
        prompts = {p.name: p for p in await tools.list_prompts()}
        [document] = await tools.read_resource(resources[0].uri)
        [blob] = await tools.read_resource(templates["Dynamic Blob Resource"].format(resourceId=3))
        [asked] = await tools.get_prompt("args-prompt", {"city": "Paris"})
        text, embedded = await tools.get_prompt(
            "resource-prompt", {"resourceType": "Text", "resourceId": "2"}
        )
        with pytest.raises(MCPServerError, match=r"resource 'demo://nope'.*not found"):
            await tools.read_resource("demo://nope")
        with pytest.raises(MCPServerError, match=r"prompt 'resource-prompt'.*Invalid resourceType"):
            await tools.get_prompt("resource-prompt", {"resourceType": "X", "resourceId": "1"})
        with pytest.raises(ConfigError, match="'args-prompt' needs the argument 'city'"):
            await tools.get_prompt("args-prompt", {"state": "TX"})
    assert resources[0].uri.startswith("demo://resource/static/document/")
    assert isinstance(document, TextBlock) and document.annotations[0].url == resources[0].uri
    assert isinstance(blob, DataBlock)
    assert base64.b64decode(blob.data_base64 or "").startswith(b"Resource 3:")
    city = prompts["args-prompt"].arguments[0]
    assert (city.name, city.required, city.description) == ("city", True, "Name of the city")
    assert (asked.role, asked.text()) == ("user", "What's weather in Paris?")
    assert "Text resource with id: 2" in text.text()
    [block] = embedded.content
    assert isinstance(block, TextBlock) and block.annotations[0].url.endswith("/text/2")


def _serve_everything(mode: str, path: str) -> Iterator[str]:
    """server-everything in ``mode`` on a spare port; yields its endpoint's URL."""
    server = node_bin("mcp-server-everything")
    port = spare_port()
    process = subprocess.Popen([str(server), mode], env={**os.environ, "PORT": str(port)})
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        stop(process)


@pytest.fixture
def everything_http() -> Iterator[str]:
    yield from _serve_everything("streamableHttp", "/mcp")


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
    yield from _serve_everything("sse", "/sse")


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
