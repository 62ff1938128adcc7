"""What a user of a parallel step relies on and the example tests left unchecked.

Each test states one promise of docs/graph.md ("Parallel branches"): where a
failed or paused step says it failed or paused (the node a log or a stream
consumer reads), where ``invoke(None)`` goes on after a conflict or a failed
router, and that a branch asking two questions keeps its first answer.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import (
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunControl,
    RunHooks,
    Send,
    StateGraph,
    UpdateEvent,
    interrupt,
)
from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import NodeError, RecursionLimitError, StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import END, START


class Notes(AgentState):
    notes: Annotated[list[str], operator.add] = []
    topic: str = ""


def _streamed(app: Any, inputs: Any, config: dict[str, Any]) -> tuple[list[Any], Exception | None]:
    """Every event of one run, and what it raised (None when it did not)."""
    events: list[Any] = []

    async def consume() -> None:
        async for event in app.astream(inputs, config):
            events.append(event)

    try:
        asyncio.run(consume())
    except Exception as exc:
        return events, exc
    return events, None


def _fan_out(first: Any, second: Any) -> StateGraph[Notes]:
    graph = StateGraph(Notes)
    graph.add_node("first", first)
    graph.add_node("second", second)
    graph.add_edge(START, "first")
    graph.add_edge(START, "second")
    return graph


def test_a_failed_branch_is_named_in_the_error_and_its_event() -> None:
    def broken(state: Notes) -> dict[str, Any]:
        raise ValueError("disk full")

    app = _fan_out(lambda state: {"notes": ["ok"]}, broken).compile(InMemoryCheckpointer())
    events, raised = _streamed(app, {"messages": [("user", "go")]}, {"thread_id": "t"})
    assert isinstance(raised, NodeError)
    assert raised.node == "second"
    assert str(raised) == "node 'second': raised ValueError: disk full"
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].node == "second"


def test_a_conflict_fails_the_step_and_invoke_none_runs_it_again() -> None:
    app = _fan_out(lambda state: {"topic": "a"}, lambda state: {"topic": "b"}).compile(
        InMemoryCheckpointer()
    )
    config = {"thread_id": "t"}
    events, raised = _streamed(app, {"messages": [("user", "go")]}, config)
    assert isinstance(raised, StateError)
    assert "field 'topic'" in str(raised) and "'first', 'second'" in str(raised)
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].node == PARALLEL
    meta = app.get_state(config).execution_meta
    assert (meta.status, meta.next_node) == ("error", PARALLEL)
    assert sorted(meta.task_writes) == ["0", "1"]  # both writes kept: the merge is what failed


def test_a_router_failing_after_the_merge_keeps_the_merge_and_ends_the_turn() -> None:
    graph = _fan_out(lambda state: {"notes": ["a"]}, lambda state: {"notes": ["b"]})
    graph.add_node("after", lambda state: {"notes": ["after"]})

    def route(state: Notes) -> str:
        raise ValueError("no route")

    graph.add_conditional_edges("first", route)
    graph.add_edge("second", "after")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    events, raised = _streamed(app, {"messages": [("user", "go")]}, config)
    assert isinstance(raised, NodeError)
    assert "no route" in str(raised)
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].node == PARALLEL
    assert "no route" in events[-1].error
    saved = app.get_state(config)
    assert saved.notes == ["a", "b"]  # the merge stands
    assert (saved.execution_meta.status, saved.execution_meta.next_node) == ("error", END)
    assert saved.execution_meta.tasks == []


def test_a_branch_that_pauses_is_named_in_the_interrupt_event() -> None:
    def ask(state: Notes) -> dict[str, Any]:
        return {"notes": [f"ask:{interrupt('sure?')}"]}

    app = _fan_out(lambda state: {"notes": ["done"]}, ask).compile(InMemoryCheckpointer())
    events, raised = _streamed(app, {"messages": [("user", "go")]}, {"thread_id": "t"})
    assert raised is None
    paused = [event for event in events if isinstance(event, InterruptEvent)]
    assert [(event.node, event.value) for event in paused] == [("second", "sure?")]


def test_a_branch_asking_twice_keeps_its_first_answer() -> None:
    def ask(state: Notes) -> dict[str, Any]:
        first = interrupt("first?")
        second = interrupt("second?")
        return {"notes": [f"{first}+{second}"]}

    app = _fan_out(lambda state: {"notes": ["done"]}, ask).compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    assert app.invoke({"messages": [("user", "go")]}, config)["interrupt"].value == "first?"
    assert app.invoke({"resume": "x"}, config)["interrupt"].value == "second?"
    result = app.invoke({"resume": "y"}, config)
    assert result["state"].notes == ["done", "x+y"]


def test_a_node_after_a_resumed_step_asks_afresh() -> None:
    def ask(state: Notes) -> dict[str, Any]:
        return {"notes": [f"ask:{interrupt('branch?')}"]}

    def review(state: Notes) -> dict[str, Any]:
        return {"notes": [f"review:{interrupt('review?')}"]}

    graph = _fan_out(lambda state: {"notes": ["done"]}, ask)
    graph.add_node("review", review)
    graph.add_edge(["first", "second"], "review")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    assert app.invoke({"messages": [("user", "go")]}, config)["interrupt"].value == "branch?"
    assert app.invoke({"resume": "a"}, config)["interrupt"].value == "review?"
    assert app.get_state(config).execution_meta.resume_values == []
    result = app.invoke({"resume": "b"}, config)
    assert result["state"].notes == ["done", "ask:a", "review:b"]


class Squares(AgentState):
    items: list[int] = []


def _send_to_agent(arg: Any) -> Any:
    from tenxgraph.core.graph import Agent

    graph = StateGraph(Squares)
    graph.add_node("plan", lambda state: None)
    graph.add_node("ask", Agent(ScriptedModel(["one"])))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("ask", arg)])
    return graph.compile()


def test_a_send_arg_an_agent_cannot_read_is_an_error_naming_the_node_and_the_type() -> None:
    with pytest.raises(NodeError) as raised:
        _send_to_agent(42).invoke({})
    assert raised.value.node == "ask"
    assert str(raised.value).endswith(
        "a Send to a Agent needs a Squares (or a dict of its fields) as its arg, got int"
    )
    with pytest.raises(NodeError) as raised:
        _send_to_agent({"items": "not a list"}).invoke({})
    assert raised.value.node == "ask"
    assert str(raised.value).startswith("node 'ask': its Send arg is no Squares: ")
    assert "items" in str(raised.value)


def test_a_send_arg_that_is_a_state_is_given_as_it_is() -> None:
    given = Squares(items=[3], context=[Message.text_message("q")])
    result = _send_to_agent(given).invoke({})
    assert [m.text() for m in result["state"].context] == ["one"]


def _said(text: str) -> Message:
    return Message.text_message(text, role="assistant")


def test_a_parallel_step_streams_each_task_s_messages_and_update_in_merge_order() -> None:
    said = _said("from first")
    graph = _fan_out(
        lambda state: {"notes": ["a"], "context": [said]}, lambda state: {"notes": ["b"]}
    )
    events = list(graph.compile().stream({}))
    assert events[:3] == [
        MessageEvent("first", said),
        UpdateEvent("first", 1, (said,), {"notes": ["a"]}),
        UpdateEvent("second", 1, (), {"notes": ["a", "b"]}),
    ]


def test_the_merged_step_is_saved_with_where_the_run_goes_next() -> None:
    graph = _fan_out(
        lambda state: {"notes": ["a"], "context": [_said("A")]}, lambda state: {"notes": ["b"]}
    )
    graph.add_node("after", lambda state: {"notes": ["after"]})
    graph.add_edge("first", "after")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    app.invoke({"messages": [("user", "go")]}, config)
    merged = [s for s in app.get_state_history(config) if s.state.notes == ["a", "b"]]
    assert [(s.node, s.state.execution_meta.next_node) for s in merged] == [(PARALLEL, "after")]
    assert [m.text() for m in merged[0].state.context] == ["go", "A"]


def test_a_stream_consumer_that_stops_after_the_last_step_finds_it_saved() -> None:
    graph = _fan_out(lambda state: {"notes": ["a"]}, lambda state: {"notes": ["b"]})
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    for event in app.stream({"messages": [("user", "go")]}, config):
        if isinstance(event, UpdateEvent):
            break
    assert app.get_state(config).notes == ["a", "b"]


def test_interrupt_after_a_branch_is_named_in_the_interrupt_event() -> None:
    graph = _fan_out(lambda state: {"notes": ["a"]}, lambda state: {"notes": ["b"]})
    app = graph.compile(InMemoryCheckpointer(), interrupt_after=["second"])
    events, raised = _streamed(app, {"messages": [("user", "go")]}, {"thread_id": "t"})
    assert raised is None
    paused = [event for event in events if isinstance(event, InterruptEvent)]
    assert [(event.node, event.when) for event in paused] == [("second", "after")]


class _Recorder(RunHooks):
    """Every node start and end a run reports: (event, node, step, error text)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int, str | None]] = []

    async def on_node_start(self, run: RunControl, node: str, step: int) -> None:
        assert isinstance(run, RunControl)
        self.seen.append(("start", node, step, None))

    async def on_node_end(
        self, run: RunControl, node: str, step: int, error: BaseException | None
    ) -> None:
        assert isinstance(run, RunControl)
        self.seen.append(("end", node, step, None if error is None else type(error).__name__))


