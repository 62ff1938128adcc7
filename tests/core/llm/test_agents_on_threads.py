"""An Agent with tools holds a multi-turn conversation on a thread: through the OpenAI
Chat Completions adapter (replayed) and on the real local model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tenxgraph.core.graph import Agent, StateGraph, ToolNode, create_agent
from tenxgraph.core.llm import OpenAIChatModel
from tenxgraph.core.state import AgentState, Message, ToolResult
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.testing.replay import ReplayServer, chat_chunk
from tenxgraph.utils import END


class Cart(AgentState):
    items: list[str] = []


def add_item(item: str, state: Cart) -> ToolResult:
    """Add an item to the cart.

    Args:
        item: The item to add.
    """
    return ToolResult(message=f"added {item}", state={"items": [*state.items, item]})


def _tool_call(call_id: str, item: str) -> list[Any]:
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "add_item", "arguments": json.dumps({"item": item})},
    }
    return [
        chat_chunk({"role": "assistant", "tool_calls": [call]}),
        chat_chunk({}, "tool_calls"),
        "[DONE]",
    ]


def _text(text: str) -> list[Any]:
    return [chat_chunk({"role": "assistant", "content": text}), chat_chunk({}, "stop"), "[DONE]"]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay
    assert not replay.replies, "a queued reply was never requested"


async def test_openai_chat_tool_agent_on_a_thread(server: ReplayServer) -> None:
    for reply in (_tool_call("call_1", "tea"), _text("Added tea."), _tool_call("call_2", "milk")):
        server.stream(reply)
    server.stream(_text("Added milk."))
    model = OpenAIChatModel("gpt-test", base_url=server.url + "/v1", api_key="k", max_retries=0)
    app = create_agent(model, [add_item], state=Cart, checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "cart"}
    await app.ainvoke({"messages": [Message.text_message("add tea")]}, config)
    result = await app.ainvoke({"messages": [Message.text_message("and milk")]}, config)
    await model.aclose()

    assert result["state"].items == ["tea", "milk"]
    assert result["messages"][-1].text() == "Added milk."
    wire = server.requests[-1].body["messages"]
    assert [m["role"] for m in wire] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert wire[-1]["tool_call_id"] == "call_2"
    assert wire[-1]["content"] == "added milk"


@pytest.mark.local_model
async def test_local_model_tool_agent_on_a_thread() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    from tenxgraph.core.llm.local import LocalLlamaModel

    model = LocalLlamaModel(n_ctx=1024, max_tokens=32, temperature=0.0)
    graph = StateGraph(Cart)
    # SmolLM2 calls tools only when forced: the planning step forces the call,
    # the answering step has no tools.
    graph.add_node("plan", Agent(model=model, tools=[add_item], tool_choice="add_item"))
    graph.add_node("tools", ToolNode([add_item]))
    graph.add_node("answer", Agent(model=model, system_prompt="Answer in one short sentence."))
    graph.set_entry_point("plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "local-cart"}
    first = await app.ainvoke({"messages": [Message.text_message("Add tea to my cart.")]}, config)
    second = await app.ainvoke({"messages": [Message.text_message("Add milk too.")]}, config)

    assert len(first["state"].items) == 1
    assert len(second["state"].items) == 2
    context = second["state"].context
    assert [m.role for m in context] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert all(m.usages is not None for m in context if m.role == "assistant")
    assert context[-1].text().strip()
