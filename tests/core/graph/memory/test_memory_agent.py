"""Memory tools and middleware through the real agent loop (test models at the model boundary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.graph.memory import MemoryMiddleware, fact_key, memory_tools
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.errors import StorageError
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.storage.longterm import InMemoryStore, MemoryStore, SqliteMemoryStore


def system_prompt(request: ModelRequest) -> str:
    return "".join(m.text() for m in request.messages if m.role == "system")


def test_a_preference_said_in_one_thread_is_known_in_another(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "app.db")
    remember = ToolCallBlock(id="c1", name="remember", args={"fact": "Ana drinks green tea"})
    model = ScriptedModel([remember, "Noted.", "Green tea, as usual?"])
    app = create_agent(
        model,
        tools=memory_tools(store),
        middleware=[MemoryMiddleware(store)],
        checkpointer=SqliteCheckpointer(tmp_path / "app.db"),
        system_prompt="You are a barista.",
    )
    first = {"thread_id": "monday", "user_id": "ana"}
    app.invoke({"messages": [("user", "I always drink green tea")]}, first)
    second = {"thread_id": "tuesday", "user_id": "ana"}
    out = app.invoke({"messages": [("user", "The usual tea please")]}, second)
    assert out["messages"][-1].text() == "Green tea, as usual?"
    prompt = system_prompt(model.requests[-1])
    assert prompt.startswith("You are a barista.") and "Ana drinks green tea" in prompt
    stored = app.get_state(second)
    assert stored is not None
    texts = [(m.role, m.text()) for m in stored.context]  # the memories were not saved
    assert texts == [("user", "The usual tea please"), ("assistant", "Green tea, as usual?")]
    other = ScriptedModel(["Hello!"])
    bob = create_agent(other, middleware=[MemoryMiddleware(store)])
    bob.invoke({"messages": [("user", "tea please")]}, {"user_id": "bob"})
    assert "green tea" not in system_prompt(other.requests[0])  # another tenant's memory
    store.close()


def test_tools_are_scoped_to_the_run_user() -> None:
    store = InMemoryStore()
    store.put(("memories",), "drink", {"text": "likes coffee"}, user_id="bob")
    calls = [
        ToolCallBlock(id="a", name="recall", args={"query": "coffee"}),
        ToolCallBlock(id="b", name="forget", args={"key": "drink"}),
    ]
    model = ScriptedModel([calls, "ok"])
    app = create_agent(model, tools=memory_tools(store))
    out = app.invoke({"messages": [("user", "hi")]}, {"configurable": {"user_id": "ana"}})
    results = [m.text() for m in out["messages"] if m.role == "tool"]
    assert results == ["Nothing remembered about that.", "No fact with key drink."]
    assert store.get(("memories",), "drink", user_id="bob") is not None
    specs = {spec.name: spec.parameters for spec in model.requests[0].tools}
    assert set(specs) == {"remember", "recall", "forget"}
    assert all("config" not in schema["properties"] for schema in specs.values())


def test_remember_dedups_and_updates_by_key() -> None:
    store = InMemoryStore()
    calls = [
        ToolCallBlock(id="a", name="remember", args={"fact": "Likes  Jazz"}),
        ToolCallBlock(id="b", name="remember", args={"fact": "likes jazz"}),
        ToolCallBlock(id="c", name="remember", args={"fact": "lives in Oslo", "key": "city"}),
    ]
    app = create_agent(ScriptedModel([calls, "ok"]), tools=memory_tools(store))
    app.invoke({"messages": [("user", "hi")]})
    later = ToolCallBlock(id="d", name="remember", args={"fact": "lives in Bergen", "key": "city"})
    create_agent(ScriptedModel([later, "ok"]), tools=memory_tools(store)).invoke(
        {"messages": [("user", "I moved")]}
    )
    items = {item.key: item.value["text"] for item in store.search(limit=10)}
    assert items == {fact_key("likes jazz"): "likes jazz", "city": "lives in Bergen"}


class _Down(InMemoryStore):
    async def _search(self, request: object) -> list:  # type: ignore[override]
        raise StorageError("the memory server is down")


def test_a_failing_store_does_not_fail_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    model = FunctionModel(lambda request: f"prompt: {system_prompt(request)!r}")
    store: MemoryStore = _Down()
    app = create_agent(model, middleware=[MemoryMiddleware(store)])
    out = app.invoke({"messages": [("user", "hello")]})
    assert out["messages"][-1].text() == "prompt: ''"
    assert "memory search failed" in caplog.text


def test_no_user_message_no_search() -> None:
    store = InMemoryStore()
    store.put(("memories",), "k", {"text": "anything"})
    model = FunctionModel(lambda request: system_prompt(request) or "none")
    app = create_agent(model, middleware=[MemoryMiddleware(store)])
    out = app.invoke({"messages": [Message.text_message("...", role="user")]})
    assert out["messages"][-1].text() == "none"
