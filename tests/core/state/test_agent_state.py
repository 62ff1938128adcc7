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