def test_hooks_see_each_branch_start_and_end_with_its_outcome() -> None:
    def broken(state: Notes) -> dict[str, Any]:
        raise ValueError("disk full")

    def ask(state: Notes) -> dict[str, Any]:
        return {"notes": [interrupt("sure?")]}

    for second, outcome in ((broken, "ValueError"), (ask, "GraphInterrupt"), (None, None)):
        recorder = _Recorder()
        node = second or (lambda state: {"notes": ["b"]})
        app = _fan_out(lambda state: {"notes": ["a"]}, node).compile(
            InMemoryCheckpointer(), hooks=[recorder]
        )
        _streamed(app, {"messages": [("user", "go")]}, {"thread_id": "t"})
        assert ("start", "second", 1, None) in recorder.seen
        assert ("end", "second", 1, outcome) in recorder.seen
        if second is not broken:  # a failure may cancel its sibling before it ends
            ends = sorted(event for event in recorder.seen if event[0] == "end")
            assert ends == [("end", "first", 1, None), ("end", "second", 1, outcome)]


def test_interrupt_before_a_branch_pauses_before_the_step_naming_it() -> None:
    graph = _fan_out(lambda state: {"notes": ["a"]}, lambda state: {"notes": ["b"]})
    app = graph.compile(InMemoryCheckpointer(), interrupt_before=["second"])
    config = {"thread_id": "t"}
    events, raised = _streamed(app, {"messages": [("user", "go")]}, config)
    assert raised is None
    paused = [event for event in events if isinstance(event, InterruptEvent)]
    assert [(event.node, event.when) for event in paused] == [("second", "before")]
    assert app.get_state(config).execution_meta.next_node == PARALLEL
    assert app.invoke({"resume": None}, config)["state"].notes == ["a", "b"]


