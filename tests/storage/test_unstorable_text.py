r"""Text a store cannot hold never poisons a thread, on every backend.

Regression (issue 13): a tool output holding a NUL (Postgres cannot store
one) or a lone surrogate (no backend can: it has no UTF-8 encoding) made
every save of the step fail, and every resume ran the step's tools again.
Now such text becomes U+FFFD (noted in the tool message's metadata), values
that cannot be stored at all become failed results naming the tool and the
field, each finished call is saved before anything else can fail, and a node
error whose text holds such characters is still recorded.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.graph._tool_node import STORAGE_NOTES_KEY
from tenxgraph.core.state import (
    AgentState,
    Message,
    TextBlock,
    ThreadKey,
    ToolCallBlock,
    ToolResult,
)
from tenxgraph.errors import NodeError, StateError, UnstorableStateError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadWrite
from tenxgraph.utils.constants import END
from tests.storage.conftest import MakeCheckpointer

NUL = "\x00"
SURROGATE = "\udcff"


class NotesState(AgentState):
    note: str = ""


class Opaque:
    """Not JSON data: no backend can save it."""


def poisoned(current: Any, new: Any) -> Any:
    """A reducer whose result no store can hold: the save after the merge fails."""
    return Opaque()


class PoisonedState(AgentState):
    note: Annotated[Any, poisoned] = ""


def asking(*names: str) -> Any:
    """A first node asking for ``names`` as tool calls, so the thread exists before they run."""

    def ask(state: AgentState) -> dict[str, Any]:
        calls = [ToolCallBlock(id=f"c{i}", name=name) for i, name in enumerate(names)]
        return {"context": [Message(role="assistant", content=calls)]}

    return ask


def agent(
    checkpointer: Checkpointer, tools: list[Any], state: type[AgentState] = NotesState
) -> Any:
    graph: StateGraph[Any] = StateGraph(state)
    graph.add_node("ask", asking(*(tool.__name__ for tool in tools)))
    graph.add_node("tools", ToolNode(tools))
    graph.set_entry_point("ask")
    graph.add_edge("ask", "tools")
    graph.add_edge("tools", END)
    return graph.compile(checkpointer)


async def stored_state(
    make: MakeCheckpointer, used: Checkpointer, backend: str, config: Any
) -> Any:
    """The thread as a fresh checkpointer loads it (memory keeps no data across instances)."""
    checkpointer = used if backend == "memory" else make()
    app = agent(checkpointer, [], NotesState)
    return await app.aget_state(config)


def tool_messages(state: AgentState) -> list[Message]:
    return [m for m in state.context if m.role == "tool"]


OUTPUTS = {
    "nul": (f"x{NUL}y", "x\ufffdy", ["output: a NUL at index 1 replaced by U+FFFD"]),
    "surrogate": (
        f"{SURROGATE}ab{SURROGATE}",
        "\ufffdab\ufffd",
        ["output: a lone surrogate '\\udcff' at index 0 (and 1 more) replaced by U+FFFD"],
    ),
    "nested": (
        {"rows": [{"name": f"a{NUL}"}, {f"k{SURROGATE}": 1}]},
        {"rows": [{"name": "a\ufffd"}, {"k\ufffd": 1}]},
        [
            "output['rows'][0]['name']: a NUL at index 1 replaced by U+FFFD",
            "output['rows'][1] key 'k\\udcff': a lone surrogate '\\udcff' at index 1 "
            "replaced by U+FFFD",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(OUTPUTS))
async def test_unstorable_tool_text_is_replaced_and_each_tool_runs_once(
    make_checkpointer: MakeCheckpointer, backend: str, case: str
) -> None:
    returned, expected, notes = OUTPUTS[case]
    runs: list[str] = []

    def fine() -> str:
        """Side effect counted."""
        runs.append("fine")
        return "ok"

    def odd() -> Any:
        """Returns text the store cannot hold."""
        runs.append("odd")
        return returned

    checkpointer = make_checkpointer()
    app = agent(checkpointer, [fine, odd])
    config = {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}
    result = await app.ainvoke({"messages": [Message.text_message("go")]}, config)
    assert result["state"].execution_meta.status == "completed"
    state = await stored_state(make_checkpointer, checkpointer, backend, config)
    fine_result, odd_result = tool_messages(state)
    assert fine_result.content[0].output == "ok"
    assert odd_result.content[0].output == expected
    assert odd_result.content[0].is_error is False
    assert odd_result.metadata[STORAGE_NOTES_KEY] == notes
    assert STORAGE_NOTES_KEY not in fine_result.metadata
    assert state.execution_meta.tool_ledger == {}
    assert sorted(runs) == ["fine", "odd"]


async def test_text_in_blocks_errors_and_state_updates_is_replaced(
    make_checkpointer: MakeCheckpointer, backend: str
) -> None:
    runs: list[str] = []

    def blocks() -> list[TextBlock]:
        """Content blocks holding a NUL."""
        runs.append("blocks")
        return [TextBlock(text=f"a{NUL}")]

    def broken() -> str:
        """Raises with a NUL in its message."""
        runs.append("broken")
        raise ValueError(f"bad{NUL}byte")

    def update() -> ToolResult:
        """Updates the state with a NUL."""
        runs.append("update")
        return ToolResult(message="done", state={"note": f"n{NUL}"})

    checkpointer = make_checkpointer()
    app = agent(checkpointer, [blocks, broken, update])
    config = {"thread_id": "mixed"}
    await app.ainvoke({"messages": [Message.text_message("go")]}, config)
    state = await stored_state(make_checkpointer, checkpointer, backend, config)
    first, second, third = tool_messages(state)
    assert first.content[0].output[0].text == "a\ufffd"
    assert first.metadata[STORAGE_NOTES_KEY] == [
        "output[0]['text']: a NUL at index 1 replaced by U+FFFD"
    ]
    assert second.content[0].is_error
    assert second.content[0].output == "tool 'broken' failed: ValueError: bad\ufffdbyte"
    assert third.content[0].output == "done"
    assert third.metadata[STORAGE_NOTES_KEY] == [
        "ToolResult.state['note']: a NUL at index 1 replaced by U+FFFD"
    ]
    assert state.note == "n\ufffd"
    assert sorted(runs) == ["blocks", "broken", "update"]


@pytest.mark.parametrize("value", [math.nan, -math.inf])
async def test_output_json_cannot_hold_is_a_failed_result_naming_tool_and_field(
    make_checkpointer: MakeCheckpointer, backend: str, value: float
) -> None:
    runs: list[str] = []

    def score() -> Any:
        """Returns a number JSON has no word for."""
        runs.append("score")
        return ToolResult(message={"scores": [1.0, value]}, state={"note": "kept?"})

    checkpointer = make_checkpointer()
    app = agent(checkpointer, [score])
    config = {"thread_id": "nan"}
    await app.ainvoke({"messages": [Message.text_message("go")]}, config)
    state = await stored_state(make_checkpointer, checkpointer, backend, config)
    (answer,) = tool_messages(state)
    block = answer.content[0]
    assert block.is_error and block.status == "failed"
    assert block.output == (
        f"tool 'score' ran, but its result cannot be stored: output['scores'][1] is {value!r}, "
        "which JSON cannot hold (it would become null); its state update was not applied"
    )
    assert state.note == ""
    assert runs == ["score"]


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_failed_save_after_the_tools_never_runs_them_again(
    make_checkpointer: MakeCheckpointer, backend: str, calls: int
) -> None:
    runs: list[str] = []

    def first() -> ToolResult:
        """Its update makes the step's save fail (the reducer returns an ``Opaque``)."""
        runs.append("first")
        return ToolResult(message="one", state={"note": "x"})

    async def second() -> str:
        """A sibling finishing last, after the first call's progress was saved."""
        runs.append("second")
        await asyncio.sleep(0.2)
        return "two"

    checkpointer = make_checkpointer()
    app = agent(checkpointer, [first, second][:calls], PoisonedState)
    config = {"thread_id": f"poisoned-{calls}"}
    with pytest.raises(UnstorableStateError, match=r"'note' of PoisonedState.*Opaque"):
        await app.ainvoke({"messages": [Message.text_message("go")]}, config)
    result = await app.ainvoke(None, config)  # goes on from the results already saved
    state = result["state"]
    assert state.execution_meta.status == "completed"
    assert [m.text() for m in tool_messages(state)] == ["one", "two"][:calls]
    assert state.note == ""  # the value no store can hold was not kept
    assert sorted(runs) == ["first", "second"][:calls]


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
async def test_a_node_error_holding_unstorable_text_is_recorded(
    make_checkpointer: MakeCheckpointer, backend: str, bad: str
) -> None:
    def explode(state: AgentState) -> None:
        raise RuntimeError(f"broke{bad}here")

    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("explode", explode)
    graph.set_entry_point("explode")
    checkpointer = make_checkpointer()
    app = graph.compile(checkpointer)
    config = {"thread_id": "error"}
    with pytest.raises(NodeError, match="broke"):
        await app.ainvoke({"messages": [Message.text_message("go")]}, config)
    reader = checkpointer if backend == "memory" else make_checkpointer()
    state = await graph.compile(reader).aget_state(config)
    assert state.execution_meta.status == "error"
    assert state.execution_meta.error == "RuntimeError: broke\ufffdhere"


