"""Drawing graphs: every example graph and create_agent variant against golden files, plus marks.

The golden files under ``drawings/`` were reviewed by hand once; a change to
a drawing shows up as a diff there. Regenerate them with
``UPDATE_DRAWINGS=1 pytest tests/core/graph/test_drawing.py`` and review the diff.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Literal

import pytest

from tenxgraph.core.graph import (
    Agent,
    CompiledGraph,
    GraphDescription,
    ModelCall,
    StateGraph,
    ToolNode,
    after_agent,
    after_model,
    before_agent,
    before_model,
    create_agent,
    tool,
    tools_condition,
    wrap_model_call,
    wrap_tool_call,
)
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import GraphBuildError, UsageError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import END, START

REPO = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).parent / "drawings"
UNTIL = {"local_model.py": "question = "}
"""Examples that need a real model to run: only their code before this line runs."""
FACTORIES = {"postgres_redis.py": "make_app", "multi_agent.py": "build"}
"""Examples that build their graph in a function taking a checkpointer: imported, not run."""


def check_golden(name: str, text: str) -> None:
    """Compare with ``drawings/name`` (or write it when UPDATE_DRAWINGS is set)."""
    path = GOLDEN / name
    if os.environ.get("UPDATE_DRAWINGS"):
        path.write_text(text, "utf-8")
    assert path.exists(), f"no golden drawing {path}; run with UPDATE_DRAWINGS=1 and review it"
    assert text == path.read_text("utf-8")


def drawings(graphs: dict[str, Any]) -> str:
    """The ASCII and Mermaid drawings of each graph, by variable name."""
    parts = []
    for name, graph in graphs.items():
        shape = graph.get_graph()
        check_structure(graph, shape)
        parts.append(f"## {name}\n\n{shape.draw_ascii()}\n{shape.draw_mermaid()}")
    return "\n".join(parts)


def check_structure(graph: StateGraph[Any] | CompiledGraph[Any], shape: GraphDescription) -> None:
    """The drawing holds exactly the graph's nodes and ways between them."""
    builder = graph._shape if isinstance(graph, CompiledGraph) else graph
    assert [n.name for n in shape.nodes if n.kind not in ("missing", "any")] == [
        START,
        *builder.nodes,
        END,
    ]
    drawn = {(e.source, e.target) for e in shape.edges}
    expected = set(builder.edges.items())
    for source, branch in builder.branches.items():
        expected |= {(source, target) for target in branch.targets() or ["?"]}
    for source, targets in builder.command_targets.items():
        expected |= {(source, target) for target in targets}
    expected |= {
        (name, END) for name in builder.nodes if name not in builder.edges | builder.branches
    }
    assert drawn == expected
    listing = shape.draw_ascii()
    for _, target in drawn:
        assert f"> {'END' if target == END else target}" in listing
    mermaid = shape.draw_mermaid()
    assert mermaid.startswith("flowchart TD\n")
    assert mermaid.count("-->") + mermaid.count("-.->") == len(shape.edges)


def example_graphs(name: str) -> dict[str, Any]:
    """Run an example (as ``python examples/name`` would) and collect the graphs it made."""
    path = REPO / "examples" / name
    run_name = "example" if name in FACTORIES else "__main__"
    with contextlib.redirect_stdout(io.StringIO()):
        if name in UNTIL:
            source = path.read_text("utf-8").split(UNTIL[name])[0]
            found: dict[str, Any] = {"__name__": run_name}
            exec(compile(source, str(path), "exec"), found)  # our own example, cut before it runs
        else:
            found = runpy.run_path(str(path), run_name=run_name)
    if name in FACTORIES:
        found = {FACTORIES[name]: found[FACTORIES[name]](InMemoryCheckpointer())}
    graphs = {k: v for k, v in found.items() if isinstance(v, (StateGraph, CompiledGraph))}
    compiled_builders = {id(v._source) for v in graphs.values() if isinstance(v, CompiledGraph)}
    return {k: v for k, v in sorted(graphs.items()) if id(v) not in compiled_builders}


