"""003/004 state capabilities: message edits, structured_response, app state."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tenxgraph.core.graph import StateGraph, ToolNode, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import (
    REMOVE_ALL_MESSAGES,
    AgentState,
    AppState,
    Message,
    RemoveMessage,
    ReplaceMessage,
    ThreadKey,
    ToolCallBlock,
    ToolResult,
)
from tenxgraph.errors import NodeError, StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


def graph_of(node: Any, checkpointer: Any = None) -> Any:
    graph = StateGraph(AgentState)
    graph.add_node("edit", node)
    graph.set_entry_point("edit")
    return graph.compile(checkpointer)


def test_remove_and_replace_by_id_are_persisted_as_window_edits() -> None:
    checkpointer = InMemoryCheckpointer()
    config = {"thread_id": "edits"}
    seed = [Message.text_message(t, message_id=t) for t in ("a", "b", "c")]
    graph_of(lambda s: None, checkpointer).invoke({"messages": seed}, config)

    fixed = Message.text_message("B (fixed)", message_id="b")

    def edit(state: AgentState) -> list[Any]:
        return [
            RemoveMessage("a"),
            ReplaceMessage(fixed),
            Message.text_message("d", message_id="d"),
        ]

    result = graph_of(edit, checkpointer).invoke({}, config)
    assert [m.text() for m in result["state"].context] == ["B (fixed)", "c", "d"]
    saved = checkpointer.get_state(config)
    assert saved is not None
    assert [m.text() for m in saved.context] == ["B (fixed)", "c", "d"]
    import asyncio

    log = asyncio.run(checkpointer.alist_messages(ThreadKey("edits")))
    assert [s.message.text() for s in log] == ["a", "b", "c", "B (fixed)", "d"]


def test_resending_an_existing_id_still_does_not_duplicate() -> None:
    same = Message.text_message("x", message_id="x")
    app = graph_of(lambda s: [same, Message.text_message("x again", message_id="x")])
    result = app.invoke({"messages": [same]})
    assert [m.text() for m in result["state"].context] == ["x"]


def test_remove_all_messages() -> None:
    app = graph_of(lambda s: [RemoveMessage(REMOVE_ALL_MESSAGES), Message.text_message("fresh")])
    result = app.invoke({"messages": [Message.text_message("old")]})
    assert [m.text() for m in result["state"].context] == ["fresh"]


def test_editing_an_unknown_id_is_an_error_and_changes_nothing() -> None:
    app = graph_of(lambda s: [Message.text_message("kept?"), RemoveMessage("ghost")])
    with pytest.raises(NodeError, match="cannot remove message 'ghost'"):
        app.invoke({"messages": [Message.text_message("q")]})


def test_a_tool_can_remove_messages() -> None:
    def forget(message_id: str) -> ToolResult:
        """Forget a message."""
        return ToolResult(message="forgotten", state={"context": [RemoveMessage(message_id)]})

    graph = StateGraph(AgentState)
    graph.add_node("tools", ToolNode([forget]))
    graph.set_entry_point("tools")
    call = Message(
        role="assistant", content=[ToolCallBlock(id="c", name="forget", args={"message_id": "s"})]
    )
    result = graph.compile().invoke(
        {"messages": [Message.text_message("secret", message_id="s"), call]}
    )
    texts = [m.text() for m in result["state"].context]
    assert texts == ["", "forgotten"]


class Course(BaseModel):
    course_name: str
    reason: str
    difficulty: str


def test_structured_response_on_state_and_result() -> None:
    answer = '{"course_name": "Python 101", "reason": "simple", "difficulty": "beginner"}'
    checkpointer = InMemoryCheckpointer()
    app = create_agent(ScriptedModel([answer]), output_schema=Course, checkpointer=checkpointer)
    config = {"thread_id": "course"}
    result = app.invoke({"messages": [Message.text_message("recommend a course")]}, config)
    assert result["structured_response"] == Course(
        course_name="Python 101", reason="simple", difficulty="beginner"
    )
    assert result["state"].structured_response == result["structured_response"]
    stored = checkpointer.get_state(config)
    assert stored is not None
    assert stored.structured_response["course_name"] == "Python 101"
    with pytest.raises(StateError, match="cannot set structured_response"):
        app.invoke({"state": {"structured_response": {}}}, config)


def test_app_state_get_set_delete_and_json_only() -> None:
    app_state = AppState({"user_preferences": {"theme": "dark"}, "session_count": 0})
    assert app_state.get("user_preferences") == {"theme": "dark"}
    app_state.set("last_action", "login")
    app_state.set("session_count", 1)
    assert app_state.get() == {
        "user_preferences": {"theme": "dark"},
        "session_count": 1,
        "last_action": "login",
    }
    app_state.delete("last_action")
    assert "last_action" not in app_state
    for value in ("hello", 42, True, [1, 2, 3], {"nested": "data"}, None):
        app_state.set("v", value)
        assert app_state.get("v") == value
    with pytest.raises(ValueError, match="'function' is not JSON-serializable"):
        app_state.set("function", lambda x: x)
    with pytest.raises(ValueError, match="not JSON-serializable"):
        AppState({"bad": {1, 2}})


def test_tools_use_app_state_and_it_persists_but_never_reaches_the_model() -> None:
    def track_user_action(action: str, state: AgentState) -> str:
        """Track user actions in app state."""
        count = state.app_state.get("action_count") or 0
        state.app_state.set("action_count", count + 1)
        state.app_state.set("last_action", action)
        return f"Action '{action}' recorded. Total actions: {count + 1}"

    def call(action: str, call_id: str) -> Message:
        return Message(
            role="assistant",
            content=[ToolCallBlock(id=call_id, name="track_user_action", args={"action": action})],
        )

    model = ScriptedModel([call("login", "1"), "ok", call("view profile", "2"), "ok"])
    checkpointer = InMemoryCheckpointer()
    app = create_agent(model, [track_user_action], checkpointer=checkpointer)
    config = {"thread_id": "actions"}
    app.invoke({"messages": [Message.text_message("Track that I logged in")]}, config)
    app.invoke({"messages": [Message.text_message("Track that I viewed my profile")]}, config)
    stored = checkpointer.get_state(config)
    assert stored is not None
    assert stored.app_state.get("action_count") == 2
    assert stored.app_state.get("last_action") == "view profile"
    for request in model.requests:
        assert "action_count" not in str([m.model_dump() for m in request.messages])


def test_app_state_from_invoke_input_is_validated() -> None:
    app = graph_of(lambda s: None)
    result = app.invoke({"state": {"app_state": {"theme": "dark"}}})
    assert result["state"].app_state.get("theme") == "dark"
    with pytest.raises(StateError, match="app_state"):
        app.invoke({"state": {"app_state": {"bad": object()}}})


def test_snapshot_and_restore_through_every_checkpointer(tmp_path: Any) -> None:
    from tenxgraph.core.graph._snapshots import ThreadSnapshot
    from tenxgraph.storage.checkpointer import SqliteCheckpointer

    class Prefs(AgentState):
        theme: str = ""

    for checkpointer in (InMemoryCheckpointer(), SqliteCheckpointer(tmp_path / "s.sqlite")):
        graph = StateGraph(Prefs)
        graph.add_node("echo", lambda s: [Message.text_message("echo", role="assistant")])
        graph.set_entry_point("echo")
        app = graph.compile(checkpointer)
        config = {"thread_id": "snap"}
        app.invoke({"messages": [Message.text_message("one")], "state": {"theme": "dark"}}, config)
        snapshot = app.snapshot(config)
        restored_copy = ThreadSnapshot.model_validate_json(snapshot.model_dump_json())
        app.invoke({"messages": [Message.text_message("two")], "state": {"theme": "light"}}, config)
        app.restore(config, restored_copy)
        state = app.get_state(config)
        assert state is not None
        assert state.theme == "dark"
        assert [m.text() for m in state.context] == ["one", "echo"]
        after = app.invoke({"messages": [Message.text_message("three")]}, config)
        assert [m.text() for m in after["state"].context] == ["one", "echo", "three", "echo"]

    in_memory = ThreadSnapshot.of(Prefs(theme="x"))
    assert in_memory.to_state(Prefs).theme == "x"


def test_create_thread_from_existing_conversation() -> None:
    app = create_agent(
        ScriptedModel(["Your name is Strands."]), checkpointer=InMemoryCheckpointer()
    )
    config = {"thread_id": "initial"}
    app.create_thread(
        config,
        [
            Message.text_message("Hello, my name is Strands!"),
            Message.text_message("Hi there! How can I help you today?", role="assistant"),
        ],
    )
    result = app.invoke({"messages": [Message.text_message("What's my name?")]}, config)
    assert len(result["state"].context) == 4
    with pytest.raises(StateError, match="already exists"):
        app.create_thread(config, [])
    orphan = [  # only the last message's calls may wait for their results
        Message(role="assistant", content=[ToolCallBlock(id="c", name="f")]),
        Message.text_message("and then?"),
    ]
    with pytest.raises(StateError, match="tool call without its result"):
        app.create_thread({"thread_id": "other"}, orphan)
