"""Parallel steps: fan-out, joins, the merge order, conflicts, failures and interrupts mid-step.

The semantics are LangGraph's (docs/graph.md, "Parallel branches"): the nodes
a step triggers run concurrently over the state as the step found it, and
their updates merge, once all have finished, in a fixed order (edge-triggered
tasks by node name, then ``Send`` items as sent), never in finish order.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenxgraph.core.graph import Command, Send, StateGraph, interrupt
from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.core.state.pairing import pairing_violations
from tenxgraph.errors import GraphBuildError, NodeError, RecursionLimitError, StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import END, START


class Notes(AgentState):
    notes: Annotated[list[str], operator.add] = []
    topic: str = ""


def note(text: str, *, sleep: float = 0, counts: list[str] | None = None) -> Callable[..., Any]:
    """An async node that appends ``text`` to ``notes`` (after ``sleep`` seconds)."""

    async def node(state: Notes) -> dict[str, Any]:
        if counts is not None:
            counts.append(text)
        if sleep:
            await asyncio.sleep(sleep)
        return {"notes": [text]}

    return node


def diamond(join: bool, counts: list[str] | None = None) -> StateGraph[Notes]:
    """a -> (b, c); b -> d; c -> c2 -> d, with plain edges into d or a join."""
    graph = StateGraph(Notes)
    for name in ("a", "b", "c", "c2", "d"):
        graph.add_node(name, note(name, counts=counts))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("a", "c")
    graph.add_edge("c", "c2")
    if join:
        graph.add_edge(["b", "c2"], "d")
    else:
        graph.add_edge("b", "d")
        graph.add_edge("c2", "d")
    return graph


def test_plain_edges_into_a_node_run_it_in_each_step_one_of_them_finished() -> None:
    result = diamond(join=False).compile().invoke({})
    # step 2: b, c; step 3: c2 and d (after b); step 4: d again (after c2)
    assert result["state"].notes == ["a", "b", "c", "c2", "d", "d"]


def test_a_join_waits_for_every_source_even_across_steps() -> None:
    counts: list[str] = []
    result = diamond(join=True, counts=counts).compile().invoke({})
    assert result["state"].notes == ["a", "b", "c", "c2", "d"]
    assert counts.count("d") == 1
    assert result["state"].execution_meta.joins == {}


def test_a_join_whose_sources_never_all_finish_does_not_run() -> None:
    graph = StateGraph(Notes)
    for name in ("a", "b", "c"):
        graph.add_node(name, note(name))
    graph.add_edge(START, "a")
    graph.add_edge(["a", "b"], "c")
    graph.add_conditional_edges("a", lambda state: END, ["b", END])
    assert graph.compile().invoke({})["state"].notes == ["a"]


def test_updates_merge_by_node_name_not_by_finish_order() -> None:
    graph = StateGraph(Notes)
    graph.add_node("a_slow", note("a_slow", sleep=0.05))
    graph.add_node("b_fast", note("b_fast"))
    graph.add_node("c_mid", note("c_mid", sleep=0.01))
    for name in ("c_mid", "a_slow", "b_fast"):
        graph.add_edge(START, name)
    assert graph.compile().invoke({})["state"].notes == ["a_slow", "b_fast", "c_mid"]


def test_every_task_reads_the_state_as_the_step_found_it() -> None:
    seen: dict[str, list[str]] = {}

    def reader(name: str) -> Callable[[Notes], dict[str, Any]]:
        def node(state: Notes) -> dict[str, Any]:
            seen[name] = list(state.notes)
            return {"notes": [name]}

        return node

    graph = StateGraph(Notes)
    graph.add_node("a", reader("a"))
    graph.add_node("b", reader("b"))
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    graph.compile().invoke({"state": {"notes": ["x"]}})
    assert seen == {"a": ["x"], "b": ["x"]}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=9, max_size=9))
def test_the_merged_state_is_the_same_whatever_order_tasks_finish_in(yields: list[int]) -> None:
    """Each task gives the loop away a random number of times, so they finish in any order."""

    def task(name: str, turns: int) -> Callable[..., Any]:
        async def node(state: Any) -> dict[str, Any]:
            text = name if isinstance(state, Notes) else f"{name}:{state['n']}"
            for _ in range(turns if isinstance(state, Notes) else yields[6 + state["n"] - 1]):
                await asyncio.sleep(0)
            reply = Message.text_message(text, role="assistant", message_id=f"m-{text}")
            return {"notes": [text], "context": [reply]}

        return node

    graph = StateGraph(Notes)
    names = ["f", "b", "e", "a", "d", "c"]
    for name, turns in zip(names, yields[:6], strict=True):
        graph.add_node(name, task(name, turns))
    graph.add_node("mapped", task("mapped", 0))
    graph.add_node("start", lambda state: None)
    graph.add_edge(START, "start")

    def fan(state: Notes) -> list[Any]:
        return [*names, *(Send("mapped", {"n": n}) for n in (3, 1, 2))]

    graph.add_conditional_edges("start", fan)
    result = graph.compile().invoke({})
    expected = ["a", "b", "c", "d", "e", "f", "mapped:3", "mapped:1", "mapped:2"]
    assert result["state"].notes == expected
    assert [m.text() for m in result["state"].context] == expected


def test_two_tasks_setting_a_field_without_a_reducer_is_an_error_naming_both() -> None:
    graph = StateGraph(Notes)
    graph.add_node("left", lambda state: {"topic": "left"})
    graph.add_node("right", lambda state: {"topic": "right"})
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    with pytest.raises(StateError, match=r"field 'topic'.*'left', 'right'.*no reducer"):
        graph.compile().invoke({})


def test_one_task_setting_a_plain_field_is_fine() -> None:
    graph = StateGraph(Notes)
    graph.add_node("left", lambda state: {"topic": "left"})
    graph.add_node("right", note("right"))
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    state = graph.compile().invoke({})["state"]
    assert (state.topic, state.notes) == ("left", ["right"])


def test_a_router_may_pick_several_nodes_and_a_command_may_go_to_several() -> None:
    graph = StateGraph(Notes)
    graph.add_node("pick", lambda state: None)
    graph.add_node("x", note("x"))
    graph.add_node("y", lambda state: Command(goto=["z", END], update={"notes": ["y"]}), ends=["z"])
    graph.add_node("z", note("z"))
    graph.add_edge(START, "pick")
    graph.add_conditional_edges("pick", lambda state: ["y", "x"], ["x", "y"])
    assert graph.compile().invoke({})["state"].notes == ["x", "y", "z"]


def test_parallel_branches_keep_every_tool_call_paired_with_its_result() -> None:
    def branch(call_id: str) -> Callable[[Notes], list[Message]]:
        def node(state: Notes) -> list[Message]:
            call = ToolCallBlock(id=call_id, name="search", args={"q": call_id})
            ask = Message(role="assistant", content=[call])
            result = ToolResultBlock(call_id=call_id, output=f"found {call_id}")
            return [ask, Message(role="tool", content=[result])]

        return node

    graph = StateGraph(Notes)
    graph.add_node("web", branch("w1"))
    graph.add_node("docs", branch("d1"))
    graph.add_edge(START, "web")
    graph.add_edge(START, "docs")
    context = graph.compile().invoke({"messages": [("user", "q")]})["state"].context
    assert pairing_violations(context) == []
    assert [m.role for m in context] == ["user", "assistant", "tool", "assistant", "tool"]


def test_a_failed_branch_keeps_the_finished_ones_and_a_retry_runs_only_it() -> None:
    calls: list[str] = []
    broken = threading.Event()
    broken.set()

    def fragile(state: Notes) -> dict[str, Any]:
        calls.append("fragile")
        if broken.is_set():
            raise ValueError("search backend down")
        return {"notes": ["fragile"]}

    graph = StateGraph(Notes)
    graph.add_node("fine", note("fine", counts=calls))
    graph.add_node("fragile", fragile)
    graph.add_node("merge", note("merge"))
    graph.add_edge(START, "fine")
    graph.add_edge(START, "fragile")
    graph.add_edge(["fine", "fragile"], "merge")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    with pytest.raises(NodeError, match="search backend down"):
        app.invoke({"messages": [("user", "go")]}, config)
    failed = app.get_state(config)
    meta = failed.execution_meta
    assert (meta.status, meta.next_node) == ("error", PARALLEL)
    assert failed.notes == []  # nothing merged: the step did not finish
    assert list(meta.task_writes) == ["0"]  # "fine" is task 0, its write is kept
    assert meta.task_writes["0"]["values"] == [["notes", ["fine"]]]
    broken.clear()
    result = app.invoke(None, config)
    assert sorted(calls) == ["fine", "fragile", "fragile"]
    assert result["state"].notes == ["fine", "fragile", "merge"]
    assert result["state"].execution_meta.task_writes == {}


def test_an_interrupt_in_one_branch_pauses_and_resuming_runs_only_that_branch() -> None:
    calls: list[str] = []

    def approve(state: Notes) -> dict[str, Any]:
        calls.append("approve")
        answer = interrupt("publish?")
        return {"notes": [f"approve:{answer}"]}

    graph = StateGraph(Notes)
    graph.add_node("draft", note("draft", counts=calls))
    graph.add_node("approve", approve)
    graph.add_edge(START, "draft")
    graph.add_edge(START, "approve")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    paused = app.invoke({"messages": [("user", "go")]}, config)
    assert paused["interrupt"].value == "publish?"
    state = app.get_state(config)
    assert state.execution_meta.status == "interrupted"
    assert state.execution_meta.current_node == "approve"
    assert list(state.execution_meta.task_writes) == ["1"]  # draft (index 1) finished
    done = app.invoke({"resume": "yes"}, config)
    assert sorted(calls) == ["approve", "approve", "draft"]
    assert done["state"].notes == ["approve:yes", "draft"]


def test_interrupt_before_a_node_of_a_parallel_step_pauses_before_the_step() -> None:
    graph = StateGraph(Notes)
    graph.add_node("a", note("a"))
    graph.add_node("b", note("b"))
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    app = graph.compile(InMemoryCheckpointer(), interrupt_before=["b"])
    config = {"thread_id": "t"}
    app.invoke({"messages": [("user", "go")]}, config)
    paused = app.get_state(config)
    assert (paused.execution_meta.interrupt_kind, paused.notes) == ("before", [])
    assert app.invoke({"resume": None}, config)["state"].notes == ["a", "b"]


async def test_stop_mid_step_keeps_finished_tasks_and_invoke_none_runs_the_rest() -> None:
    release = asyncio.Event()
    calls: list[str] = []

    async def slow(state: Notes) -> dict[str, Any]:
        calls.append("slow")
        await release.wait()
        return {"notes": ["slow"]}

    graph = StateGraph(Notes)
    graph.add_node("quick", note("quick", counts=calls))
    graph.add_node("slow", slow)
    graph.add_edge(START, "quick")
    graph.add_edge(START, "slow")
    checkpointer = InMemoryCheckpointer()
    app = graph.compile(checkpointer)
    config = {"thread_id": "t"}
    run = asyncio.create_task(app.ainvoke({"messages": [("user", "go")]}, config))
    while True:  # until quick's write is saved
        state = await app.aget_state(config)
        if state is not None and state.execution_meta.task_writes:
            break
        await asyncio.sleep(0.01)
    assert app.stop(config)
    result = await run
    meta = result["state"].execution_meta
    assert (meta.status, meta.next_node, list(meta.task_writes)) == ("stopped", PARALLEL, ["0"])
    release.set()
    done = await app.ainvoke(None, config)
    assert sorted(calls) == ["quick", "slow", "slow"]
    assert done["state"].notes == ["quick", "slow"]
    assert done["state"].execution_meta.status == "completed"


def test_each_finished_task_is_saved_before_the_step_ends_without_messages() -> None:
    checkpointer = InMemoryCheckpointer()
    saves: list[tuple[int, int]] = []
    save = checkpointer.asave

    async def spy(key: Any, write: Any) -> Any:
        if write.node == PARALLEL:
            saves.append((write.values.count('"values"'), len(write.new_messages)))
        return await save(key, write)

    checkpointer.asave = spy  # type: ignore[method-assign]
    graph = StateGraph(Notes)
    graph.add_node("a", note("a"))
    graph.add_node("b", note("b", sleep=0.05))
    graph.add_node("c", note("c", sleep=0.1))
    for name in ("a", "b", "c"):
        graph.add_edge(START, name)
    app = graph.compile(checkpointer)
    app.invoke({"messages": [("user", "go")]}, {"thread_id": "t"})
    # one save per finished task (1, 2, 3 writes, no messages), then the merged step's save
    assert saves[:3] == [(1, 0), (2, 0), (3, 0)]
    assert saves[3] == (0, 0)


def test_a_linear_graph_never_takes_the_parallel_path(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = StateGraph(Notes)
    for name in ("a", "b"):
        graph.add_node(name, note(name))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    app = graph.compile()
    assert app._single == {START: "a", "a": "b"}

    async def refuse(*args: Any) -> Any:
        raise AssertionError("a linear graph entered a parallel step")

    monkeypatch.setattr(type(app), "_parallel_step", refuse)
    assert app.invoke({})["state"].notes == ["a", "b"]


def test_parallel_events_come_in_merge_order() -> None:
    graph = StateGraph(Notes)
    graph.add_node("b", note("b"))
    graph.add_node("a", note("a", sleep=0.02))
    graph.add_edge(START, "b")
    graph.add_edge(START, "a")
    updates = [e.node for e in graph.compile().stream({}) if type(e).__name__ == "UpdateEvent"]
    assert updates == ["a", "b"]


def test_a_node_changing_the_state_in_place_in_a_parallel_step_fails() -> None:
    def sneaky(state: Notes) -> None:
        state.context.append(Message.text_message("in place", role="assistant"))

    graph = StateGraph(Notes)
    graph.add_node("sneaky", sneaky)
    graph.add_node("fine", note("fine"))
    graph.add_edge(START, "sneaky")
    graph.add_edge(START, "fine")
    with pytest.raises(NodeError, match="must return their messages"):
        graph.compile().invoke({})


def test_message_edits_are_refused_in_a_parallel_step() -> None:
    from tenxgraph.core.state import RemoveMessage

    graph = StateGraph(Notes)
    graph.add_node("edit", lambda state: [RemoveMessage("x")])
    graph.add_node("fine", note("fine"))
    graph.add_edge(START, "edit")
    graph.add_edge(START, "fine")
    with pytest.raises(NodeError, match="message edits cannot be made in a parallel step"):
        graph.compile().invoke({})


def test_building_parallel_graphs_checks_the_definition() -> None:
    graph = StateGraph(Notes)
    graph.add_node("a", note("a"))
    graph.add_node("b", note("b"))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    with pytest.raises(GraphBuildError, match="already in the graph"):
        graph.add_edge("a", "b")
    with pytest.raises(GraphBuildError, match="already has an outgoing edge"):
        graph.add_conditional_edges("a", lambda state: "b")
    with pytest.raises(GraphBuildError, match="distinct nodes"):
        graph.add_edge([START, "a"], "b")
    with pytest.raises(GraphBuildError, match="non-empty list"):
        graph.add_edge([], "b")
    graph.add_edge(["a", "nowhere"], "b")
    with pytest.raises(GraphBuildError, match="unknown node 'nowhere'"):
        graph.compile()
    with pytest.raises(GraphBuildError, match="reserved"):
        StateGraph(Notes).add_node(PARALLEL, note("x"))
    with pytest.raises(GraphBuildError, match="max_concurrency must be at least 1"):
        diamond(join=True).compile(max_concurrency=0)


def test_recursion_limit_counts_a_parallel_step_once() -> None:
    graph = diamond(join=True)
    with pytest.raises(RecursionLimitError, match="recursion limit of 3 steps reached"):
        graph.compile(recursion_limit=3).invoke({})
    assert graph.compile(recursion_limit=4).invoke({})["state"].notes[-1] == "d"


def test_drawings_show_fan_out_joins_and_sends() -> None:
    shape = diamond(join=True).get_graph()
    edges = {(e.source, e.target, e.kind, e.label) for e in shape.edges}
    assert {("a", "b", "edge", ""), ("a", "c", "edge", "")} <= edges  # fan-out: both run
    assert {("b", "d", "join", "b + c2"), ("c2", "d", "join", "b + c2")} <= edges
    assert ("b", "__end__", "edge", "") not in edges  # a join source does not end the run
    assert not shape.problems
    assert 'b ==>|"join b + c2"| d' in shape.draw_mermaid()
    assert '"c2" -> "d" [style=bold, label="join b + c2"];' in shape.draw_dot()
    assert "=j=> d   once b + c2 have all finished" in shape.draw_ascii()

    def fan(state: Notes) -> list[Send]:
        return [Send("work", n) for n in range(3)]

    graph = StateGraph(Notes)
    graph.add_node("plan", lambda state: None)
    graph.add_node("work", lambda n: None)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", fan, ["work"])
    shape = graph.get_graph()
    assert ("plan", "work", "send", "") in {
        (e.source, e.target, e.kind, e.label) for e in shape.edges
    }
    assert 'plan -.->|"Send"| work' in shape.draw_mermaid()
    assert "-s-> work" in shape.draw_ascii()


def tools_beside_audit(
    plan: Callable[..., Any],
    search: Callable[..., Any],
    audit: Callable[..., Any],
    state: type[AgentState] = Notes,
) -> StateGraph[Any]:
    """``plan``, then a ``ToolNode`` of ``search`` and ``audit`` in one parallel step."""
    from tenxgraph.core.graph import ToolNode

    graph = StateGraph(state)
    graph.add_node("plan", plan)
    graph.add_node("tools", ToolNode([search]))
    graph.add_node("audit", audit)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("plan", "audit")
    return graph


def test_a_tool_node_branch_is_not_run_again_when_its_sibling_fails_and_is_retried() -> None:
    searches: list[str] = []
    broken = [True]

    def search(q: str) -> str:
        """Search the web."""
        searches.append(q)
        return f"found {q}"

    def plan(state: Notes) -> Message:
        calls = [ToolCallBlock(id=f"c{n}", name="search", args={"q": f"q{n}"}) for n in (1, 2)]
        return Message(role="assistant", content=calls)

    async def audit(state: Notes) -> dict[str, Any]:
        if broken[0]:  # fail once the tools' write is saved (a failure cancels the others)
            for _ in range(3000):
                saved = await app.aget_state(config)
                if saved.execution_meta.task_writes:
                    break
                await asyncio.sleep(0.01)
            raise ValueError("audit log unavailable")
        return {"notes": ["audited"]}

    app = tools_beside_audit(plan, search, audit).compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    with pytest.raises(NodeError, match="audit log unavailable"):
        app.invoke({"messages": [("user", "look it up")]}, config)
    meta = app.get_state(config).execution_meta
    assert list(meta.task_writes) == ["1"]  # tools (task 1, after audit) finished
    assert (meta.tool_ledger, meta.tool_starts) == ({}, {})  # in its saved write now
    broken[0] = False
    state = app.invoke(None, config)["state"]
    assert sorted(searches) == ["q1", "q2"]  # each call ran once
    assert pairing_violations(state.context) == []
    assert [m.role for m in state.context] == ["user", "assistant", "tool", "tool"]
    assert state.notes == ["audited"]


async def test_a_tool_call_in_a_parallel_step_is_saved_as_started_before_it_runs() -> None:
    """A tool's start is durable before the tool runs, even when no sibling task has finished
    (so the step's save has no new task write to wait for)."""
    seen: list[dict[str, int]] = []
    looked = asyncio.Event()

    async def search(q: str) -> str:
        """Search the web."""
        seen.append(dict((await app.aget_state(config)).execution_meta.tool_starts))
        looked.set()
        return f"found {q}"

    def plan(state: Notes) -> Message:
        call = ToolCallBlock(id="c1", name="search", args={"q": "x"})
        return Message(role="assistant", content=[call])

    async def audit(state: Notes) -> dict[str, Any]:
        await asyncio.wait_for(looked.wait(), 30)  # finishes after the tool has looked
        return {"notes": ["audited"]}

    app = tools_beside_audit(plan, search, audit).compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    state = (await app.ainvoke({"messages": [("user", "look it up")]}, config))["state"]
    assert seen == [{"c1": 1}]
    assert state.notes == ["audited"]
    assert [m.role for m in state.context] == ["user", "assistant", "tool"]


def test_interrupt_after_a_node_of_a_parallel_step_pauses_after_the_merge() -> None:
    graph = diamond(join=True)
    app = graph.compile(InMemoryCheckpointer(), interrupt_after=["c"])
    config = {"thread_id": "t"}
    app.invoke({"messages": [("user", "go")]}, config)
    paused = app.get_state(config)
    assert paused.notes == ["a", "b", "c"]  # the step of b and c merged, then paused
    assert paused.execution_meta.interrupt_kind == "after"
    meta = paused.execution_meta
    assert (meta.next_node, meta.tasks, meta.joins) == ("c2", [], {"b+c2->d": ["b"]})
    assert app.invoke({"resume": None}, config)["state"].notes == ["a", "b", "c", "c2", "d"]


def test_two_branches_that_interrupt_are_answered_one_after_the_other() -> None:
    def ask(name: str) -> Callable[[Notes], dict[str, Any]]:
        def node(state: Notes) -> dict[str, Any]:
            return {"notes": [f"{name}:{interrupt(f'{name}?')}"]}

        return node

    graph = StateGraph(Notes)
    graph.add_node("first", ask("first"))
    graph.add_node("second", ask("second"))
    graph.add_edge(START, "first")
    graph.add_edge(START, "second")
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    assert app.invoke({"messages": [("user", "go")]}, config)["interrupt"].value == "first?"
    assert app.invoke({"resume": 1}, config)["interrupt"].value == "second?"
    assert list(app.get_state(config).execution_meta.task_writes) == ["0"]
    assert app.invoke({"resume": 2}, config)["state"].notes == ["first:1", "second:2"]