async def test_a_direct_call_returning_unstorable_text_is_recorded(
    make_checkpointer: MakeCheckpointer, backend: str
) -> None:
    runs: list[str] = []

    def odd(text: str) -> str:
        """Echoes with a NUL."""
        runs.append(text)
        return f"{text}{NUL}"

    checkpointer = make_checkpointer()
    app = agent(checkpointer, [odd])
    config = {"thread_id": "direct"}
    result = await app.acall_tool("odd", {"text": "hi"}, config)
    assert (result.output, result.is_error) == ("hi\ufffd", False)
    state = await stored_state(make_checkpointer, checkpointer, backend, config)
    (answer,) = tool_messages(state)
    assert answer.content[0].output == "hi\ufffd"
    assert answer.metadata[STORAGE_NOTES_KEY] == ["output: a NUL at index 2 replaced by U+FFFD"]
    assert runs == ["hi"]


@pytest.mark.parametrize(
    ("metadata", "why"),
    [({"note": f"a{SURROGATE}"}, "lone surrogates"), ({"score": math.nan}, "not JSON compliant")],
)
async def test_metadata_json_cannot_hold_is_refused_before_anything_is_written(
    checkpointer: Checkpointer, metadata: dict[str, Any], why: str
) -> None:
    key = ThreadKey(f"t-{uuid.uuid4().hex[:8]}")
    write = ThreadWrite(0, [Message.text_message("hi")], {}, [(0, 1)], "n", 1, metadata=metadata)
    with pytest.raises(StateError, match=rf"metadata must be JSON data .*{why}"):
        await checkpointer.asave(key, write)
    assert await checkpointer.aload(key) is None
