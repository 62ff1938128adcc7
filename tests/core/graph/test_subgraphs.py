"""Subgraphs: a compiled graph as a node, or invoked inside one, saved in its parent's thread."""

from __future__ import annotations

import operator
import re
import shutil
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import (
    StateGraph,
    StateTree,
    SubgraphEvent,
    SubgraphNode,
    UpdateEvent,
    interrupt,
)
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import GraphBuildError, UsageError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import END, START
from tests.storage.conftest import MakeCheckpointer


class Notes(AgentState):
    notes: Annotated[list[str], operator.add] = []
    topic: str = ""


def say(text: str) -> Any:
    return lambda state: Message.text_message(text, role="assistant")


def note(text: str) -> Any:
    return lambda state: {"notes": [text]}


def ask(state: Notes) -> dict[str, Any]:
    answer = interrupt({"question": "approve?"})
    return {"notes": [f"inner:{answer}"]}


def nested_app(checkpointer: Any) -> Any:
    """outer: start -> middle(pre -> inner(say -> ask)) -> finish, over one state class."""
    inner = StateGraph(Notes)
    inner.add_node("say", say("inner says hi"))
    inner.add_node("ask", ask)
    inner.add_edge(START, "say")
    inner.add_edge("say", "ask")
    middle = StateGraph(Notes)
    middle.add_node("pre", note("middle"))
    middle.add_node("inner", inner.compile())
    middle.add_edge(START, "pre")
    middle.add_edge("pre", "inner")
    outer = StateGraph(Notes)
    outer.add_node("start", lambda state: {"notes": ["outer"], "topic": "x"})
    outer.add_node("middle", middle.compile())
    outer.add_node("finish", lambda s: Message.text_message(",".join(s.notes), role="assistant"))
    outer.add_edge(START, "start")
    outer.add_edge("start", "middle")
    outer.add_edge("middle", "finish")
    return outer.compile(checkpointer)


async def test_an_interrupt_two_levels_down_is_resumed_from_the_outer_caller(
    make_checkpointer: MakeCheckpointer, backend: str
) -> None:
    config = {"thread_id": "nested"}
    first = make_checkpointer()
    paused = await nested_app(first).ainvoke({"messages": [("user", "go")]}, config)
    assert paused["interrupt"].value == {"question": "approve?"}
    assert paused["interrupt"].node == "middle"
    # as another process would: a graph built again over the same storage resumes it
    app = nested_app(first if backend == "memory" else make_checkpointer())
    saved = await app.aget_state(config)
    assert saved is not None and saved.execution_meta.status == "interrupted"
    assert list(saved.execution_meta.subgraphs) == ["middle"]
    done = await app.ainvoke({"resume": "yes"}, config)
    state = done["state"]
    assert state.notes == ["outer", "middle", "inner:yes"]  # each once, through operator.add
    assert [m.text() for m in state.context] == ["go", "inner says hi", "outer,middle,inner:yes"]
    assert state.execution_meta.subgraphs == {}
    again = await app.aget_state(config)
    assert again is not None and again.execution_meta.subgraphs == {}
    assert [m.text() for m in again.context] == ["go", "inner says hi", "outer,middle,inner:yes"]


def test_a_paused_subgraph_keeps_no_copy_of_its_parents_messages() -> None:
    app = nested_app(InMemoryCheckpointer())
    config = {"thread_id": "small"}
    app.invoke({"messages": [("user", "a long question " * 50)]}, config)
    saved = app.get_state(config)
    assert saved is not None
    middle = saved.execution_meta.subgraphs["middle"]
    assert middle["base"] == 1 and middle["context"] == []  # the user's message stays the parent's
    inner = middle["values"]["execution_meta"]["subgraphs"]["inner"]
    assert inner["base"] == 1 and len(inner["context"]) == 1  # only "inner says hi"


def test_get_state_with_subgraphs_shows_each_paused_level() -> None:
    app = nested_app(InMemoryCheckpointer())
    config = {"thread_id": "tree"}
    app.invoke({"messages": [("user", "go")]}, config)
    tree = app.get_state(config, subgraphs=True)
    assert isinstance(tree, StateTree)
    middle = tree.subgraphs["middle"]
    assert middle.namespace == "middle" and isinstance(middle.state, Notes)
    assert middle.state.notes == ["outer", "middle"]
    inner = middle.subgraphs["inner"]
    assert inner.namespace == "middle|inner"
    assert inner.state.execution_meta.status == "interrupted"
    assert inner.state.execution_meta.current_node == "ask"
    assert [m.text() for m in inner.state.context] == ["go", "inner says hi"]
    app.invoke({"resume": "ok"}, config)
    finished = app.get_state(config, subgraphs=True)
    assert finished is not None and finished.subgraphs == {}


