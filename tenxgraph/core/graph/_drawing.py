"""``get_graph()``: a plain description of a graph's shape, and its drawings.

The description is data (``GraphDescription``: nodes and edges with their
kinds) so any drawing, the CLI's or the coming web page's, starts from the
same facts. It is built from the ``StateGraph`` itself, not from a run, and
never refuses a graph: a graph ``compile`` would reject (a node nothing
leads to, a conditional target that is not a node) still draws, with those
parts marked, because a picture is how one finds such mistakes.

Decisions:

- A router without a ``path_map`` may return any node name. When its return
  annotation is a ``Literal`` of names, those are its targets; otherwise the
  drawing shows one dashed edge to a ``?`` node ("any node"), and no node is
  marked unreachable, since the router might lead anywhere.
- A node without an outgoing edge ends the run: drawn as an edge to END.
- ``Command(goto=...)`` targets declared with ``add_node(..., ends=[...])``
  (and middleware ``can_jump_to``) are dashed ``goto`` edges.
- Several plain edges from one node (a fan-out) are drawn as they are: all
  of them run, in one parallel step. A join (``add_edge([a, b], c)``) is a
  thick ``join`` edge from each source, labelled with every source it waits
  for. A router whose return annotation names ``Send`` (``-> list[Send]``)
  draws its targets as ``send`` edges: one task per item sent.
- ``collapse_middleware=True`` folds create_agent's middleware hook nodes into
  the Agent node (listed on it), leaving model <-> tools.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from tenxgraph.errors import ConfigError
from tenxgraph.utils.constants import END, START

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import Branch, StateGraph

__all__ = ["ANY_NODE", "DrawnEdge", "DrawnNode", "GraphDescription", "describe_graph"]

NodeKind = Literal[
    "start", "end", "function", "agent", "tools", "hook", "subgraph", "node", "missing", "any"
]
EdgeKind = Literal["edge", "branch", "goto", "any", "join", "send"]

ANY_NODE = "?"
"""The stand-in target of a router that declared no targets."""


@dataclass(frozen=True, slots=True)
class DrawnNode:
    """One node as drawn: its name, what it is, and what is wrong or special about it."""

    name: str
    kind: NodeKind
    """``agent`` / ``tools`` / ``hook`` (middleware) / ``function`` / ``node`` (another Node),
    ``start`` / ``end``, ``missing`` (named by an edge but not in the graph), ``any``."""
    detail: str = ""
    """A short description: the Agent's model, the ToolNode's tools, the hook's middleware."""
    interrupt_before: bool = False
    interrupt_after: bool = False
    unreachable: bool = False
    """Nothing leads here from START (``compile`` refuses such a graph)."""
    folded: tuple[str, ...] = ()
    """Hook nodes folded into this one by ``collapse_middleware``."""
    subgraph: GraphDescription | None = None
    """A ``subgraph`` node's graph, drawn inside it (Mermaid ``subgraph`` blocks)."""

    @property
    def marks(self) -> list[str]:
        """What to flag next to the node, in words."""
        return [
            text
            for flag, text in (
                (self.interrupt_before, "interrupt before"),
                (self.interrupt_after, "interrupt after"),
                (self.unreachable, "unreachable"),
                (self.kind == "missing", "not a node"),
            )
            if flag
        ]


@dataclass(frozen=True, slots=True)
class DrawnEdge:
    """One possible step out of ``source``.

    Its ``kind``: always (``edge``), a router's pick (``branch``), a declared
    ``Command`` goto (``goto``), a router that declared no targets (``any``),
    one source of a join (``join``, waits for all its sources), or a router's
    ``Send`` items (``send``, one task each).
    """

    source: str
    target: str
    kind: EdgeKind = "edge"
    label: str = ""
    """The router's value when it is not the target's name; the router's name for ``any``;
    the sources a ``join`` waits for (``a + b``)."""


