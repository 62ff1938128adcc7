"""Messages at the LangGraph edge: LangChain's format for the official SDK, tenxgraph's on request.

The official ``langgraph-sdk`` reads every message of a run that calls a tool
(state, history, ``wait``, ``join``, each stream mode); each one must load as
a LangChain message in ``langchain_core``. Messages sent in LangChain's format
(``input.messages``, ``command.update``, state updates) are taken, and a
tenxgraph client reading the same thread gets tenxgraph's JSON.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tenxgraph.core.graph import CompiledGraph, create_agent, interrupt, tool
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import AgentState, Message, TextBlock, ToolCallBlock
from tenxgraph.server._message_format import StreamTranslator, langchain_json, tenxgraph_json
from tenxgraph.storage.checkpointer import Checkpointer
from tests.server.conftest import BACKENDS, Serve, langchain_message, message_text

AGENT = "agent"
OWN = {"x-message-format": "tenxgraph"}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def adder(request: ModelRequest) -> str | ToolCallBlock:
    """Calls ``add`` once per user turn, then says the sum."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"the sum is {last.text()}"
    return ToolCallBlock(id=f"call-{len(request.messages)}", name="add", args={"a": 2, "b": 3})


def tool_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    return create_agent(FunctionModel(adder), tools=[add], checkpointer=checkpointer)


@pytest.fixture
def sdk(serve: Serve) -> Iterator[Any]:
    clients: list[Any] = []

    def make(graph: Any = tool_graph, **options: Any) -> Any:
        client = get_sync_client(url=serve(graph, **options), api_key=None)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def check_turn(messages: list[dict[str, Any]]) -> None:
    """A user turn that called ``add``: human, ai with the call, its tool result, the answer."""
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    for message in messages:
        langchain_message(message)
    human, call, result, answer = messages
    assert human["content"] == "add them"
    [asked] = call["tool_calls"]
    assert (asked["name"], asked["args"], asked["type"]) == ("add", {"a": 2, "b": 3}, "tool_call")
    assert (result["tool_call_id"], result["status"], result["content"]) == (
        asked["id"],
        "success",
        "5",
    )
    assert answer["content"] == "the sum is 5" and answer["tool_calls"] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_sdk_reads_langchain_messages_everywhere(sdk: Any, backend: str) -> None:
    client = sdk(backend=backend)
    thread_id = client.threads.create()["thread_id"]
    human = {"type": "human", "content": "add them"}
    modes = ["values", "updates", "messages-tuple", "messages"]
    parts = list(
        client.runs.stream(thread_id, AGENT, input={"messages": [human]}, stream_mode=modes)
    )
    values = [p.data for p in parts if p.event == "values"]
    check_turn(values[-1]["messages"])
    for part in parts:
        if part.event == "updates":
            for update in part.data.values():
                for message in update.get("messages", []):
                    langchain_message(message)
        elif part.event in ("messages", "messages/partial", "messages/complete"):
            langchain_message(part.data[0])
    tuples = [p.data[0] for p in parts if p.event == "messages"]
    chunks = [m for m in tuples if m["type"] == "AIMessageChunk"]
    assert "".join(message_text(m) for m in chunks) == "the sum is 5"
    assert all(m["id"] == chunks[0]["id"] for m in chunks)

    gathered = functools.reduce(operator.add, [langchain_message(m) for m in chunks])
    assert gathered.text == "the sum is 5"  # LangChain programs add the chunks together
    check_turn(client.threads.get_state(thread_id)["values"]["messages"])
    check_turn(client.threads.get(thread_id)["values"]["messages"])
    history = client.threads.get_history(thread_id, limit=2)
    check_turn(history[0]["values"]["messages"])
    check_turn(client.threads.search()[0]["values"]["messages"])
    run = client.runs.create(thread_id, AGENT, input={"messages": [("user", "add them")]})
    joined = client.runs.join(thread_id, run["run_id"])
    check_turn(joined["messages"][4:])
    waited = client.runs.wait(None, AGENT, input={"messages": [human]})
    check_turn(waited["messages"])


def test_tenxgraph_format_on_request_for_the_same_thread(serve: Serve) -> None:
    url = serve(tool_graph)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {
            "assistant_id": AGENT,
            "input": {"messages": [{"type": "human", "content": "add them", "id": "h1"}]},
            "if_not_exists": "create",
        }
        assert client.post("/threads/f1/runs/wait", json=body).status_code == 200
        lc = client.get("/threads/f1/state").json()["values"]["messages"]
        own = client.get("/threads/f1/state", headers=OWN).json()["values"]["messages"]
    check_turn(lc)
    assert [m["role"] for m in own] == ["user", "assistant", "tool", "assistant"]
    assert own[0]["message_id"] == "h1" == lc[0]["id"]
    stored = [Message.model_validate(m) for m in own]
    assert stored[2].tool_results()[0].output == 5
    assert lc[2]["additional_kwargs"]["tenxgraph"]["output_json"] == 5  # what LangChain's lacks