def test_stream_with_subgraphs_yields_namespaced_events() -> None:
    app = nested_app(InMemoryCheckpointer())
    events = list(app.stream({"messages": [("user", "go")]}, {"thread_id": "s"}, subgraphs=True))
    nested = [(e.namespace, type(e.event).__name__) for e in events if isinstance(e, SubgraphEvent)]
    assert nested == [
        (("middle",), "UpdateEvent"),
        (("middle", "inner"), "MessageEvent"),
        (("middle", "inner"), "UpdateEvent"),
    ]
    states = [e.state for e in events if isinstance(e, SubgraphEvent)]
    assert isinstance(states[0], Notes) and states[0].notes == ["outer", "middle"]
    assert states[1] is None  # a message carries no state
    assert [m.text() for m in states[2].context] == ["go", "inner says hi"]  # a copy, as it was
    plain = list(app.stream({"messages": [("user", "go")]}, {"thread_id": "p"}))
    assert not any(isinstance(e, SubgraphEvent) for e in plain)
    assert [e.node for e in plain if isinstance(e, UpdateEvent)] == ["start"]


def test_interrupt_before_inside_a_subgraph_uses_the_parents_checkpointer() -> None:
    inner = StateGraph(Notes)
    inner.add_node("draft", note("draft"))
    inner.add_node("publish", note("publish"))
    inner.add_edge(START, "draft")
    inner.add_edge("draft", "publish")
    inner_app = inner.compile(interrupt_before=["publish"])  # no checkpointer of its own
    with pytest.raises(UsageError, match="need a checkpointer"):
        inner_app.invoke({})
    outer = StateGraph(Notes)
    outer.add_node("work", inner_app)
    outer.add_edge(START, "work")
    app = outer.compile(InMemoryCheckpointer())
    config = {"thread_id": "before"}
    paused = app.invoke({"messages": [("user", "go")]}, config)
    assert paused["state"].notes == [] and "interrupt" in paused
    tree = app.get_state(config, subgraphs=True)
    assert tree is not None
    assert tree.subgraphs["work"].state.execution_meta.interrupt_kind == "before"
    done = app.invoke({"resume": None}, config)
    assert done["state"].notes == ["draft", "publish"]


def test_shared_fields_hand_back_what_changed_through_the_parents_reducers() -> None:
    inner = StateGraph(Notes)
    inner.add_node("work", lambda s: {"notes": ["b"], "topic": "set inside"})
    inner.add_node("reply", say("from the subgraph"))
    inner.add_edge(START, "work")
    inner.add_edge("work", "reply")
    outer = StateGraph(Notes)
    outer.add_node("seed", lambda s: {"notes": ["a"]})
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "seed")
    outer.add_edge("seed", "sub")
    result = outer.compile().invoke({"messages": [("user", "hi")]})
    state = result["state"]
    assert state.notes == ["a", "b"]  # the delta, not ["a", "a", "b"]
    assert state.topic == "set inside"
    assert [m.text() for m in state.context] == ["hi", "from the subgraph"]
    assert [m.text() for m in result["messages"]] == ["from the subgraph"]


class Research(AgentState):
    query: str = ""
    findings: Annotated[list[str], operator.add] = []


class Report(AgentState):
    question: str = ""
    summary: str = ""


def test_a_subgraph_with_its_own_state_class_maps_input_and_output() -> None:
    research = StateGraph(Research)
    research.add_node("search", lambda s: {"findings": [f"found {s.query}"]})
    research.add_edge(START, "search")
    node = SubgraphNode(
        research.compile(),
        input=lambda report: {"query": report.question},
        output=lambda found: {"summary": "; ".join(found.findings)},
    )
    outer = StateGraph(Report)
    outer.add_node("research", node)
    outer.add_edge(START, "research")
    result = outer.compile().invoke({"state": {"question": "graphs"}})
    assert result["state"].summary == "found graphs"


def test_a_subgraph_with_its_own_checkpointer_is_refused() -> None:
    inner = StateGraph(Notes)
    inner.add_node("a", note("a"))
    inner.add_edge(START, "a")
    outer = StateGraph(Notes)
    outer.add_node("sub", inner.compile(InMemoryCheckpointer()))
    outer.add_edge(START, "sub")
    with pytest.raises(GraphBuildError, match="checkpointer of its own"):
        outer.compile()


