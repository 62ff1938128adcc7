from __future__ import annotations

from typing import Annotated

import pytest

from tenxgraph.core.state import (
    AgentState,
    Message,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    add_messages,
    append_items,
    field_reducers,
    remove_tool_messages,
    replace_messages,
    replace_value,
)
from tenxgraph.core.state.agent_state import ExecMeta, fresh_exec_meta
from tenxgraph.core.state.edits import RemoveMessage
from tenxgraph.core.state.reducers import MessageIndex
from tenxgraph.errors import GraphBuildError
from tenxgraph.utils.constants import START


def test_defaults_and_helpers() -> None:
    state = AgentState()
    assert state.context == []
    assert state.context_summary is None
    assert state.execution_meta.current_node == START
    assert not state.is_running()
    state.execution_meta.status = "running"
    assert state.is_running()
    state.advance_step()
    state.advance_step()
    assert state.execution_meta.step == 2
    state.set_current_node("MAIN")
    assert state.execution_meta.current_node == "MAIN"
    assert not state.is_stopped_requested()
    state.execution_meta.stop_requested = True
    assert state.is_stopped_requested()
    state.execution_meta.status = "interrupted"
    assert state.is_interrupted()
    state.complete()
    assert state.execution_meta.status == "completed"
    state.error("boom")
    assert state.execution_meta.status == "error"
    assert state.execution_meta.error == "boom"


def test_custom_state_snippet() -> None:
    # 000 "Custom state", title="state.py"
    class MyState(AgentState):
        user_id: str = ""
        session_data: dict = {}  # type: ignore[type-arg]
        selected_city: str = ""

    state = MyState(selected_city="Paris")
    assert state.selected_city == "Paris"
    assert MyState().session_data == {}


def test_add_messages_documented_rules() -> None:
    first = Message.text_message("a", message_id="1")
    again = Message.text_message("a again", message_id="1")
    delta = Message.text_message("partial", role="assistant", delta=True)
    new = Message.text_message("b", role="assistant")
    left = [first]
    merged = add_messages(left, [again, delta, new])
    assert merged == [first, new]
    assert left == [first]


def test_other_reducers() -> None:
    a, b = Message.text_message("a"), Message.text_message("b")
    assert replace_messages([a], [b, Message.text_message("d", delta=True)]) == [b]
    assert append_items([1, 2], [3]) == [1, 2, 3]
    assert replace_value(1, 2) == 2


def test_remove_tool_messages_removes_whole_groups() -> None:
    user = Message.text_message("weather?")
    call = Message(
        role="assistant",
        content=[ToolCallBlock(id="c1", name="w", args={}), ToolCallBlock(id="c2", name="w")],
    )
    results = [
        Message.tool_message([ToolResultBlock(call_id="c1", output="sun")]),
        Message.tool_message([ToolResultBlock(call_id="c2", output="rain")]),
    ]
    mixed = Message(
        role="assistant",
        content=[
            {"type": "text", "text": "let me check"},  # type: ignore[list-item]
            ToolCallBlock(id="c3", name="w"),
        ],
    )
    result3 = Message.tool_message([ToolResultBlock(call_id="c3", output="snow")])
    answer = Message.text_message("mixed weather", role="assistant")
    kept = remove_tool_messages([user, call, *results, mixed, result3, answer])
    assert [m.text() for m in kept] == ["weather?", "let me check", "mixed weather"]
    assert all(not m.tool_calls() for m in kept)


def test_reducer_fields_are_found_and_checked() -> None:
    class Tagged(AgentState):
        tags: Annotated[list[str], append_items] = []
        plain: int = 0

    reducers = field_reducers(Tagged)
    assert reducers == {"context": add_messages, "tags": append_items}

    def one_arg(x: list[str]) -> list[str]:
        return x

    class Bad(AgentState):
        tags: Annotated[list[str], one_arg] = []

    with pytest.raises(GraphBuildError, match=r"Bad.tags.*exactly two arguments"):
        field_reducers(Bad)


def test_message_index_merges_incrementally_with_add_messages_rules() -> None:
    history = [Message.text_message(str(i), message_id=i) for i in range(100)]
    index = MessageIndex(history)
    dup = Message.text_message("dup", message_id=5)
    new = Message.text_message("new", message_id="n")
    added = index.extend(history, [dup, new, Message.text_message("d", delta=True)])
    assert added == [new]
    assert history[-1] is new and len(history) == 101
    # the list replaced behind the index's back: it rebuilds, still correct
    other = [Message.text_message("x", message_id="x")]
    assert index.extend(other, [Message.text_message("x2", message_id="x")]) == []


def test_merge_returned_merges_a_list_of_messages_or_changes_nothing() -> None:
    state = AgentState()
    first = Message.text_message("a", message_id="a")
    assert state.merge_returned([first]) == [first]
    dup, new = Message.text_message("again", message_id="a"), Message.text_message("b")
    delta = Message.text_message("chunk", delta=True)
    assert state.merge_returned([dup, new, delta]) == [new]  # add_messages' rules
    before = list(state.context)
    # anything but Message objects: None, and nothing merged (the general merge takes it)
    assert state.merge_returned([Message.text_message("c"), ("user", "hi")]) is None
    assert state.merge_returned([RemoveMessage("a")]) is None
    assert state.context == before
    # a direct edit since the last merge: None, so the general merge sees it first
    state.context.append(Message.text_message("direct"))
    assert state.merge_returned([Message.text_message("d")]) is None
    assert [m.text() for m in state.take_direct_additions()] == ["direct"]
    index = MessageIndex([])
    assert index.extend_covered([], [first]) is None  # not the list it covers


def test_a_fresh_exec_meta_is_exec_meta() -> None:
    made, reference = fresh_exec_meta(), ExecMeta()
    assert type(made) is ExecMeta and made == reference
    assert made.model_dump() == reference.model_dump()
    assert made.model_fields_set == reference.model_fields_set == set()
    assert made.__pydantic_extra__ is None and made.__pydantic_private__ is None
    other = fresh_exec_meta()
    assert made.resume_values is not other.resume_values
    assert made.tool_ledger is not other.tool_ledger and made.tool_starts is not other.tool_starts
    made.tool_ledger["c"] = {"x": 1}
    assert AgentState().execution_meta.tool_ledger == {}


def test_exec_meta_defaults_without_a_factory_are_immutable() -> None:
    """``fresh_exec_meta`` shares these between every state: a mutable one would leak."""
    for name, info in ExecMeta.model_fields.items():
        if info.default_factory is None:
            assert isinstance(info.default, str | int | float | bool | tuple | None), name
    assert not ExecMeta.__pydantic_post_init__  # fresh_exec_meta skips model_post_init
    assert not ExecMeta.__pydantic_decorators__.model_validators  # and model validators


def test_tool_result_snippet() -> None:
    # 000 "ToolResult: tools that update state", as written
    class MyState(AgentState):
        selected_city: str = ""

    def select_city(city: str) -> ToolResult:
        """Set the currently selected city in the workflow."""
        return ToolResult(
            message=f"City updated to '{city}'.",  # returned to the model
            state={"selected_city": city},  # updates MyState.selected_city
        )

    result = select_city("Paris")
    assert result.message == "City updated to 'Paris'."
    assert result.state == {"selected_city": "Paris"}