def test_the_recursion_limit_stops_at_a_parallel_step_showing_its_nodes() -> None:
    graph = StateGraph(Notes)
    graph.add_node("pre", lambda state: {"notes": ["pre"]})
    graph.add_node("first", lambda state: {"notes": ["a"]})
    graph.add_node("second", lambda state: {"notes": ["b"]})
    graph.add_edge(START, "pre")
    graph.add_edge("pre", "first")
    graph.add_edge("pre", "second")
    app = graph.compile(InMemoryCheckpointer(), recursion_limit=1)
    config = {"thread_id": "t"}
    events, raised = _streamed(app, {"messages": [("user", "go")]}, config)
    assert isinstance(raised, RecursionLimitError)
    assert str(raised) == "recursion limit of 1 steps reached; path pre -> [first, second]"
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].node == PARALLEL
    assert app.get_state(config).notes == ["pre"]
    assert graph.compile(recursion_limit=2).invoke({})["state"].notes == ["pre", "a", "b"]


def test_a_branch_changing_the_state_in_place_fails_the_step_naming_its_nodes() -> None:
    def sneaky(state: Notes) -> None:
        state.context.append(_said("in place"))

    app = _fan_out(sneaky, lambda state: {"notes": ["b"]}).compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    events, raised = _streamed(app, {"messages": [("user", "go")]}, config)
    assert isinstance(raised, NodeError)
    assert str(raised) == (
        "node '[first, second]': nodes of a parallel step must return their messages"
    )
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].node == "[first, second]"
    meta = app.get_state(config).execution_meta
    assert (meta.status, meta.next_node) == ("error", PARALLEL)


