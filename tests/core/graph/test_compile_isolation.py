"""Compiling never changes what it was given; a thread keeps fields its current graph does not know.

Regression tests: compiling a second graph on the same checkpointer used to
change what the first graph's ``get_state`` returned, an Agent reused in a
second graph kept the first graph's tools, and a graph with a poorer state
class erased the richer graph's fields from a shared thread.
"""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import Agent, RunHooks, StateGraph, ToolNode, create_agent
from tenxgraph.core.llm import FunctionModel, ScriptedModel
from tenxgraph.core.llm.base import ModelRequest
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import UsageError
from tenxgraph.runs import LeasePolicy
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer
from tenxgraph.utils.constants import END, START


class Trip(AgentState):
    city: str = ""


def echo(state: AgentState) -> dict[str, Any]:
    return {"context": [Message.text_message(f"seen {len(state.context)}", role="assistant")]}


def set_city(state: Trip) -> dict[str, Any]:
    return {"city": "Porto", "context": [Message.text_message("ok", role="assistant")]}


def graph_of(state_class: type[AgentState], node: Any) -> StateGraph[Any]:
    graph: StateGraph[Any] = StateGraph(state_class)
    graph.add_node("n", node)
    graph.add_edge(START, "n")
    graph.add_edge("n", END)
    return graph


def test_compiling_a_second_graph_does_not_change_the_first(tmp_path: Any) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "t.sqlite")
    trips = graph_of(Trip, set_city).compile(checkpointer)
    config = {"thread_id": "t"}
    trips.invoke({"messages": [Message.text_message("go")]}, config)
    graph_of(AgentState, echo).compile(checkpointer)
    state = trips.get_state(config)
    assert isinstance(state, Trip)
    assert state.city == "Porto"
    assert not hasattr(checkpointer, "state_class")
    stored = checkpointer.get_state(config, Trip)
    assert isinstance(stored, Trip) and stored.city == "Porto"


def test_poorer_state_class_keeps_the_richer_graphs_fields(tmp_path: Any) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "t.sqlite")
    config = {"thread_id": "shared"}
    graph_of(Trip, set_city).compile(checkpointer).invoke(
        {"messages": [Message.text_message("go")]}, config
    )
    plain = graph_of(AgentState, echo).compile(checkpointer)
    plain.invoke({"messages": [Message.text_message("hello")]}, config)
    plain.invoke({"messages": [Message.text_message("again")]}, config)  # warm thread too
    fresh = graph_of(Trip, echo).compile(SqliteCheckpointer(tmp_path / "t.sqlite"))
    state = fresh.get_state(config)
    assert isinstance(state, Trip)
    assert state.city == "Porto"
    assert [m.text() for m in state.context][-2:] == ["again", "seen 5"]


def test_an_agent_in_two_graphs_offers_each_graph_its_own_tools() -> None:
    def alpha() -> str:
        """Tool of graph one."""
        return "a"

    def beta() -> str:
        """Tool of graph two."""
        return "b"

    offered: list[list[str]] = []

    def answer(request: ModelRequest) -> Message:
        offered.append(sorted(spec.name for spec in request.tools))
        return Message.text_message("done", role="assistant")

    agent = Agent(FunctionModel(answer), tool_node="tools")
    apps = []
    for tool in (alpha, beta):
        graph: StateGraph[AgentState] = StateGraph(AgentState)
        graph.add_node("agent", agent)
        graph.add_node("tools", ToolNode([tool]))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", lambda state: END, ["tools", END])
        graph.add_edge("tools", END)
        apps.append(graph.compile(InMemoryCheckpointer()))
    for app in apps:
        app.invoke({"messages": [Message.text_message("hi")]}, {"thread_id": "t"})
    assert offered == [["alpha"], ["beta"]]
    assert agent.tools == {}


@pytest.mark.parametrize(
    ("name", "value"),
    [("warm_threads", 8), ("checkpointer", None), ("recursion_limit", 5), ("state_class", None)],
)
def test_a_compiled_graph_refuses_assignments(name: str, value: Any) -> None:
    app = create_agent(ScriptedModel(["hi"]))
    before = getattr(app, name, "absent")
    with pytest.raises(UsageError, match=rf"frozen: '{name}' cannot be set after compile"):
        setattr(app, name, value)
    assert getattr(app, name, "absent") is before


def test_changing_the_builder_after_compile_changes_nothing_compiled() -> None:
    seed = Trip(city="Rome")
    graph: StateGraph[Trip] = StateGraph(seed)
    graph.add_node("n", echo)
    graph.add_edge(START, "n")
    app = graph.compile()
    drawn = app.get_graph().draw_mermaid()
    graph.add_node("late", set_city)
    graph.add_edge("n", "late")
    graph.add_edge("late", END)
    seed.city = "Oslo"
    assert app.get_graph().draw_mermaid() == drawn
    assert "late" not in drawn
    result = app.invoke({"messages": [Message.text_message("go")]})
    assert [m.text() for m in result["messages"]] == ["seen 1"]
    assert result["state"].city == "Rome"
    again = app.recompile()
    assert again.get_graph().draw_mermaid() == drawn
    assert again.invoke({})["state"].city == "Rome"


def test_recompile_keeps_every_option_but_the_ones_it_is_given(tmp_path: Any) -> None:
    class Hooks(RunHooks):
        pass

    hooks = Hooks()
    app = graph_of(Trip, set_city).compile(
        interrupt_before=["n"],
        checkpointer=InMemoryCheckpointer(),
        recursion_limit=7,
        warm_threads=3,
        warm_bytes=1000,
        tool_threads=2,
        lease_seconds=5.0,
        multitask_strategy="enqueue",
        busy_timeout=9.0,
        hooks=[hooks],
    )
    checkpointer = SqliteCheckpointer(tmp_path / "t.sqlite")
    served = app.recompile(checkpointer=checkpointer, lease_seconds=4.0)
    assert served is not app and served.checkpointer is checkpointer
    assert served.interrupt_before == frozenset({"n"}) and served.recursion_limit == 7
    assert (served.warm.max_threads, served.warm.max_bytes) == (3, 1000)
    assert served.workers.max_threads == 2
    assert served.leases == LeasePolicy(4.0, "enqueue", 9.0)
    assert served.hooks.hooks == (hooks,)
    assert served.state_class is Trip and served.id_generator is app.id_generator
    assert app.leases.lease_seconds == 5.0 and app.checkpointer is not checkpointer
    with pytest.raises(UsageError, match="unknown option\\(s\\) lease_second "):
        app.recompile(lease_second=1.0)


def test_builder_is_deprecated_and_is_not_what_the_graph_runs() -> None:
    graph = graph_of(AgentState, echo)
    app = graph.compile()
    with pytest.warns(DeprecationWarning, match="CompiledGraph.builder is deprecated"):
        builder = app.builder
    assert builder is graph
    graph.add_node("late", echo)
    assert "late" not in app.nodes and "late" not in app.get_graph().draw_ascii()