def inner_asking() -> Any:
    inner = StateGraph(Research)
    inner.add_node("ask", lambda s: {"findings": [str(interrupt(f"search {s.query}?"))]})
    inner.add_node("more", lambda s: {"findings": [str(interrupt("more?"))]})
    inner.add_edge(START, "ask")
    inner.add_edge("ask", "more")
    return inner.compile()


def test_a_node_that_invokes_a_graph_pauses_and_resumes_it() -> None:
    inner = inner_asking()
    calls: list[str] = []

    def delegate(state: Report) -> dict[str, Any]:
        calls.append("delegate")
        found = inner.invoke({"state": {"query": state.question}})
        return {"summary": ", ".join(found["state"].findings)}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")
    app = outer.compile(InMemoryCheckpointer())
    config = {"thread_id": "calls"}
    first = app.invoke({"state": {"question": "docs"}}, config)
    assert first["interrupt"].value == "search docs?"
    second = app.invoke({"resume": "a"}, config)
    assert second["interrupt"].value == "more?"  # the inner graph kept its first answer
    done = app.invoke({"resume": "b"}, config)
    assert done["state"].summary == "a, b"
    assert done["state"].execution_meta.subgraphs == {}


async def test_an_async_node_that_awaits_a_graph_pauses_and_resumes_it() -> None:
    inner = inner_asking()

    async def delegate(state: Report) -> dict[str, Any]:
        found = await inner.ainvoke({"state": {"query": state.question}})
        return {"summary": ", ".join(found["state"].findings)}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")
    app = outer.compile(InMemoryCheckpointer())
    config = {"thread_id": "async-calls"}
    await app.ainvoke({"state": {"question": "x"}}, config)
    await app.ainvoke({"resume": 1}, config)
    done = await app.ainvoke({"resume": 2}, config)
    assert done["state"].summary == "1, 2"


def parallel_app(checkpointer: Any) -> Any:
    """START -> left (a subgraph that asks) and right, joined: one parallel step."""
    inner = StateGraph(Notes)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(Notes)
    outer.add_node("left", inner.compile())
    outer.add_node("right", lambda s: {"notes": ["right"]})
    outer.add_node("join", say("joined"))
    outer.add_edge(START, "left")
    outer.add_edge(START, "right")
    outer.add_edge(["left", "right"], "join")
    outer.add_edge("join", END)
    return outer.compile(checkpointer)


def test_subgraphs_in_a_parallel_step_pause_and_resume_by_task() -> None:
    app = parallel_app(InMemoryCheckpointer())
    config = {"thread_id": "parallel"}
    paused = app.invoke({"messages": [("user", "go")]}, config)
    assert paused["interrupt"].value == {"question": "approve?"}
    saved = app.get_state(config)
    assert saved is not None and list(saved.execution_meta.subgraphs) == ["left:0"]
    done = app.invoke({"resume": "ok"}, config)
    assert done["state"].notes == ["inner:ok", "right"]
    assert done["messages"][-1].text() == "joined"


def test_drawings_show_nested_graphs() -> None:
    shape = nested_app(InMemoryCheckpointer()).get_graph()
    middle = shape.node("middle")
    assert middle.kind == "subgraph" and middle.subgraph is not None
    inner = middle.subgraph.node("inner")
    assert inner.subgraph is not None and [n.name for n in inner.subgraph.nodes][1:3] == [
        "say",
        "ask",
    ]
    mermaid = shape.draw_mermaid()
    assert '    subgraph middle["middle<br/>subgraph over Notes"]' in mermaid
    assert '        subgraph middle_inner["inner<br/>subgraph over Notes"]' in mermaid
    assert "            middle_inner_say --> middle_inner_ask" in mermaid
    assert "    start --> middle" in mermaid and "    middle --> finish" in mermaid
    assert mermaid.count("\n        end\n") == 1 and mermaid.count("\n    end\n") == 1
    listing = shape.draw_ascii().splitlines()
    at = listing.index("middle  subgraph over Notes")
    assert listing[at + 1 : at + 3] == ["    | START", "    |   --> pre"]
    assert "    |     | say" in listing
    dot = shape.draw_dot()
    assert "compound=true" in dot.splitlines()[1]
    assert '    subgraph "cluster_middle" {' in dot
    assert '            graph [label="inner\\nsubgraph over Notes", style="rounded"];' in dot
    assert '            "middle_inner_say" -> "middle_inner_ask";' in dot
    assert '    "start" -> "middle___start__" [lhead="cluster_middle"];' in dot
    assert '    "middle___end__" -> "finish" [ltail="cluster_middle"];' in dot
    assert "compound" not in inner.subgraph.draw_dot()  # no cluster: the plain drawing


