"""A run's ``{"goto": ...}`` input (LangGraph's ``Command(goto=...)``): a turn at named nodes."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import Send, StateGraph, interrupt
from tenxgraph.core.state import AgentState
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import START


class Trail(AgentState):
    trail: Annotated[list[str], operator.add] = []


def _app() -> Any:
    graph = StateGraph(Trail)
    for name in ("a", "b", "c"):
        graph.add_node(name, lambda state, name=name: {"trail": [name]})
    graph.add_node("ask", lambda state: {"trail": [str(interrupt("?"))]})
    graph.add_node("twice", lambda n: {"trail": [f"twice {n}"]})
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_conditional_edges("b", lambda state: "__end__")  # any node may follow: all reachable
    graph.add_edge("c", "__end__")
    graph.add_edge("ask", "__end__")
    graph.add_edge("twice", "__end__")
    return graph.compile(InMemoryCheckpointer())


def test_goto_starts_a_new_turn_at_the_node_and_follows_its_edges() -> None:
    app, config = _app(), {"thread_id": "t"}
    app.invoke({}, config)
    result = app.invoke({"goto": "b"}, config)
    assert result["state"].trail == ["a", "b", "b"]
    assert app.invoke({"goto": "c", "state": {"trail": ["given"]}}, config)["state"].trail[-2:] == [
        "given",
        "c",
    ]


def test_goto_on_a_new_thread_and_with_messages() -> None:
    app, config = _app(), {"thread_id": "new"}
    result = app.invoke({"goto": "c", "messages": [("user", "hi")]}, config)
    assert result["state"].trail == ["c"]
    assert [m.text() for m in result["state"].context] == ["hi"]


def test_goto_several_nodes_or_sends_runs_them_in_one_step() -> None:
    app, config = _app(), {"thread_id": "p"}
    result = app.invoke({"goto": ["c", "b", Send("twice", 2)]}, config)
    assert sorted(result["state"].trail) == ["b", "c", "twice 2"]
    assert result["state"].execution_meta.step == 1


def test_goto_names_a_node_the_graph_has() -> None:
    with pytest.raises(StateError, match="names no node of the graph: 'nowhere'"):
        _app().invoke({"goto": "nowhere"}, {"thread_id": "x"})
    with pytest.raises(StateError, match="names no node"):
        _app().invoke({"goto": []}, {"thread_id": "x"})


def test_a_paused_turn_is_resumed_before_a_goto() -> None:
    app, config = _app(), {"thread_id": "paused"}
    assert "interrupt" in app.invoke({"goto": "ask"}, config)
    with pytest.raises(StateError, match="is paused at node 'ask'"):
        app.invoke({"goto": "b"}, config)
    with pytest.raises(StateError, match="give 'goto' or 'resume', not both"):
        app.invoke({"goto": "b", "resume": "x"}, config)
    assert app.invoke({"resume": "yes"}, config)["state"].trail == ["yes"]
    assert app.invoke({"goto": "b"}, config)["state"].trail == ["yes", "b"]
