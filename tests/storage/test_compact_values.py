"""State rows keep ``execution_meta`` short, and rows in the old full form still load.

Every checkpoint stores the state's non-message fields, so their size counts
per turn. ``encode_values`` leaves out the runtime's bookkeeping at its
defaults (loading fills them back in) but always writes the run's status,
node, step and turn start, which tools read from the raw row; the
application's fields are written whole.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import Field

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.core.state.agent_state import ExecMeta
from tenxgraph.core.state.reducers import append_items
from tenxgraph.errors import CorruptRecordError, UnstorableStateError
from tenxgraph.storage.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    ThreadWrite,
    state_codec,
)
from tenxgraph.storage.checkpointer.state_codec import encode_values
from tenxgraph.utils import END, START


class Notes(AgentState):
    notes: Annotated[list[str], append_items] = Field(default_factory=list)
    city: str = "Lisbon"
    score: float | None = None


def full_form(state: AgentState) -> dict[str, Any]:
    """A state row as it was written before it was compact: every field, defaults included."""
    return state.model_dump(mode="json", exclude={"context"})


def test_a_row_keeps_only_the_fields_away_from_their_defaults_and_the_run_position() -> None:
    state = Notes(city="Porto")
    state.execution_meta.status, state.execution_meta.step = "completed", 2
    state.execution_meta.current_node = "answer"
    values = encode_values(state)
    assert values == {
        **full_form(state),
        "execution_meta": {
            "current_node": "answer",
            "step": 2,
            "status": "completed",
            "turn_start": 0,
        },
    }
    assert len(json.dumps(values)) < len(json.dumps(full_form(state))) * 0.7
    assert Notes.model_validate({**values, "context": []}) == state


def test_a_fresh_state_still_names_its_status_node_step_and_turn_start() -> None:
    values = encode_values(AgentState())
    meta = {"current_node": START, "step": 0, "status": "idle", "turn_start": 0}
    assert values["execution_meta"] == meta


def test_bookkeeping_away_from_its_defaults_is_kept() -> None:
    state = Notes()
    meta = state.execution_meta
    meta.status, meta.error, meta.next_node = "error", "RuntimeError: x", "reply"
    meta.tool_ledger = {"c1": {"output": "done"}}
    meta.resume_values = [None, {"ok": True}]
    values = encode_values(state)
    assert values["execution_meta"]["error"] == "RuntimeError: x"
    assert values["execution_meta"]["resume_values"] == [None, {"ok": True}]
    assert "stop_requested" not in values["execution_meta"]
    assert Notes.model_validate({**values, "context": []}) == state


def reply(state: Notes) -> dict[str, Any]:
    return {"context": [Message.text_message("ok", role="assistant")], "notes": ["seen"]}


async def test_old_full_form_rows_and_new_compact_rows_load_the_same_state(
    checkpointer: Checkpointer,
) -> None:
    graph = StateGraph(Notes)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    app = graph.compile(checkpointer)
    question = Message.text_message("hi")
    seeded = Notes(context=[question], city="Porto", score=1.5)
    old = ThreadWrite(0, [question], full_form(seeded), [(0, 1)], node="seed", step=0)
    await checkpointer.asave(ThreadKey("old"), old)
    compact = ThreadWrite(0, [question], encode_values(seeded), [(0, 1)], node="seed", step=0)
    await checkpointer.asave(ThreadKey("new"), compact)
    loaded = [await app.aget_state({"thread_id": name}) for name in ("old", "new")]
    assert [state.model_dump() for state in loaded if state] == [seeded.model_dump()] * 2
    results = [await app.ainvoke({}, {"thread_id": name}) for name in ("old", "new")]
    for result in results:
        assert result["state"].notes == ["seen"]
        assert result["state"].city == "Porto"
    stored = await checkpointer.aload(ThreadKey("old"))
    assert stored is not None
    meta = stored.values["execution_meta"]  # the next save wrote the short form
    assert meta["status"] == "completed" and "stop_requested" not in meta


def pydantic_form(state: AgentState) -> dict[str, Any]:
    """The row as pydantic's dumps make it, which the short cuts for plain states must match."""
    meta = state.execution_meta
    forced = ("current_node", "step", "status", "turn_start")
    return {
        **state.model_dump(mode="json", exclude={"context", "execution_meta"}),
        "execution_meta": {
            **{name: getattr(meta, name) for name in forced},
            **meta.model_dump(mode="json", exclude_defaults=True),
        },
    }