@dataclass(frozen=True, slots=True)
class GraphDescription:
    """A graph's shape as plain data, with ``draw_mermaid``, ``draw_ascii``, ``draw_svg``..."""

    nodes: tuple[DrawnNode, ...]
    edges: tuple[DrawnEdge, ...]
    title: str = ""
    problems: tuple[str, ...] = field(default=())
    """What ``compile`` would refuse, in words (unreachable nodes, unknown targets)."""

    def node(self, name: str) -> DrawnNode:
        """The node called ``name``; ``ConfigError`` if there is none."""
        for node in self.nodes:
            if node.name == name:
                return node
        known = ", ".join(node.name for node in self.nodes)
        raise ConfigError(f"no node {name!r} in the drawing (nodes: {known})")

    def draw_mermaid(self) -> str:
        """Mermaid flowchart text (renders on GitHub, in docs sites and mermaid.live)."""
        from tenxgraph.core.graph._drawing_text import mermaid

        return mermaid(self)

    def draw_ascii(self) -> str:
        """A plain-text listing for terminals: each node, then where it can go."""
        from tenxgraph.core.graph._drawing_text import ascii_listing

        return ascii_listing(self)

    def draw_dot(self) -> str:
        """Graphviz DOT source (what ``draw_svg``/``draw_png`` hand to ``dot``)."""
        from tenxgraph.core.graph._drawing_text import dot_source

        return dot_source(self)

    def draw_svg(self) -> str:
        """SVG drawn locally by Graphviz ``dot``; a ``UsageError`` says how to install it."""
        from tenxgraph.core.graph._drawing_text import run_dot

        return run_dot(self.draw_dot(), "svg").decode("utf-8")

    def draw_png(self) -> bytes:
        """PNG bytes drawn locally by Graphviz ``dot`` (see ``draw_svg``)."""
        from tenxgraph.core.graph._drawing_text import run_dot

        return run_dot(self.draw_dot(), "png")


def describe_graph(
    builder: StateGraph[Any],
    *,
    interrupt_before: Iterable[str] = (),
    interrupt_after: Iterable[str] = (),
    collapse_middleware: bool = False,
) -> GraphDescription:
    """The shape of ``builder``'s graph; see the module docstring for the decisions.

    ``StateGraph.get_graph`` and ``CompiledGraph.get_graph`` call it, the
    compiled graph with the nodes it pauses before and after.
    """
    before, after = frozenset(interrupt_before), frozenset(interrupt_after)
    edges = _edges(builder)
    known = set(builder.nodes)
    nodes = [DrawnNode(START, "start")]
    nodes += [
        DrawnNode(
            name,
            *_kind_and_detail(node),
            interrupt_before=name in before,
            interrupt_after=name in after,
            subgraph=_subgraph_of(node),
        )
        for name, node in builder.nodes.items()
    ]
    nodes.append(DrawnNode(END, "end"))
    named = [n for e in edges for n in (e.source, e.target)]
    missing = dict.fromkeys(n for n in named if n not in known | {START, END, ANY_NODE})
    nodes += [DrawnNode(name, "missing") for name in missing]
    if any(edge.kind == "any" for edge in edges):
        nodes.append(DrawnNode(ANY_NODE, "any", "any node the router names"))
    unreachable = _unreachable(known, edges)
    nodes = [replace(n, unreachable=True) if n.name in unreachable else n for n in nodes]
    problems = [f"node {n!r} cannot be reached from START" for n in sorted(unreachable)]
    problems += [f"{n!r} is the target of an edge but not a node" for n in missing]
    description = GraphDescription(
        tuple(nodes), tuple(edges), builder.state_class.__name__, tuple(problems)
    )
    return _collapse(description) if collapse_middleware else description


def _edges(builder: StateGraph[Any]) -> list[DrawnEdge]:
    edges = [DrawnEdge(source, target) for source, target in builder.edges.items()]
    edges += [DrawnEdge(s, t) for s, targets in builder.fanout.items() for t in targets]
    for source, branch in builder.branches.items():
        edges += _branch_edges(source, branch)
    for join in builder.joins:
        label = " + ".join(join.sources)
        edges += [DrawnEdge(source, join.target, "join", label) for source in join.sources]
    for source, targets in builder.command_targets.items():
        edges += [DrawnEdge(source, target, "goto") for target in targets]
    joined = {name for join in builder.joins for name in join.sources}
    leads = {*builder.edges, *builder.fanout, *builder.branches, *joined}
    ends = [n for n in builder.nodes if n not in leads]
    return edges + [DrawnEdge(name, END) for name in ends]  # the run ends after them


def _branch_edges(source: str, branch: Branch) -> list[DrawnEdge]:
    kind: EdgeKind = "send" if _sends(branch.router) else "branch"
    if branch.path_map is not None:
        return [
            DrawnEdge(source, target, kind, "" if value == target else str(value))
            for value, target in branch.path_map.items()
        ]
    names = _literal_names(branch.router)
    if names:
        return [DrawnEdge(source, name, kind) for name in names]
    return [DrawnEdge(source, ANY_NODE, "any", branch.name)]


