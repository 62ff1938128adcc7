"""An MCP server's resources and prompts through MCPTools: listed as tenxgraph models, read as
content blocks, filled in as messages; bad input and bad servers give errors that say why."""

from __future__ import annotations

import base64
import logging
import sys

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import DataBlock, ImageBlock, TextBlock
from tenxgraph.errors import ConfigError
from tenxgraph.mcp import (
    MCPPrompt,
    MCPPromptArgument,
    MCPResource,
    MCPResourceTemplate,
    MCPServerError,
    MCPTools,
)
from tests.mcp.servers import PNG


async def test_resources_are_listed_and_read_as_content_blocks(sdk_command):
    async with MCPTools.stdio(*sdk_command, "catalog", name="notes") as notes:
        resources = {r.uri: r for r in await notes.list_resources()}
        assert resources["notes://today"] == MCPResource(
            uri="notes://today", name="today", description="Today's notes.", mime_type="text/plain"
        )
        assert resources["notes://pixel"].mime_type == "image/png"
        [template] = await notes.list_resource_templates()
        assert template == MCPResourceTemplate(
            uri_template="notes://day/{day}",
            name="day",
            description="The notes of a day.",
            mime_type="text/plain",
        )
        [today] = await notes.read_resource("notes://today")
        [pixel] = await notes.read_resource("notes://pixel")
        [archive] = await notes.read_resource("notes://archive")
        [monday] = await notes.read_resource("notes://day/monday")
    assert isinstance(today, TextBlock) and today.text == "Buy milk. Call Ana."
    assert today.annotations[0].url == "notes://today"
    assert isinstance(pixel, ImageBlock) and pixel.media.kind == "data"
    assert pixel.media.mime_type == "image/png" and pixel.media.data_base64 == PNG
    assert isinstance(archive, DataBlock) and archive.mime_type == "application/zip"
    assert base64.b64decode(archive.data_base64 or "").startswith(b"PK")
    assert isinstance(monday, TextBlock) and monday.text == "notes of monday"


async def test_a_resource_goes_into_a_message_the_model_reads(sdk_command):
    model = ScriptedModel(["You should buy milk."])
    async with MCPTools.stdio(*sdk_command, "catalog") as notes:
        blocks = await notes.read_resource("notes://today")
    note = Message(role="user", content=[TextBlock(text="My notes:"), *blocks])
    result = await create_agent(model).ainvoke({"messages": [note]})
    assert result["messages"][-1].text() == "You should buy milk."
    [sent] = model.requests[0].messages
    assert sent.text() == "My notes:Buy milk. Call Ana."


async def test_a_long_resource_is_cut_and_says_so(sdk_command):
    async with MCPTools.stdio(*sdk_command, "catalog", max_output_chars=1000) as notes:
        [long] = await notes.read_resource("notes://long")
    assert isinstance(long, TextBlock) and len(long.text) < 1200
    assert long.text.endswith("99000 more characters of this MCP result were cut]")


async def test_prompts_are_listed_and_filled_in_as_messages_for_the_state(sdk_command):
    model = ScriptedModel(["A short summary."])
    async with MCPTools.stdio(*sdk_command, "catalog") as notes:
        prompts = {p.name: p for p in await notes.list_prompts()}
        assert prompts["summarize"] == MCPPrompt(
            name="summarize",
            description="Ask for a summary of a topic.",
            arguments=(
                MCPPromptArgument(name="topic", required=True),
                MCPPromptArgument(name="style", required=False),
            ),
        )
        [asked] = await notes.get_prompt("summarize", {"topic": "MCP"})
        opening = await notes.get_prompt("greeting")
    assert (asked.role, asked.text()) == ("user", "Summarize MCP, short.")
    assert [(m.role, m.text()) for m in opening] == [
        ("user", "Hello?"),
        ("assistant", "Hello! What shall we look at?"),
    ]
    result = await create_agent(model).ainvoke({"messages": [*opening, asked]})
    assert result["messages"][-1].text() == "A short summary."
    sent = model.requests[0].messages
    assert [(m.role, m.text()) for m in sent] == [
        ("user", "Hello?"),
        ("assistant", "Hello! What shall we look at?"),
        ("user", "Summarize MCP, short."),
    ]


async def test_wrong_prompt_arguments_are_refused_before_anything_is_sent(sdk_command):
    async with MCPTools.stdio(*sdk_command, "catalog", name="notes") as notes:
        with pytest.raises(ConfigError, match="MCP prompt 'summarize' needs the argument 'topic'"):
            await notes.get_prompt("summarize")
        no_tone = "MCP prompt 'summarize' has no argument 'tone'; it takes: topic, style"
        with pytest.raises(ConfigError, match=no_tone):
            await notes.get_prompt("summarize", {"topic": "x", "tone": "dry"})
        with pytest.raises(ConfigError, match=r"argument 'topic' must be a string.*got int"):
            await notes.get_prompt("summarize", {"topic": 3})  # type: ignore[dict-item]
        with pytest.raises(
            MCPServerError,
            match="MCP server 'notes' has no prompt 'summarise'; its prompts: greeting, summarize",
        ):
            await notes.get_prompt("summarise", {"topic": "x"})
        with pytest.raises(ConfigError, match="non-empty string"):
            await notes.read_resource("")


async def test_an_unknown_resource_names_it(sdk_command, caplog):
    caplog.set_level(logging.WARNING, "tenxgraph.mcp")
    async with MCPTools.stdio(*sdk_command, "catalog", name="notes") as notes:
        with pytest.raises(MCPServerError, match="MCP server 'notes': resource 'notes://nope'"):
            await notes.read_resource("notes://nope")
        [today] = await notes.read_resource("notes://today")  # the session goes on
    assert isinstance(today, TextBlock)
    assert "MCP server 'notes': resource 'notes://nope' failed" in caplog.text


async def test_a_server_without_resources_or_prompts_lists_none(sdk_command):
    async with MCPTools.stdio(*sdk_command, "bare", name="bare") as bare:
        assert await bare.list_resources() == []
        assert await bare.list_resource_templates() == []
        assert await bare.list_prompts() == []
        with pytest.raises(MCPServerError, match=r"MCP server 'bare' has no prompt 'x'.*none"):
            await bare.get_prompt("x")
        with pytest.raises(MCPServerError, match="MCP server 'bare': resource 'a://b'"):
            await bare.read_resource("a://b")


async def test_a_hung_or_dead_server_gives_an_error_not_a_hang(sdk_command):
    async with MCPTools.stdio(*sdk_command, "hung", name="hung", timeout=1) as hung:
        with pytest.raises(MCPServerError, match="MCP server 'hung' did not answer within 1 s"):
            await hung.read_resource("hung://forever")
        assert [r.uri for r in await hung.list_resources()] == ["hung://forever"]
    gone = MCPTools.stdio(sys.executable, "-c", "import sys; sys.exit(2)", name="gone")
    for request in (gone.list_resources(), gone.read_resource("a://b"), gone.get_prompt("p")):
        with pytest.raises(MCPServerError, match="MCP server 'gone' is not connected"):
            await request
    await gone.aclose()


def test_the_listed_models_are_frozen_and_strict():
    resource = MCPResource(uri="a://b", name="b")
    with pytest.raises(ValueError, match="frozen"):
        resource.uri = "a://c"  # type: ignore[misc]
    with pytest.raises(ValueError, match="extra"):
        MCPPrompt(name="p", argument=())  # type: ignore[call-arg]
