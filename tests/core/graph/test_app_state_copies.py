"""App state owns its data: values are copied in and out, so nothing done to them outside
``set`` changes the thread, and a save never meets a value it cannot store (issue 17, bug 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tenxgraph.core.graph import StateGraph, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, AppState, Message, ToolCallBlock
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer

UNSTORABLE = object()


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryCheckpointer()
    return SqliteCheckpointer(tmp_path / "threads.sqlite")


def one_node_app(node: Any, checkpointer: Any, state: Any = AgentState) -> Any:
    graph = StateGraph(state)
    graph.add_node("node", node)
    graph.set_entry_point("node")
    return graph.compile(checkpointer)


def reply(text: str) -> Message:
    return Message.text_message(text, role="assistant")


def test_changing_a_value_got_from_app_state_changes_nothing(checkpointer: Any) -> None:
    def node(state: AgentState) -> Message:
        items = state.app_state.get("items")
        if items is None:
            state.app_state.set("items", [{"n": 1}])
        else:
            items.append(UNSTORABLE)  # in place, on what get returned: no set
            items[0]["n"] = 99
        return reply("ok")

    app = one_node_app(node, checkpointer)
    config = {"thread_id": "get-copy"}
    app.invoke({"messages": [("user", "first")]}, config)
    second = app.invoke({"messages": [("user", "second")]}, config)
    third = app.invoke({"messages": [("user", "third")]}, config)

    assert second["state"].app_state.get("items") == [{"n": 1}]
    assert third["state"].execution_meta.status == "completed"
    saved = app.get_state(config)
    assert saved.app_state.get("items") == [{"n": 1}]
    assert saved.execution_meta.status == "completed"


def test_a_tool_changing_a_value_in_place_does_not_break_the_next_save(checkpointer: Any) -> None:
    def remember(item: str, state: AgentState) -> str:
        """Remember an item."""
        items = state.app_state.get("items", [])
        items.append(item)
        if len(items) > 1:
            items.append(UNSTORABLE)  # forgotten: never set, so never stored
            return "not saved"
        state.app_state.set("items", items)
        return "saved"

    def call(item: str) -> Message:
        block = ToolCallBlock(id=item, name="remember", args={"item": item})
        return Message(role="assistant", content=[block])

    model = ScriptedModel([call("milk"), "Saved.", call("eggs"), "Not saved."])
    app = create_agent(model, [remember], checkpointer=checkpointer)
    config = {"thread_id": "tool-copy"}
    app.invoke({"messages": [("user", "remember milk")]}, config)
    result = app.invoke({"messages": [("user", "remember eggs")]}, config)

    assert result["state"].context[-1].text() == "Not saved."
    saved = app.get_state(config)
    assert saved.app_state.get("items") == ["milk"]
    assert saved.execution_meta.status == "completed"


def test_starting_app_state_is_copied_deeply(checkpointer: Any) -> None:
    prefs = {"theme": {"name": "dark"}}
    app = one_node_app(lambda state: reply("ok"), checkpointer)
    config = {"thread_id": "input-copy"}
    first = app.invoke(
        {"messages": [("user", "hi")], "state": {"app_state": {"prefs": prefs}}}, config
    )
    prefs["theme"]["name"] = "light"  # after the turn, on the caller's own object
    prefs["theme"]["font"] = UNSTORABLE

    assert first["state"].app_state.get("prefs") == {"theme": {"name": "dark"}}
    result = app.invoke({"messages": [("user", "again")]}, config)
    assert result["state"].app_state.get("prefs") == {"theme": {"name": "dark"}}
    assert app.get_state(config).app_state.get("prefs") == {"theme": {"name": "dark"}}


@pytest.mark.parametrize("build", ["StateGraph", "create_agent"])
def test_a_seed_state_is_copied_when_built(build: str, checkpointer: Any) -> None:
    prefs = {"theme": {"name": "dark"}}
    seed = AgentState(app_state=AppState({"prefs": prefs}))
    if build == "StateGraph":
        app = one_node_app(lambda state: reply("Hi."), checkpointer, state=seed)
    else:
        app = create_agent(ScriptedModel(["Hi."]), state=seed, checkpointer=checkpointer)
    prefs["theme"]["name"] = "light"
    prefs["theme"]["font"] = UNSTORABLE

    result = app.invoke({"messages": [("user", "hi")]}, {"thread_id": "seed-copy"})
    assert result["state"].app_state.get("prefs") == {"theme": {"name": "dark"}}
    saved = app.get_state({"thread_id": "seed-copy"})
    assert saved.app_state.get("prefs") == {"theme": {"name": "dark"}}


def test_assigning_app_state_in_a_node_is_checked_where_it_happens(checkpointer: Any) -> None:
    def node(state: AgentState) -> Message:
        first = state.app_state.get("round") is None
        state.app_state = {"round": 1, "pair": (1, 2)} if first else {"when": UNSTORABLE}
        return reply("ok")

    app = one_node_app(node, checkpointer)
    config = {"thread_id": "assign"}
    app.invoke({"messages": [("user", "one")]}, config)
    assert app.get_state(config).app_state.get() == {"round": 1, "pair": [1, 2]}

    with pytest.raises(StateError, match="app_state value for 'when' is not JSON-serializable"):
        app.invoke({"messages": [("user", "two")]}, config)
    failed = app.get_state(config)
    assert failed.execution_meta.status == "error"  # recorded, not left running
    assert failed.app_state.get() == {"round": 1, "pair": [1, 2]}


def test_assigning_something_that_is_not_a_mapping_is_refused() -> None:
    state = AgentState()
    with pytest.raises(StateError, match="got list"):
        state.app_state = [("a", 1)]  # type: ignore[assignment]
    state.app_state = AppState({"a": 1})
    assert state.app_state.get("a") == 1


def test_get_and_set_copy() -> None:
    app_state = AppState()
    value = {"tags": ["a"]}
    app_state.set("value", value)
    value["tags"].append("b")
    got = app_state.get("value")
    got["tags"].append("c")
    everything = app_state.get()
    everything["value"]["tags"].append("d")
    everything["other"] = 1
    assert app_state.get("value") == {"tags": ["a"]}
    assert "other" not in app_state


def test_values_are_stored_as_their_json_form() -> None:
    app_state = AppState({"pair": (1, 2)})
    app_state.set("nested", {"pair": (3, 4)})
    assert app_state.get() == {"pair": [1, 2], "nested": {"pair": [3, 4]}}


@pytest.mark.parametrize("key", ["", "   ", None, 3])
def test_bad_keys_are_state_errors_naming_the_key(key: Any) -> None:
    app_state = AppState({"a": 1})
    for call in (
        lambda: app_state.set(key, 1),
        lambda: app_state.delete(key),
    ):
        with pytest.raises(StateError, match=f"app_state keys .* got {key!r}"):
            call()
    if key is not None:  # get(None) is "everything"
        with pytest.raises(StateError, match=f"got {key!r}"):
            app_state.get(key)
    assert app_state.get() == {"a": 1}


def test_an_empty_key_in_the_initial_data_is_refused() -> None:
    with pytest.raises(ValidationError, match="must not be empty"):
        AppState({"": 1})


def test_a_value_that_refers_to_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(StateError, match="'loop' is not JSON-serializable"):
        AppState().set("loop", loop)


def test_delete_of_a_missing_key_is_a_no_op() -> None:
    app_state = AppState({"a": 1})
    app_state.delete("b")
    assert app_state.get() == {"a": 1}
