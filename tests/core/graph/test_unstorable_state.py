"""A state field a save cannot store (not JSON) fails the run cleanly: the error names
the field, the field goes back to its stored value, the thread is left failed rather
than running, and nothing already stored is lost or repeated on retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import StateError, UnstorableStateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer


class Notes(AgentState):
    extra: Any = None


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryCheckpointer()
    return SqliteCheckpointer(tmp_path / "threads.sqlite")


def two_nodes(first: Any, checkpointer: Any) -> Any:
    """``first`` then ``second``, which says "second"; each appends one assistant message."""
    graph = StateGraph(Notes)
    graph.add_node("first", first)
    graph.add_node("second", lambda state: Message.text_message("second", role="assistant"))
    graph.set_entry_point("first")
    graph.add_edge("first", "second")
    return graph.compile(checkpointer)


def texts(state: AgentState) -> list[str]:
    return [m.text() for m in state.context]


def test_a_value_json_cannot_carry_fails_the_run_naming_the_field(checkpointer: Any) -> None:
    def first(state: Notes) -> dict[str, Any]:
        return {"extra": object(), "context": [Message.text_message("first", role="assistant")]}

    app = two_nodes(first, checkpointer)
    config = {"thread_id": "t"}
    with pytest.raises(UnstorableStateError, match=r"'extra' of Notes cannot be stored") as info:
        app.invoke({"messages": [Message.text_message("hi")]}, config)
    assert info.value.fields == ["extra"]
    stored = app.get_state(config)
    assert stored.execution_meta.status == "error"  # not left "running"
    assert stored.extra is None  # back to its default: nothing unstorable was kept
    assert texts(stored) == ["hi", "first"]
    with pytest.raises(StateError, match="retry it with invoke"):
        app.invoke({"messages": [Message.text_message("more")]}, config)
    result = app.invoke(None, config)  # goes on after the step that was kept
    assert texts(result["state"]) == ["hi", "first", "second"]
    assert result["state"].execution_meta.status == "completed"


def test_a_later_turn_keeps_the_value_stored_before(checkpointer: Any) -> None:
    turns = iter([{"n": 1}, object()])

    def first(state: Notes) -> dict[str, Any]:
        return {"extra": next(turns)}

    app = two_nodes(first, checkpointer)
    config = {"thread_id": "t"}
    app.invoke({"messages": [Message.text_message("one")]}, config)
    with pytest.raises(UnstorableStateError):
        app.invoke({"messages": [Message.text_message("two")]}, config)
    stored = app.get_state(config)
    assert stored.extra == {"n": 1}
    assert texts(stored) == ["one", "second", "two"]
    assert stored.execution_meta.status == "error"


def test_the_last_step_fails_the_same_way_and_retry_only_ends_the_run(checkpointer: Any) -> None:
    def last(state: Notes) -> dict[str, Any]:
        return {"extra": object(), "context": [Message.text_message("last", role="assistant")]}

    graph = StateGraph(Notes)
    graph.add_node("last", last)
    graph.set_entry_point("last")
    app = graph.compile(checkpointer)
    config = {"thread_id": "t"}
    with pytest.raises(UnstorableStateError, match="'extra'"):
        app.invoke({"messages": [Message.text_message("hi")]}, config)
    stored = app.get_state(config)
    assert (stored.execution_meta.status, stored.extra) == ("error", None)
    result = app.invoke(None, config)
    assert texts(result["state"]) == ["hi", "last"]  # the step is not run twice


def test_app_state_changed_in_place_behind_its_checks(checkpointer: Any) -> None:
    def first(state: Notes) -> None:
        state.app_state.root["handle"] = object()  # bypasses set(); the save still catches it

    app = two_nodes(first, checkpointer)
    config = {"thread_id": "t"}
    with pytest.raises(UnstorableStateError, match="'app_state'"):
        app.invoke({"messages": [Message.text_message("hi")]}, config)
    stored = app.get_state(config)
    assert stored.execution_meta.status == "error"
    assert stored.app_state.get() == {}


@pytest.mark.parametrize("where", ["context_summary", "execution_meta.error"])
def test_a_plain_state_set_directly_to_an_object_fails_the_run_the_same_way(
    checkpointer: Any, where: str
) -> None:
    """Direct assignment is not validated; the plain state's cheap row must still refuse it."""

    class Opaque:
        pass

    def first(state: AgentState) -> Message:
        if where == "context_summary":
            state.context_summary = Opaque()  # type: ignore[assignment]
        else:
            state.execution_meta.error = Opaque()  # type: ignore[assignment]
        return Message.text_message("first", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("first", first)
    graph.set_entry_point("first")
    app = graph.compile(checkpointer)
    config = {"thread_id": "t"}
    field = where.split(".")[0]
    with pytest.raises(UnstorableStateError, match=rf"'{field}' of AgentState cannot be stored"):
        app.invoke({"messages": [Message.text_message("hi")]}, config)
    stored = app.get_state(config)
    assert stored.execution_meta.status == "error"  # not left "running"
    assert texts(stored) == ["hi", "first"]


class Scored(AgentState):
    score: float = 0.0
    note: str = ""


@pytest.mark.parametrize(
    ("field", "value"),
    [("score", float("nan")), ("score", float("inf")), ("note", "half a pair \ud800")],
)
def test_a_value_json_has_no_text_for_fails_the_run_naming_the_field(
    checkpointer: Any, field: str, value: Any
) -> None:
    """NaN, infinity and a lone surrogate pass validation and the dump; JSON cannot hold them."""

    def first(state: Scored) -> dict[str, Any]:
        return {field: value, "context": [Message.text_message("first", role="assistant")]}

    graph = StateGraph(Scored)
    graph.add_node("first", first)
    graph.set_entry_point("first")
    app = graph.compile(checkpointer)
    config = {"thread_id": "t"}
    with pytest.raises(
        UnstorableStateError, match=rf"'{field}' of Scored cannot be stored"
    ) as info:
        app.invoke({"messages": [Message.text_message("hi")]}, config)
    assert info.value.fields == [field]
    stored = app.get_state(config)
    assert stored.execution_meta.status == "error"  # not left "running"
    assert getattr(stored, field) == Scored.model_fields[field].default
    assert texts(stored) == ["hi", "first"]


def test_the_word_nan_inside_a_string_is_stored_as_it_is(checkpointer: Any) -> None:
    def first(state: Scored) -> dict[str, Any]:
        return {"note": "NaN and Infinity are words here", "score": 1.5}

    graph = StateGraph(Scored)
    graph.add_node("first", first)
    graph.set_entry_point("first")
    app = graph.compile(checkpointer)
    config = {"thread_id": "t"}
    app.invoke({"messages": [Message.text_message("hi")]}, config)
    stored = app.get_state(config)
    assert (stored.note, stored.score) == ("NaN and Infinity are words here", 1.5)


async def test_a_nul_in_a_field_is_refused_naming_it_on_every_backend(
    make_checkpointer: Any,
) -> None:
    """Postgres cannot store a NUL, so no backend does: the save names the field before writing."""

    def first(state: Scored) -> dict[str, Any]:
        return {
            "note": "before\x00after",
            "context": [Message.text_message("first", role="assistant")],
        }

    graph = StateGraph(Scored)
    graph.add_node("first", first)
    graph.set_entry_point("first")
    app = graph.compile(make_checkpointer())
    config = {"thread_id": "t"}
    with pytest.raises(UnstorableStateError, match=r"'note' of Scored cannot be stored.*NUL"):
        await app.ainvoke({"messages": [Message.text_message("hi")]}, config)
    stored = await app.aget_state(config)
    assert stored.execution_meta.status == "error"
    assert (stored.note, texts(stored)) == ("", ["hi", "first"])