def test_a_node_calling_two_graphs_in_turn_runs_each_once() -> None:
    first, second = inner_asking(), inner_asking()
    runs: list[str] = []

    def delegate(state: Report) -> dict[str, Any]:
        a = first.invoke({"state": {"query": "a"}})["state"].findings
        runs.append("between")  # reached again on every resume of this node
        b = second.invoke({"state": {"query": "b"}})["state"].findings
        confirmed = interrupt("publish?")
        return {"summary": f"{a} {b} {confirmed}"}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")
    app = outer.compile(InMemoryCheckpointer())
    config = {"thread_id": "two-calls"}
    asked = [app.invoke({"state": {"question": "q"}}, config)["interrupt"].value]
    for answer in ["1", "2", "3", "4"]:
        asked.append(app.invoke({"resume": answer}, config)["interrupt"].value)
    assert asked == ["search a?", "more?", "search b?", "more?", "publish?"]
    saved = app.get_state(config)
    assert saved is not None and list(saved.execution_meta.subgraphs) == ["delegate", "delegate#2"]
    done = app.invoke({"resume": "yes"}, config)
    assert done["state"].summary == "['1', '2'] ['3', '4'] yes"
    assert done["state"].execution_meta.subgraphs == {}


def test_get_subgraphs_lists_the_graphs_a_node_names_under_its_name() -> None:
    first, second = inner_asking(), inner_asking()
    middle = StateGraph(Report)
    middle.add_node("relay", lambda state: first.invoke({"state": {"query": "q"}}) and {})
    middle.add_edge(START, "relay")
    inside = middle.compile()

    def delegate(state: Report) -> dict[str, Any]:
        first.invoke({"state": {"query": "a"}})
        second.invoke({"state": {"query": "b"}})
        return {}

    def look_back(state: Report) -> dict[str, Any]:  # names its own graph: not a subgraph
        app.get_state({"thread_id": "t"})
        return {}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_node("middle", inside)
    outer.add_node("look_back", look_back)
    outer.add_edge(START, "delegate")
    outer.add_edge("delegate", "middle")
    outer.add_edge("middle", "look_back")
    app = outer.compile(InMemoryCheckpointer())
    assert app.get_subgraphs() == {"delegate": first, "delegate#2": second, "middle": inside}
    nested = app.get_subgraphs(recurse=True)
    assert list(nested) == ["delegate", "delegate#2", "middle", "middle|relay"]
    assert nested["middle|relay"] is first
    assert app.get_subgraphs(namespace="middle", recurse=True) == {
        "middle": inside,
        "middle|relay": first,
    }


@pytest.mark.parametrize("name", ["outer|inner", "task:1", "node#2"])
def test_node_names_with_namespace_marks_are_refused(name: str) -> None:
    graph = StateGraph(Notes)
    with pytest.raises(GraphBuildError, match="separate the parts of a subgraph's namespace"):
        graph.add_node(name, note("x"))
    assert name not in graph.nodes


def delegating_app() -> Any:
    """A node that invokes a graph itself (not a subgraph node), over another state class."""
    inner = inner_asking()

    def delegate(state: Report) -> dict[str, Any]:
        found = inner.invoke({"state": {"query": state.question}})
        return {"summary": ", ".join(found["state"].findings)}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")
    return outer.compile(InMemoryCheckpointer())


def test_get_state_decodes_a_graph_a_node_invoked_with_its_own_state_class() -> None:
    app = delegating_app()
    config = {"thread_id": "called-tree"}
    app.invoke({"state": {"question": "docs"}}, config)
    app.invoke({"resume": "a"}, config)  # paused again, at "more?"
    tree = app.get_state(config, subgraphs=True)
    assert tree is not None
    called = tree.subgraphs["delegate"]
    assert called.namespace == "delegate"
    assert isinstance(called.state, Research)
    assert called.state.query == "docs" and called.state.findings == ["a"]
    assert called.state.execution_meta.current_node == "more"