def _sends(router: Any) -> bool:
    """True when the router's return annotation names ``Send`` (``-> list[Send]``)."""
    from tenxgraph.core.graph._send import Send

    try:
        hint = typing.get_type_hints(router).get("return")
    except Exception:  # an annotation that does not resolve declares nothing
        return False
    todo = [hint]
    while todo:
        item = todo.pop()
        if item is Send:
            return True
        todo.extend(typing.get_args(item))
    return False


def _literal_names(router: Any) -> list[str]:
    """The names in a router's ``-> Literal["a", "b"]`` annotation, or [] without one."""
    try:
        hint = typing.get_type_hints(router).get("return")
    except Exception:  # an annotation that does not resolve declares nothing
        return []
    if typing.get_origin(hint) is not Literal:
        return []
    return [value for value in typing.get_args(hint) if isinstance(value, str)]


def _unreachable(known: set[str], edges: Iterable[DrawnEdge]) -> set[str]:
    """Nodes no path from START reaches; none when a reachable router declared no targets."""
    out: dict[str, list[DrawnEdge]] = {}
    for edge in edges:
        out.setdefault(edge.source, []).append(edge)
    seen: set[str] = set()
    todo = [START]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for edge in out.get(name, ()):
            if edge.kind == "any":
                return set()
            todo.append(edge.target)
    return known - seen


def _kind_and_detail(node: Any) -> tuple[NodeKind, str]:
    from tenxgraph.core.graph._agent import Agent
    from tenxgraph.core.graph._middleware import HookNode
    from tenxgraph.core.graph._node import FunctionNode
    from tenxgraph.core.graph._subgraph import SubgraphNode
    from tenxgraph.core.graph._tool_node import ToolNode

    if isinstance(node, Agent):
        model = getattr(node, "_model_ref", None)
        shown = model if isinstance(model, str) else getattr(model, "model", "")
        shown = shown or type(model).__name__
        detail = f"Agent, model {shown}"
        if node.tools and node.tool_node is None:
            detail += f", {len(node.tools)} tool(s)"
        return "agent", detail + _wrapped(node.wrappers)
    if isinstance(node, ToolNode):
        names = list(node.tools)
        shown = ", ".join(names[:4]) + (f" +{len(names) - 4}" if len(names) > 4 else "")
        shown = shown or "no tools (a call gets an error result)"
        return "tools", f"ToolNode: {shown}" + _wrapped(node.wrappers)
    if isinstance(node, HookNode):
        return "hook", f"{node.hook} of middleware {node.middleware.name}"
    if isinstance(node, FunctionNode):
        return "function", ""
    if isinstance(node, SubgraphNode):
        mapped = ", mapped in and out" if node.input is not None else ""
        return "subgraph", f"subgraph over {node.graph.state_class.__name__}{mapped}"
    return "node", type(node).__name__


def _subgraph_of(node: Any) -> GraphDescription | None:
    from tenxgraph.core.graph._subgraph import SubgraphNode

    return node.graph.get_graph() if isinstance(node, SubgraphNode) else None


def _wrapped(wrappers: Iterable[Any]) -> str:
    """``; wrapped by a, b``: the middleware (or functions) around each model or tool call."""
    names = [
        str(getattr(getattr(w, "__self__", None), "name", None) or getattr(w, "__name__", w))
        for w in wrappers
    ]
    return f"; wrapped by {', '.join(names)}" if names else ""


def _collapse(description: GraphDescription) -> GraphDescription:
    """Fold middleware hook nodes into the one Agent node (unchanged unless there is one)."""
    agents = [n for n in description.nodes if n.kind == "agent"]
    hooks = [n.name for n in description.nodes if n.kind == "hook"]
    if len(agents) != 1 or not hooks:
        return description
    agent = agents[0].name
    into = {name: agent for name in hooks}
    edges: dict[tuple[str, str], DrawnEdge] = {}
    for edge in description.edges:
        source, target = into.get(edge.source, edge.source), into.get(edge.target, edge.target)
        if source == target and (edge.source in into or edge.target in into):
            continue  # a step between the agent and its own hooks
        folded = replace(edge, source=source, target=target)
        edges.setdefault((source, target), folded)
    nodes = tuple(
        replace(n, folded=tuple(hooks)) if n.name == agent else n
        for n in description.nodes
        if n.name not in into
    )
    return replace(description, nodes=nodes, edges=tuple(edges.values()))
