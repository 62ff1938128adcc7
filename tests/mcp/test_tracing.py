"""An MCP tool call is a ``tools/call {tool}`` client span under the runtime's ``execute_tool``;
resource reads and prompt gets are client spans too."""

from __future__ import annotations

from opentelemetry.trace import SpanKind, StatusCode

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.mcp import MCPTools
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture


async def test_an_mcp_call_is_a_client_span_of_the_tool_call(sdk_command, spans: Spans) -> None:
    asked = Message(
        role="assistant",
        content=[
            ToolCallBlock(id="c0", name="add", args={"a": 1, "b": 2}),
            ToolCallBlock(id="c1", name="fail", args={}),
        ],
    )
    model = ScriptedModel([asked, "done"])
    async with MCPTools.stdio(*sdk_command, "tools", name="sdk") as tools:
        app = create_agent(model, [tools], checkpointer=InMemoryCheckpointer())
        await app.ainvoke({"messages": [("user", "go")]}, {"thread_id": "t1"})

    call = spans.one("tools/call add")
    assert call.kind is SpanKind.CLIENT
    attributes = dict(call.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "add"
    assert attributes["tenxgraph.mcp.server"] == "sdk"
    tool = spans.one("execute_tool add")
    assert call.parent is not None and call.parent.span_id == tool.context.span_id
    assert call.context.trace_id == tool.context.trace_id
    failed = spans.one("tools/call fail")
    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {})["error.type"] == "MCPServerError"


async def test_resource_reads_and_prompt_gets_are_client_spans(sdk_command, spans: Spans) -> None:
    async with MCPTools.stdio(*sdk_command, "catalog", name="notes") as notes:
        await notes.read_resource("notes://today")
        await notes.get_prompt("summarize", {"topic": "x"})
    read = spans.one("resources/read notes://today")
    assert read.kind is SpanKind.CLIENT
    assert dict(read.attributes or {})["mcp.resource.uri"] == "notes://today"
    assert dict(read.attributes or {})["tenxgraph.mcp.server"] == "notes"
    got = spans.one("prompts/get summarize")
    assert dict(got.attributes or {})["mcp.method.name"] == "prompts/get"
    assert dict(got.attributes or {})["gen_ai.prompt.name"] == "summarize"
