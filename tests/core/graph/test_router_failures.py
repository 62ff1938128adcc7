"""A router or a ``Command`` that goes nowhere fails the run the way a raising node does.

Regression tests: these used to raise without an ``ErrorEvent`` and without
saving anything (a new thread lost the user's input), and a router that
raised escaped as a raw ``KeyError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tenxgraph.core.graph import Command, ErrorEvent, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import NodeError
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.utils import END, START


def answer(state: AgentState) -> dict[str, Any]:
    return {"context": [Message.text_message("hi", role="assistant")]}


def ghost_goto(state: AgentState) -> Command:
    return Command(goto="ghost")


def unknown_target(state: AgentState) -> str:
    return "ghost"


def raising_router(state: AgentState) -> str:
    return {"a": "answer"}["missing"]


def entry_router_graph(router: Callable[[AgentState], str]) -> StateGraph[AgentState]:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("answer", answer)
    graph.add_conditional_edges(START, router)
    graph.add_edge("answer", END)
    return graph


def after_node_graph(router: Callable[[AgentState], str]) -> StateGraph[AgentState]:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_conditional_edges("answer", router)
    return graph


def goto_graph() -> StateGraph[AgentState]:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("jump", ghost_goto)
    graph.add_edge(START, "jump")
    graph.add_edge("jump", END)
    return graph


CASES = {
    "entry router returns an unknown node": (entry_router_graph(unknown_target), START, "ghost"),
    "entry router raises": (entry_router_graph(raising_router), START, "KeyError"),
    "router after a node returns an unknown node": (
        after_node_graph(unknown_target),
        "answer",
        "ghost",
    ),
    "router after a node raises": (after_node_graph(raising_router), "answer", "KeyError"),
    "Command(goto=) names no node": (goto_graph(), "jump", "ghost"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_routing_failure_is_an_error_event_and_is_saved(case: str) -> None:
    graph, node, detail = CASES[case]
    app = graph.compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    events: list[Any] = []

    async def consume() -> None:
        async for event in app.astream({"messages": [Message.text_message("hello")]}, config):
            events.append(event)

    with pytest.raises(NodeError, match=detail) as raised:
        asyncio.run(consume())
    assert raised.value.node == node
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].node == node
    state = app.get_state(config)
    assert state is not None
    assert state.execution_meta.status == "error"
    assert detail in (state.execution_meta.error or "")
    assert state.context[0].text() == "hello"  # the user's input is kept
