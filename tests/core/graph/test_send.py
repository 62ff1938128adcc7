"""``Send``: a router maps one node over many inputs; the results reduce in the order sent."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import Send, StateGraph
from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import NodeError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import START


class Squares(AgentState):
    items: list[int] = []
    squares: Annotated[list[int], operator.add] = []


def mapped(square: Any, *, max_concurrency: int | None = None, checkpointer: Any = None) -> Any:
    graph = StateGraph(Squares)
    graph.add_node("plan", lambda state: None)
    graph.add_node("square", square)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges(
        "plan", lambda state: [Send("square", {"n": n}) for n in state.items]
    )
    graph.add_edge("square", "__end__")
    return graph.compile(checkpointer, max_concurrency=max_concurrency)


async def square_of(arg: dict[str, int]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"squares": [arg["n"] ** 2]}


def test_a_thousand_sends_each_run_with_their_own_input_and_reduce_in_order_sent() -> None:
    items = list(range(1000, 0, -1))
    result = mapped(square_of).invoke({"state": {"items": items}})
    assert result["state"].squares == [n * n for n in items]
    assert result["state"].execution_meta.step == 2  # plan, then one step of 1,000 tasks


def test_sends_to_a_sync_node_run_on_worker_threads_and_keep_the_order() -> None:
    app = mapped(lambda arg: {"squares": [arg["n"] ** 2]})
    result = app.invoke({"state": {"items": [3, 1, 2]}})
    assert result["state"].squares == [9, 1, 4]


@pytest.mark.parametrize("bound", [1, 3])
def test_max_concurrency_bounds_the_tasks_running_at_once(bound: int) -> None:
    running = peak = 0

    async def square(arg: dict[str, int]) -> dict[str, Any]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        return {"squares": [arg["n"] ** 2]}

    result = mapped(square, max_concurrency=bound).invoke({"state": {"items": list(range(20))}})
    assert result["state"].squares == [n * n for n in range(20)]
    assert peak == bound


def test_one_failed_send_fails_the_step_keeping_the_others_and_a_retry_runs_it_alone() -> None:
    calls: list[int] = []
    failing = {7}

    async def square(arg: dict[str, int]) -> dict[str, Any]:
        calls.append(arg["n"])
        if arg["n"] in failing:
            raise ValueError(f"cannot square {arg['n']}")
        return {"squares": [arg["n"] ** 2]}

    app = mapped(square, max_concurrency=1, checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "t"}
    with pytest.raises(NodeError, match="cannot square 7"):
        app.invoke({"state": {"items": list(range(10))}}, config)
    meta = app.get_state(config).execution_meta
    assert (meta.status, meta.next_node) == ("error", PARALLEL)
    assert sorted(map(int, meta.task_writes)) == list(range(7))  # one at a time: 0..6 finished
    assert [task["arg"] for task in meta.tasks] == [{"n": n} for n in range(10)]
    failing.clear()
    calls.clear()
    result = app.invoke(None, config)
    assert calls == [7, 8, 9]
    assert result["state"].squares == [n * n for n in range(10)]


def test_a_send_to_no_node_is_an_error_naming_it() -> None:
    graph = StateGraph(Squares)
    graph.add_node("plan", lambda state: None)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("nowhere", 1)])
    with pytest.raises(NodeError, match=r"Send\('nowhere', \.\.\.\) names no node"):
        graph.compile().invoke({})


def test_a_send_to_an_agent_gives_it_a_state_made_from_the_arg() -> None:
    from tenxgraph.core.graph import Agent
    from tenxgraph.core.llm import ScriptedModel

    graph = StateGraph(Squares)
    graph.add_node("plan", lambda state: None)
    graph.add_node("ask", Agent(ScriptedModel(["one", "two"])))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges(
        "plan",
        lambda state: [Send("ask", {"context": [Message.text_message(q)]}) for q in "ab"],
    )
    result = graph.compile().invoke({})
    assert [m.text() for m in result["state"].context] == ["one", "two"]
    assert result["messages"] == result["state"].context

    graph = StateGraph(Squares)
    graph.add_node("plan", lambda state: None)
    graph.add_node("ask", Agent(ScriptedModel(["one"])))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("ask", 42)])
    with pytest.raises(NodeError, match="a Send to a Agent needs a Squares"):
        graph.compile().invoke({})


def test_with_a_checkpointer_a_send_arg_that_is_not_json_data_is_refused_naming_it() -> None:
    graph = StateGraph(Squares)
    graph.add_node("plan", lambda state: None)
    graph.add_node("square", square_of)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("square", object())])
    app = graph.compile(InMemoryCheckpointer())
    with pytest.raises(NodeError, match=r"Send\('square', \.\.\.\): its arg must be JSON data"):
        app.invoke({"messages": [("user", "go")]}, {"thread_id": "t"})
    assert mapped(square_of).invoke({"state": {"items": [2]}})["state"].squares == [4]