def resume_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """Pauses before answering; the answer names the texts of the context window."""
    from tenxgraph.core.graph import StateGraph

    def answer(state: AgentState) -> Message:
        interrupt("go on?")
        texts = " | ".join(m.text() for m in state.context)
        return Message.text_message(f"seen: {texts}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("answer", answer)
    graph.set_entry_point("answer")
    return graph.compile(checkpointer)


def test_command_update_and_state_updates_take_langchain_messages(serve: Serve) -> None:
    url = serve(resume_graph)
    with httpx.Client(base_url=url, timeout=30) as client:
        start = {"assistant_id": AGENT, "input": {"messages": ["first"]}, "if_not_exists": "create"}
        assert client.post("/threads/c1/runs/wait", json=start).status_code == 200
        note = {"type": "human", "content": [{"type": "text", "text": "second"}], "id": "n2"}
        resume = {
            "assistant_id": AGENT,
            "command": {"resume": "yes", "update": {"messages": [note]}},
        }
        done = client.post("/threads/c1/runs/wait", json=resume)
        assert done.status_code == 200, done.text
        assert done.json()["messages"][-1]["content"] == "seen: first | second"
        removed = client.post(
            "/threads/c1/state", json={"values": {"messages": [{"type": "remove", "id": "n2"}]}}
        )
        assert removed.status_code == 200, removed.text
        shown = client.get("/threads/c1/state").json()["values"]["messages"]
        assert [m["content"] for m in shown] == ["first", "seen: first | second"]
        refused = client.post(
            "/threads/c1/runs/wait",
            json={"assistant_id": AGENT, "input": {"messages": [{"type": "remove", "id": "x"}]}},
        )
        assert refused.status_code == 422
        assert "a 'remove' message edits" in refused.json()["detail"]
        bad = client.post(
            "/threads/c1/runs/wait",
            json={
                "assistant_id": AGENT,
                "input": {"messages": [{"type": "human", "content": [{"type": "gif"}]}]},
            },
        )
        assert bad.status_code == 422
        assert "input 'messages'[0].content[0]" in bad.json()["detail"]


def test_a_streamed_message_is_completed_by_a_last_chunk_not_sent_again() -> None:
    """As LangGraph's server does: useStream adds every message of an id to its chunks."""
    reader = StreamTranslator(langchain_json)
    meta = {"langgraph_node": "agent"}

    def event(message: Message) -> dict[str, Any]:
        data = reader.data("messages", json.dumps([message.model_dump(mode="json"), meta]))
        sent, sent_meta = json.loads(data)
        assert sent_meta == meta
        return dict(sent)

    pieces = [
        event(Message(role="assistant", message_id="m", delta=True, content=[TextBlock(text=t)]))
        for t in ("4", "2")
    ]
    call = ToolCallBlock(id="c", name="add", args={"a": 1})
    whole = Message(role="assistant", message_id="m", content=[TextBlock(text="42"), call])
    last = event(whole)
    assert [p["type"] for p in pieces] == ["AIMessageChunk", "AIMessageChunk"]
    assert (last["type"], last["content"], last["chunk_position"]) == ("AIMessageChunk", "", "last")
    gathered = functools.reduce(operator.add, [langchain_message(m) for m in [*pieces, last]])
    assert (gathered.content, gathered.tool_calls[0]["args"]) == ("42", {"a": 1})
    assert event(whole)["type"] == "ai"  # not streamed (again): sent whole
    own = StreamTranslator(tenxgraph_json)
    data = json.dumps([whole.model_dump(mode="json"), meta])
    assert own.data("messages", data) == data  # tenxgraph's readers get the log as it is


def test_a_readers_shortcuts_write_what_each_event_translated_alone_would() -> None:
    """Chunks written from the last one's form, a whole message's translation kept: same bytes."""
    meta = {"langgraph_node": "agent", "run_id": "r"}

    def chunk(text: str, message_id: str = "m", **fields: Any) -> Message:
        content = [TextBlock(text=text)] if text else []
        return Message(
            role="assistant", message_id=message_id, delta=True, content=content, **fields
        )

    chunks = [
        chunk("Hello"),
        chunk(' "quoted" \\ é\n😀\u2028'),
        chunk(""),
        chunk("x", metadata={"k": 1}),
        chunk("other message", message_id="n"),
        chunk("y", reasoning="thinking"),
        chunk("z"),
    ]
    whole = Message(role="assistant", message_id="m", content=[TextBlock(text="Hello x y z")])
    reader = StreamTranslator(langchain_json)
    for message in chunks:
        data = json.dumps([message.model_dump(mode="json"), meta])
        alone = [langchain_json(message), meta]
        assert json.loads(reader.data("messages", data)) == alone
        assert reader.data("messages", data) == StreamTranslator(langchain_json).data(
            "messages", data
        )
    reader.data("messages", json.dumps([whole.model_dump(mode="json"), meta]))
    update = json.dumps({"agent": {"messages": [whole.model_dump(mode="json")]}})
    fresh = StreamTranslator(langchain_json)
    assert reader.data("updates", update) == fresh.data("updates", update)
    assert json.loads(fresh.data("updates", update))["agent"]["messages"] == [langchain_json(whole)]


def test_chunks_like_the_last_but_their_text_are_read_without_a_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A streamed answer's chunks after the first are matched as text: one probe, no parses."""
    from tenxgraph.server import _message_format
    from tenxgraph.server._run_stream import StreamEncoder

    meta = StreamEncoder.dumps({"langgraph_node": "agent", "run_id": "r"})
    texts = ["Hello", ", ", 'a "quote"', " and\na line", " é😀", "\\", "!"] * 3
    events = []
    for text in texts:
        message = Message(
            role="assistant", message_id="m", delta=True, content=[TextBlock(text=text)]
        )
        data = f"[{StreamEncoder.message_json(message)},{meta}]"
        events.append((data, StreamTranslator(langchain_json).data("messages", data)))
    parsed: list[str] = []
    parse = _message_format.from_json

    def counted(data: Any, *args: Any, **kwargs: Any) -> Any:
        parsed.append(data)
        return parse(data, *args, **kwargs)

    monkeypatch.setattr(_message_format, "from_json", counted)
    reader = StreamTranslator(langchain_json)
    for (data, alone), text in zip(events, texts, strict=True):
        sent = reader.data("messages", data)
        assert sent == alone
        assert json.loads(sent)[0]["content"] == text
    assert len(parsed) == 2  # the first chunk, and the probe that places its text and time