def states_to_encode() -> list[AgentState]:
    """Plain states (the short cuts apply) and states one field away from plain (they do not)."""
    states: list[AgentState] = [AgentState(), Notes(city="Porto")]
    for field, value in [
        ("error", "ValueError: x"),
        ("stop_requested", True),
        ("next_node", "b"),
        ("interrupt_kind", "before"),
        ("interrupt_value", {"ask": 1}),
        ("resume_values", [1]),
        ("tool_ledger", {"c": {"output": 1}}),
        ("tool_starts", {"c": 2}),
        ("tasks", [{"node": "a"}, {"node": "b", "arg": {"n": 1}}]),
        ("task_writes", {"1": {"values": [["notes", ["x"]]]}}),
        ("joins", {"a+b->c": ["a"]}),
        ("step", 7),
        ("turn_start", 3),
    ]:
        state = AgentState(context_summary="earlier")
        setattr(state.execution_meta, field, value)
        states.append(state)
    with_app_state = AgentState()
    with_app_state.app_state.set("k", [1, 2])
    states += [with_app_state, AgentState(structured_response={"answer": 1})]
    return states


def test_plain_states_are_encoded_as_pydantic_dumps_them_key_for_key() -> None:
    for state in states_to_encode():
        values = encode_values(state)
        assert json.dumps(values) == json.dumps(pydantic_form(state))
        assert type(state).model_validate({**values, "context": []}) == state


def test_an_encoded_row_shares_nothing_with_the_state() -> None:
    """The session keeps the row to rebuild the state: a later change must not reach it."""
    state = AgentState()
    values = encode_values(state)
    state.app_state.set("k", 1)
    state.execution_meta.step = 5
    assert values["app_state"] == {} and values["execution_meta"]["step"] == 0


def test_the_short_cuts_know_every_state_and_bookkeeping_field() -> None:
    """A field added to ``AgentState`` or ``ExecMeta`` must be known to the short cuts.

    ``_plain_values`` writes the plain state's non-message fields by name and
    ``_meta_data`` the bookkeeping's plain fields by name: a new field they
    did not know would be left out of every row they make.
    """
    assert set(AgentState.model_fields) == {
        "context",  # apart: the log
        "execution_meta",  # apart: _meta_data
        "context_summary",
        "app_state",
        "structured_response",
    }
    always = {"current_node", "step", "status", "turn_start"}
    scalars = {name for name, _ in state_codec._META_SCALARS}
    json_valued = {"interrupt_value", "resume_values", "tool_ledger", "tool_starts"}  # refused
    json_valued |= {"tasks", "task_writes", "joins", "subgraphs"}
    assert set(ExecMeta.model_fields) == always | scalars | json_valued


def test_a_save_row_is_the_text_pydantic_writes_for_every_state() -> None:
    """``encode_row`` formats a plain state's row itself: the same data and bytes as the dump."""
    states = states_to_encode()
    names = ["a", "é ü", 'say "hi" \\ there', "line\nbreak\x1f", "\u2028", "__start__"]
    for node, next_node, step in [(n, m, s) for n in names for m in (None, *names) for s in (0, 9)]:
        state = AgentState()
        meta = state.execution_meta
        meta.current_node, meta.next_node, meta.step, meta.status = node, next_node, step, "running"
        states.append(state)
    plain = 0
    for state in states:
        values, text = state_codec.encode_row(state)
        expected = encode_values(state)
        plain += values is None
        assert (json.loads(text) if values is None else values) == expected
        assert text == state_codec.values_text(expected, type(state).__name__)
        assert type(text) is type(state_codec.values_text(expected, "AgentState"))
    assert plain >= 2 * len(names) ** 2  # each named row twice: made, then from the cache


def test_a_plain_row_leaves_its_data_to_its_text() -> None:
    """A plain row's data is None (the text holds it); any other row's is the dump."""
    state = AgentState()
    assert state_codec.encode_row(state)[0] is None
    state.app_state.set("k", 1)
    assert state_codec.encode_row(state)[0] == encode_values(state)


def test_a_plain_row_takes_names_and_ints_of_the_exact_types_only() -> None:
    """A str subclass or a bool where the row wants a str or an int is written by pydantic."""

    class Name(str):
        pass

    for field, value in [
        ("current_node", Name("a")),
        ("status", Name("running")),
        ("next_node", Name("b")),
        ("step", True),
        ("turn_start", True),
    ]:
        state = AgentState()
        state.execution_meta.current_node, state.execution_meta.next_node = "a", "b"
        state_codec.encode_row(state)  # its names are known now
        setattr(state.execution_meta, field, value)
        values, text = state_codec.encode_row(state)
        assert values == encode_values(state), field
        assert json.loads(text) == values


def test_a_save_row_refuses_names_json_cannot_hold_as_the_dump_does() -> None:
    for bad in ["a\x00b", "a\ud800"]:
        state = AgentState()
        state.execution_meta.next_node = bad
        with pytest.raises(UnstorableStateError, match="'execution_meta' of AgentState"):
            state_codec.encode_row(state)


def test_a_save_row_shares_nothing_with_the_state() -> None:
    state = AgentState()
    state.app_state.set("k", 1)
    values, _ = state_codec.encode_row(state)
    assert values is not None
    state.execution_meta.step = 5
    state.app_state.set("k", 2)
    assert values["execution_meta"]["step"] == 0 and values["app_state"] == {"k": 1}


