"""Snapshots are point-in-time copies: nothing done to the state after ``ThreadSnapshot.of``,
or to a state restored from a snapshot, changes the snapshot (issue 17, bug 4)."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, ThreadSnapshot
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


class Notes(AgentState):
    notes: list[dict[str, Any]] = []
    extra: Any = None


def filled_state() -> Notes:
    state = Notes(notes=[{"text": "first"}], extra={"tags": ["a"]})
    state.append_messages(
        [
            Message.text_message("hello", metadata={"source": "web"}),
            Message.text_message("hi", role="assistant"),
        ]
    )
    state.app_state.set("plan", {"steps": ["book"]})
    state.structured_response = {"city": "Oslo"}
    return state


def change_everything(state: Notes) -> None:
    state.notes[0]["text"] = "changed"
    state.notes.append({"text": "second"})
    assert isinstance(state.extra, dict)
    state.extra["tags"].append("b")
    state.app_state.set("plan", {"steps": []})
    state.structured_response["city"] = "Rome"
    state.context[0].metadata["source"] = "changed"
    state.context[0].content[0].text = "changed"  # type: ignore[union-attr]
    state.context.append(Message.text_message("later"))


def test_of_is_a_copy_of_the_state_at_that_moment() -> None:
    state = filled_state()
    snapshot = ThreadSnapshot.of(state)
    before = snapshot.model_dump(exclude={"taken_at"})

    change_everything(state)

    assert snapshot.model_dump(exclude={"taken_at"}) == before
    assert [m.text() for m in snapshot.context] == ["hello", "hi"]
    assert snapshot.context[0].metadata == {"source": "web"}
    assert snapshot.values["app_state"] == {"plan": {"steps": ["book"]}}


def test_each_state_restored_from_a_snapshot_is_its_own() -> None:
    snapshot = ThreadSnapshot.of(filled_state())
    before = snapshot.model_dump(exclude={"taken_at"})

    first = snapshot.to_state(Notes)
    change_everything(first)
    second = snapshot.to_state(Notes)

    assert snapshot.model_dump(exclude={"taken_at"}) == before
    assert second.notes == [{"text": "first"}]
    assert second.extra == {"tags": ["a"]}
    assert second.structured_response == {"city": "Oslo"}
    assert second.app_state.get("plan") == {"steps": ["book"]}
    assert [m.text() for m in second.context] == ["hello", "hi"]
    assert second.context[0].metadata == {"source": "web"}


def test_restoring_a_snapshot_twice_gives_the_same_thread() -> None:
    def node(state: Notes) -> dict[str, Any]:
        state.app_state.set("turns", (state.app_state.get("turns") or 0) + 1)
        return {"notes": [*state.notes, {"text": state.context[-1].text()}]}

    graph = StateGraph(Notes)
    graph.add_node("note", node)
    graph.set_entry_point("note")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "restore-twice"}
    app.invoke({"messages": [("user", "one")]}, config)
    snapshot = app.snapshot(config)
    before = snapshot.model_dump(exclude={"taken_at"})

    for _ in range(2):
        app.restore(config, snapshot)
        restored = app.get_state(config)
        assert restored.notes == [{"text": "one"}]
        assert restored.app_state.get("turns") == 1
        result = app.invoke({"messages": [("user", "two")]}, config)
        assert result["state"].notes == [{"text": "one"}, {"text": "two"}]
        assert result["state"].app_state.get("turns") == 2

    assert snapshot.model_dump(exclude={"taken_at"}) == before


def test_values_that_are_not_json_are_a_state_error() -> None:
    with pytest.raises(StateError, match="'extra' of Notes cannot be stored"):
        ThreadSnapshot.of(Notes(extra=object()))
    snapshot = ThreadSnapshot.of(Notes())
    snapshot.values["extra"] = object()
    with pytest.raises(StateError, match="snapshot values are not JSON data"):
        snapshot.to_state(Notes)
