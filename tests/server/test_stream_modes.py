"""The stream modes translated from the runtime's events, read with the official ``langgraph-sdk``.

custom, tasks, checkpoints, debug, events, tools and lifecycle, in the
shapes of the SDKs' types; the messages inside them in LangChain's format.
Also ``command.goto`` and the id of a streamed message's chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tenxgraph.core.graph import CompiledGraph, create_agent, get_stream_writer, tool
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.server._message_format import langchain_json, tenxgraph_json, translate_event
from tenxgraph.storage.checkpointer import Checkpointer
from tests.server.conftest import BACKENDS, Serve
from tests.server.test_runs import asking_graph

AGENT = "agent"
ALL = ["custom", "tasks", "checkpoints", "debug", "events", "tools", "lifecycle"]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    get_stream_writer()({"adding": [a, b]})
    return a + b


def _answer(request: Any) -> Any:
    last = request.messages[-1]
    if last.role == "tool":
        return f"the sum is {last.text()}"
    if last.text() == "add":
        return ToolCallBlock(id="call_1", name="add", args={"a": 2, "b": 3})
    return "plain words here"


def adding_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """An agent whose tool ``add`` writes custom data while it runs."""
    return create_agent(FunctionModel(_answer), tools=[add], checkpointer=checkpointer)


@pytest.fixture
def client(serve: Serve, request: pytest.FixtureRequest) -> Iterator[Any]:
    backend = getattr(request, "param", "sqlite")
    sdk = get_sync_client(url=serve(adding_graph, backend=backend), api_key=None)
    yield sdk
    sdk.close()


def _stream(client: Any, text: str, modes: list[str]) -> tuple[str, list[tuple[str, Any]]]:
    thread_id = client.threads.create()["thread_id"]
    input = {"messages": [{"type": "human", "content": text}]}
    parts = client.runs.stream(thread_id, AGENT, input=input, stream_mode=modes)
    return thread_id, [(p.event, p.data) for p in parts]


def _of(parts: list[tuple[str, Any]], event: str) -> list[Any]:
    return [data for name, data in parts if name == event]


@pytest.mark.parametrize("client", BACKENDS, indirect=True)
def test_every_translated_mode_in_one_run(client: Any) -> None:
    thread_id, parts = _stream(client, "add", ALL)
    assert parts[0][0] == "metadata" and parts[-1][0] == "end"
    assert "error" not in [name for name, _ in parts]
    assert _of(parts, "custom") == [{"adding": [2, 3]}]
    lifecycle = _of(parts, "lifecycle")
    assert [item["event"] for item in lifecycle] == ["started", "completed"]
    assert all(item["namespace"] == [] for item in lifecycle)
    tools = _of(parts, "tools")
    assert [(t["event"], t["toolCallId"], t["name"]) for t in tools] == [
        ("on_tool_start", "call_1", "add"),
        ("on_tool_end", "call_1", "add"),
    ]
    assert tools[0]["input"] == {"a": 2, "b": 3} and tools[1]["output"] == 5

    checkpoints = _of(parts, "checkpoints")
    history = client.threads.get_history(thread_id)
    ids = [c["config"]["configurable"]["checkpoint_id"] for c in checkpoints]
    saved = sorted((h["checkpoint"]["checkpoint_id"] for h in history), key=int)
    assert ids == saved[saved.index(ids[0]) :]  # every checkpoint from the run's input on
    assert [m["type"] for m in checkpoints[0]["values"]["messages"]] == ["human"]
    final = checkpoints[-1]
    assert [m["type"] for m in final["values"]["messages"]] == ["human", "ai", "tool", "ai"]
    assert final["next"] == [] and final["metadata"]["step"] == 3
    assert final["parent_config"]["configurable"]["checkpoint_id"] == ids[-2]


def test_tasks_start_and_end_in_pairs(client: Any) -> None:
    _, parts = _stream(client, "add", ["tasks", "debug"])
    tasks = _of(parts, "tasks")
    starts = [t for t in tasks if "input" in t]
    results = [t for t in tasks if "result" in t]
    assert [t["name"] for t in starts] == ["agent", "tools", "agent"]
    assert [t["id"] for t in starts] == [t["id"] for t in results]
    assert starts[0]["triggers"] == ["branch:to:agent"]
    assert [m["type"] for m in starts[1]["input"]["messages"]] == ["human", "ai"]
    agent_result = dict(results[0]["result"])
    assert agent_result["messages"][0]["tool_calls"][0]["name"] == "add"  # LangChain's format
    debug = _of(parts, "debug")
    assert {d["type"] for d in debug} == {"checkpoint", "task", "task_result"}
    assert [d["payload"] for d in debug if d["type"] == "task"] == starts
    assert all(isinstance(d["step"], int) and d["timestamp"] for d in debug)


def test_events_are_langchain_stream_events(client: Any) -> None:
    _, parts = _stream(client, "hi", ["events", "messages-tuple"])
    events = _of(parts, "events")
    kinds = [e["event"] for e in events]
    assert kinds[0] == "on_chain_start" and kinds[-1] == "on_chain_end"
    assert events[0]["name"] == events[-1]["name"] == "LangGraph"
    assert kinds.count("on_chat_model_stream") == 3  # one per word
    run_id = parts[0][1]["run_id"]
    for event in events:
        assert set(event) == {"event", "name", "run_id", "parent_ids", "tags", "metadata", "data"}
    node_start = events[1]
    assert node_start["name"] == "agent" and node_start["parent_ids"] == [run_id]
    chunk = next(e for e in events if e["event"] == "on_chat_model_stream")["data"]["chunk"]
    assert chunk["type"] == "AIMessageChunk" and chunk["content"] == "plain "
    end = next(e for e in events if e["event"] == "on_chat_model_end")["data"]["output"]
    assert end["type"] == "ai" and end["content"] == "plain words here"
    final = events[-1]["data"]["output"]
    assert [m["type"] for m in final["messages"]] == ["human", "ai"]
    # the chunks carry the id of the message stored after them
    chunk_ids = {m["id"] for m, _ in _of(parts, "messages")}
    assert chunk_ids == {end["id"]} == {final["messages"][-1]["id"]}


def test_a_failed_run_ends_its_lifecycle_failed(serve: Serve) -> None:
    def broken(request: Any) -> str:
        raise RuntimeError("no model today")

    def graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
        return create_agent(FunctionModel(broken), checkpointer=checkpointer)

    client = get_sync_client(url=serve(graph), api_key=None)
    _, parts = _stream(client, "hi", ["lifecycle", "tasks"])
    lifecycle = _of(parts, "lifecycle")
    assert [item["event"] for item in lifecycle] == ["started", "failed"]
    assert lifecycle[-1]["error"]["error"] == "NodeError"
    assert next(t for t in _of(parts, "tasks") if "error" in t)["name"] == "agent"
    client.close()


def test_command_goto_runs_the_named_node(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, AGENT, input={"messages": [{"type": "human", "content": "hi"}]})
    values = client.runs.wait(thread_id, AGENT, command={"goto": "agent"})
    assert [m["content"] for m in values["messages"]] == ["hi", *["plain words here"] * 2]
    for wrong in ("nowhere", [], [["agent"]], {"node": 1}):
        with pytest.raises(httpx.HTTPStatusError, match="goto"):
            client.runs.wait(thread_id, AGENT, command={"goto": wrong})
    with pytest.raises(httpx.HTTPStatusError, match="not both"):
        client.runs.wait(thread_id, AGENT, command={"goto": "agent", "resume": 1})


def test_the_translated_modes_messages_in_either_format() -> None:
    answer = Message.text_message("hi", role="assistant", message_id="m1")
    stored = answer.model_dump(mode="json")
    values = {"messages": [stored], "topic": "x"}
    logged = {
        "checkpoints": {"values": values, "next": []},
        "tasks": {"id": "t", "name": "agent", "result": [["messages", [stored]], ["topic", "x"]]},
        "debug": {"type": "task", "step": 1, "payload": {"id": "t", "input": values}},
        "events": {"event": "on_chat_model_end", "data": {"output": stored}},
    }
    for event, data in logged.items():
        text = json.dumps(data)
        assert translate_event(event, text, tenxgraph_json) == text  # kept as logged
        translated = json.loads(translate_event(event, text, langchain_json))
        found = json.dumps(translated)
        assert '"type": "ai"' in found and '"role"' not in found, (event, translated)
    tasks = json.loads(translate_event("tasks", json.dumps(logged["tasks"]), langchain_json))
    assert tasks["result"][1] == ["topic", "x"]


def test_a_task_paused_inside_ends_with_its_interrupt(serve: Serve) -> None:
    client = get_sync_client(url=serve(asking_graph), api_key=None)
    _, parts = _stream(client, "hi", ["tasks", "lifecycle"])
    start, end = _of(parts, "tasks")
    assert start["name"] == end["name"] == "ask" and start["id"] == end["id"]
    assert end["interrupts"][0]["value"] == {"question": "your name?"}
    assert [item["event"] for item in _of(parts, "lifecycle")] == ["started", "interrupted"]
    client.close()