def test_get_state_of_a_graph_the_node_does_not_name_falls_back_to_agent_state() -> None:
    def delegate(state: Report) -> dict[str, Any]:
        found = inner_asking().invoke({"state": {"query": state.question}})  # built here
        return {"summary": ", ".join(found["state"].findings)}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")
    app = outer.compile(InMemoryCheckpointer())
    config = {"thread_id": "unnamed"}
    app.invoke({"state": {"question": "docs"}}, config)
    tree = app.get_state(config, subgraphs=True)
    assert tree is not None
    called = tree.subgraphs["delegate"].state
    assert type(called) is AgentState and called.execution_meta.current_node == "ask"


async def test_stream_with_subgraphs_forwards_a_graph_a_node_invokes() -> None:
    app = delegating_app()
    config = {"thread_id": "called-stream"}
    events = [e async for e in app.astream({"state": {"question": "q"}}, config, subgraphs=True)]
    assert not any(isinstance(e, SubgraphEvent) for e in events)  # paused before any step ended
    events = [e async for e in app.astream({"resume": "a"}, config, subgraphs=True)]
    nested = [e for e in events if isinstance(e, SubgraphEvent)]
    assert [(e.namespace, type(e.event).__name__) for e in nested] == [
        (("delegate",), "UpdateEvent")
    ]
    update = nested[0]
    assert isinstance(update.event, UpdateEvent) and update.event.node == "ask"
    assert update.event.values == {"findings": ["a"]}
    assert isinstance(update.state, Research) and update.state.findings == ["a"]
    done = [e async for e in app.astream({"resume": "b"}, config, subgraphs=True)]
    nested = [e for e in done if isinstance(e, SubgraphEvent)]
    assert [e.event.node for e in nested] == ["more"]
    assert nested[0].state is not None and nested[0].state.findings == ["a", "b"]
    outer_updates = [e for e in done if isinstance(e, UpdateEvent)]
    assert [e.node for e in outer_updates] == ["delegate"]
    assert done.index(nested[0]) < done.index(outer_updates[0])  # the inner step came first
    plain = [
        e async for e in delegating_app().astream({"state": {"question": "q"}}, {"thread_id": "x"})
    ]
    assert not any(isinstance(e, SubgraphEvent) for e in plain)


def test_a_node_that_invokes_a_graph_streams_its_events() -> None:
    inner = StateGraph(Research)
    inner.add_node("search", lambda s: {"findings": [f"found {s.query}"]})
    inner.add_node("reply", say("inner reply"))
    inner.add_edge(START, "search")
    inner.add_edge("search", "reply")
    inner_app = inner.compile()

    def delegate(state: Report) -> dict[str, Any]:
        found = inner_app.invoke({"state": {"query": state.question}})
        return {"summary": found["state"].findings[0]}

    outer = StateGraph(Report)
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")
    events = list(outer.compile().stream({"state": {"question": "q"}}, subgraphs=True))
    nested = [(e.namespace, type(e.event).__name__) for e in events if isinstance(e, SubgraphEvent)]
    assert nested == [
        (("delegate",), "UpdateEvent"),
        (("delegate",), "MessageEvent"),
        (("delegate",), "UpdateEvent"),
    ]
    assert events[-1].state.summary == "found q"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_graphviz_draws_each_subgraph_as_a_cluster() -> None:
    svg = nested_app(InMemoryCheckpointer()).get_graph().draw_svg()  # dot accepts the source
    clusters = re.findall(r'class="cluster">\s*<title>([^<]*)', svg)
    assert clusters == ["cluster_middle", "cluster_middle_inner"]


ASKING = inner_asking()


def _search_with(question: str) -> list[str]:
    """A helper a node calls: the graph it runs is named here, not in the node."""
    findings: list[str] = ASKING.invoke({"state": {"query": question}})["state"].findings
    return findings


def test_a_graph_run_by_a_helper_of_the_node_is_decoded_by_its_class() -> None:
    outer = StateGraph(Report)
    outer.add_node("delegate", lambda state: {"summary": ", ".join(_search_with(state.question))})
    outer.add_edge(START, "delegate")
    app = outer.compile(InMemoryCheckpointer())
    config = {"thread_id": "helper"}
    app.invoke({"state": {"question": "docs"}}, config)
    tree = app.get_state(config, subgraphs=True)
    assert tree is not None and isinstance(tree.subgraphs["delegate"].state, Research)
    assert app.invoke({"resume": "a"}, config)["interrupt"].value == "more?"
    assert app.invoke({"resume": "b"}, config)["state"].summary == "a, b"