def test_a_branch_returning_an_unknown_field_is_an_error_naming_it() -> None:
    app = _fan_out(lambda state: {"nope": 1}, lambda state: {"notes": ["b"]}).compile()
    with pytest.raises(NodeError, match="unknown state field") as raised:
        app.invoke({})
    assert raised.value.node == "first"


def test_resuming_before_a_parallel_step_still_pauses_before_a_later_node() -> None:
    graph = _fan_out(lambda state: {"notes": ["a"]}, lambda state: {"notes": ["b"]})
    graph.add_node("after", lambda state: {"notes": ["after"]})
    graph.add_edge("first", "after")
    app = graph.compile(InMemoryCheckpointer(), interrupt_before=["second", "after"])
    config = {"thread_id": "t"}
    app.invoke({"messages": [("user", "go")]}, config)
    paused = app.invoke({"resume": None}, config)
    assert (paused["state"].notes, paused["interrupt"] is not None) == (["a", "b"], True)
    assert app.invoke({"resume": None}, config)["state"].notes == ["a", "b", "after"]


def test_a_saved_step_naming_a_node_the_graph_no_longer_has_is_an_error_naming_it() -> None:
    def broken(state: Notes) -> dict[str, Any]:
        raise ValueError("down")

    checkpointer = InMemoryCheckpointer()
    config = {"thread_id": "t"}
    with pytest.raises(NodeError):
        _fan_out(lambda state: {"notes": ["a"]}, broken).compile(checkpointer).invoke(
            {"messages": [("user", "go")]}, config
        )
    graph = StateGraph(Notes)
    graph.add_node("first", lambda state: {"notes": ["a"]})
    graph.add_edge(START, "first")
    with pytest.raises(NodeError) as raised:
        graph.compile(checkpointer).invoke(None, config)
    assert raised.value.node == "second"
    assert str(raised.value) == (
        "node 'second': the saved step names a node this graph does not have"
    )


class _Counted(AgentState):
    x: int = 0


@pytest.mark.parametrize("parallel", [True, False])
def test_an_unknown_field_returned_names_the_node_once(parallel: bool) -> None:
    graph = StateGraph(_Counted)
    graph.add_node("first", lambda state: {"nope": 1})
    graph.add_edge(START, "first")
    graph.add_edge("first", END)
    if parallel:
        graph.add_node("second", lambda state: {"x": 1})
        graph.add_edge(START, "second")
        graph.add_edge("second", END)
    with pytest.raises(NodeError) as raised:
        graph.compile().invoke({})
    assert raised.value.node == "first"
    assert str(raised.value).startswith("node 'first': unknown state field(s) 'nope' for _Counted")