def _meta(**fields: Any) -> AgentState:
    state = AgentState()
    state.execution_meta.current_node, state.execution_meta.step = "answer", 3
    state.execution_meta.status, state.execution_meta.turn_start = "running", 2
    for name, value in fields.items():
        setattr(state.execution_meta, name, value)
    return state


def _with(**fields: Any) -> AgentState:
    state = _meta()
    for name, value in fields.items():
        setattr(state, name, value)
    return state


ROW_STATES = {
    "plain": _meta(),
    "next node": _meta(next_node="tools"),
    "error": _meta(error="boom"),
    "stop requested": _meta(stop_requested=True),
    "interrupt kind": _meta(interrupt_kind="before"),
    "interrupt value": _meta(interrupt_value={"ask": "ok?"}),
    "resume values": _meta(resume_values=["yes"]),
    "tool ledger": _meta(tool_ledger={"call-1": {"output": "done"}}),
    "tool starts": _meta(tool_starts={"call-1": 1}),
    "tasks": _meta(tasks=[{"node": "a"}]),
    "task writes": _meta(task_writes={"a": {"x": 1}}),
    "joins": _meta(joins={"j": ["a"]}),
    "subgraphs": _meta(subgraphs={"inner": {"step": 1}}),
    "quoted node": _meta(current_node='say "hi"\n'),
    "accented status and next": _meta(status="running", next_node="réponse"),
    "a str subclass as node": _meta(current_node=type("Name", (str,), {})("answer")),
    "summary": _with(context_summary="earlier: hello"),
    "structured response": _with(structured_response={"city": "Porto"}),
    "app state": AgentState.model_validate({"app_state": {"k": 1}}),
    "a subclass": Notes(notes=["n"], city="Porto"),
}


@pytest.mark.parametrize("state", ROW_STATES.values(), ids=ROW_STATES.keys())
def test_the_row_text_is_the_stored_values_of_every_kind_of_state(state: AgentState) -> None:
    """The plain row's short cut writes what the general dump writes, and only for plain rows."""
    data, text = state_codec.encode_row(state)
    values = encode_values(state)
    assert json.loads(text) == values
    assert data is None or data == values
    assert type(state).model_validate({**values, "context": []}) == state


def test_objects_in_fields_are_refused_naming_each_field_and_only_those() -> None:
    unsent = Message.text_message("hi")
    unsent.metadata["handle"] = object()  # messages go to the log: not a field named here
    state = Notes(context=[unsent])
    state.context_summary = object()  # type: ignore[assignment]  # set directly: unvalidated
    state.score = object()  # type: ignore[assignment]
    expected = (
        r"^state field\(s\) 'context_summary', 'score' of Notes cannot be stored: "
        r"a stored value must be JSON data \("
    )
    with pytest.raises(UnstorableStateError, match=expected) as raised:
        encode_values(state)
    assert raised.value.fields == ["context_summary", "score"]
    for plain, field in [
        (_meta(error=object()), "execution_meta"),
        (_with(context_summary=object()), "context_summary"),
    ]:  # the short cuts copy no object: the dump refuses it, naming its field
        with pytest.raises(UnstorableStateError, match=rf"^state field\(s\) '{field}' of"):
            encode_values(plain)


def test_a_nul_in_a_node_name_is_refused_before_anything_is_written() -> None:
    with pytest.raises(UnstorableStateError, match=r"^state field\(s\) 'execution_meta' of"):
        state_codec.encode_row(_meta(current_node="a\x00b"))


def test_text_json_cannot_hold_is_refused_naming_the_field_and_why() -> None:
    state = Notes(city="\ud800")
    with pytest.raises(UnstorableStateError) as raised:
        state_codec.encode_row(state)
    assert str(raised.value) == (
        "state field(s) 'city' of Notes cannot be stored: a stored value must be JSON data "
        "(NaN, infinity, a lone surrogate or a NUL character)"
    )
    assert raised.value.fields == ["city"]


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"city": 5}, "'city': Input should be a valid string"),
        ({"execution_meta": {"step": "three"}}, "'execution_meta.step': Input should be a valid"),
    ],
)
async def test_a_stored_state_that_does_not_fit_its_class_names_the_field(
    values: dict[str, Any], where: str
) -> None:
    checkpointer = InMemoryCheckpointer()
    key = ThreadKey("t", "alice")
    write = ThreadWrite(0, [Message.text_message("hi")], values, [(0, 1)], "n", 0)
    await checkpointer.asave(key, write)
    stored = await checkpointer.aload(key)
    assert stored is not None
    expected = f"thread 't' (user 'alice'): stored state does not fit Notes: field {where}"
    with pytest.raises(CorruptRecordError) as raised:
        state_codec.decode_state(Notes, stored)
    assert str(raised.value).startswith(expected)