EXAMPLES = sorted(
    p.name
    for p in (REPO / "examples").glob("*.py")
    if "StateGraph" in p.read_text("utf-8") or "create_agent" in p.read_text("utf-8")
)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_graph_draws_as_reviewed(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    graphs = example_graphs(name)
    assert graphs, f"{name} builds no graph at module level"
    check_golden(name.replace(".py", ".md"), drawings(graphs))


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def search(query: str) -> str:
    """Search the web."""
    return query


@before_agent
def greet(state: AgentState) -> None:
    """A before_agent hook."""


@before_model(can_jump_to=["end", "tools"])
def guard(state: AgentState) -> None:
    """A before_model hook that may end the run or go to the tools."""


@after_model
def check(state: AgentState) -> None:
    """An after_model hook."""


@after_agent
def audit(state: AgentState) -> None:
    """An after_agent hook."""


@wrap_model_call
async def retry_once(call: ModelCall, handler: Any) -> Message:
    """A wrap_model_call middleware."""
    return await handler(call)


@wrap_tool_call
async def log_tools(call: Any, handler: Any) -> Any:
    """A wrap_tool_call middleware."""
    return await handler(call)


def agent_variants() -> dict[str, Any]:
    """create_agent with and without tools and middleware, plus a hand-built Agent graph."""
    hand: StateGraph[AgentState] = StateGraph(AgentState)
    hand.add_node("agent", Agent(ScriptedModel(["hi"]), tool_node="tools", tools=[add]))
    hand.add_node("tools", ToolNode([add]))
    hand.set_entry_point("agent")
    hand.add_conditional_edges("agent", tools_condition, ["tools", END])
    hand.add_edge("tools", "agent")
    return {
        "no_tools": create_agent(ScriptedModel(["hi"])),
        "tools": create_agent(ScriptedModel(["hi"]), [add, search]),
        "middleware": create_agent(
            ScriptedModel(["hi"]), [add], middleware=[greet, guard, check, audit]
        ),
        "middleware_no_tools": create_agent(ScriptedModel(["hi"]), middleware=[check, audit]),
        "wrappers": create_agent(ScriptedModel(["hi"]), [add], middleware=[retry_once, log_tools]),
        "hand_built_with_interrupt": hand.compile(
            InMemoryCheckpointer(), interrupt_before=["tools"], interrupt_after=["agent"]
        ),
    }


def test_create_agent_variants_draw_as_reviewed() -> None:
    check_golden("create_agent.md", drawings(agent_variants()))


def test_collapsing_middleware_folds_hooks_into_the_agent() -> None:
    app = agent_variants()["middleware"]
    shape = app.get_graph(collapse_middleware=True)
    assert [n.name for n in shape.nodes] == [START, "agent", "tools", END]
    assert shape.node("agent").folded == (
        "greet.before_agent",
        "guard.before_model",
        "check.after_model",
        "audit.after_agent",
    )
    assert {(e.source, e.target, e.kind) for e in shape.edges} == {
        (START, "agent", "edge"),
        ("agent", "tools", "branch"),
        ("agent", END, "edge"),
        ("tools", "agent", "edge"),
    }
    check_golden("create_agent_collapsed.md", shape.draw_ascii() + "\n" + shape.draw_mermaid())


def test_interrupt_points_are_marked() -> None:
    shape = agent_variants()["hand_built_with_interrupt"].get_graph()
    assert shape.node("tools").marks == ["interrupt before"]
    assert shape.node("agent").marks == ["interrupt after"]
    assert "tools  ToolNode: add  [interrupt before]" in shape.draw_ascii()
    assert "class tools interrupt" in shape.draw_mermaid()


def broken_graph() -> StateGraph[AgentState]:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("a", lambda state: None)
    graph.add_node("b", lambda state: None)
    graph.add_node("lost", lambda state: None)
    graph.set_entry_point("a")
    graph.add_conditional_edges("a", lambda state: "yes", {"yes": "b", "no": "nowhere"})
    return graph


def test_unreachable_nodes_and_dangling_targets_still_draw_marked() -> None:
    graph = broken_graph()
    with pytest.raises(GraphBuildError):
        graph.compile()
    shape = graph.get_graph()
    assert shape.node("lost").unreachable
    assert shape.node("nowhere").kind == "missing"
    assert shape.problems == (
        "node 'lost' cannot be reached from START",
        "'nowhere' is the target of an edge but not a node",
    )
    check_golden("broken.md", shape.draw_ascii() + "\n" + shape.draw_mermaid())


def test_a_router_without_targets_is_drawn_as_any_node_and_reachability_is_open() -> None:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("a", lambda state: None)
    graph.add_node("b", lambda state: None)
    graph.set_entry_point("a")

    def pick(state: AgentState) -> str:
        return "b"

    graph.add_conditional_edges("a", pick)
    shape = graph.compile().get_graph()
    assert [(e.source, e.target, e.kind, e.label) for e in shape.edges if e.source == "a"] == [
        ("a", "?", "any", "pick")
    ]
    assert shape.node("?").kind == "any"
    assert not shape.node("b").unreachable  # the router may lead there
    assert "-?-> ?   pick returns a node name (no path_map)" in shape.draw_ascii()


def test_a_router_annotated_with_literal_names_declares_its_targets() -> None:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("a", lambda state: None)
    graph.add_node("b", lambda state: None)
    graph.set_entry_point("a")

    def pick(state: AgentState) -> Literal["b", "__end__"]:
        return "b"

    graph.add_conditional_edges("a", pick)
    edges = [(e.target, e.kind) for e in graph.get_graph().edges if e.source == "a"]
    assert edges == [("b", "branch"), (END, "branch")]


def test_names_that_are_not_identifiers_get_safe_ids_and_escaped_labels() -> None:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node('say "hi"', lambda state: None)
    graph.add_node("say 'hi'", lambda state: None)
    graph.add_node("end", lambda state: None)
    graph.set_entry_point('say "hi"')
    graph.add_edge('say "hi"', "say 'hi'")
    graph.add_edge("say 'hi'", "end")
    mermaid = graph.get_graph().draw_mermaid()
    assert 'say__hi_["say #quot;hi#quot;"]' in mermaid
    assert "say__hi__2[\"say 'hi'\"]" in mermaid
    assert "say__hi__2 --> end_2" in mermaid
    assert '"say \\"hi\\""' in graph.get_graph().draw_dot()


needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz 'dot' is not installed (apt-get install graphviz); .ci/run installs it",
)


@needs_dot
@pytest.mark.parametrize("graph", ["middleware", "hand_built_with_interrupt"])
def test_svg_is_valid_xml_naming_every_node(graph: str) -> None:
    shape = agent_variants()[graph].get_graph()
    root = ET.fromstring(shape.draw_svg())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {n.name for n in shape.nodes if n.kind not in ("start", "end")} <= texts


@needs_dot
def test_svg_of_a_broken_graph_is_valid_xml() -> None:
    root = ET.fromstring(broken_graph().get_graph().draw_svg())
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"lost", "(unreachable)", "nowhere", "(not a node)"} <= texts


@needs_dot
def test_png_is_a_png() -> None:
    assert agent_variants()["tools"].get_graph().draw_png().startswith(b"\x89PNG\r\n\x1a\n")


def test_without_dot_svg_is_refused_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "")
    shape = agent_variants()["tools"].get_graph()
    with pytest.raises(UsageError, match="apt-get install graphviz"):
        shape.draw_svg()
    with pytest.raises(UsageError, match="Graphviz"):
        shape.draw_png()
    # the text drawings need nothing: without dot they are the reviewed ones, exactly
    reviewed = (GOLDEN / "create_agent.md").read_text("utf-8")
    section = f"## tools\n\n{shape.draw_ascii()}\n{shape.draw_mermaid()}\n## "
    assert section in reviewed + "\n## "  # the whole section, up to the next one
