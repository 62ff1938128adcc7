"""``StateGraph``: declare nodes and edges, then ``compile`` into a runnable graph.

Building checks the whole definition, so a wrong graph fails here with a
``GraphBuildError`` rather than halfway through a conversation.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tenxgraph.core.graph._command import PARALLEL, Send
from tenxgraph.core.graph._drawing import GraphDescription, describe_graph
from tenxgraph.core.graph._hooks import RunHooks
from tenxgraph.core.graph._node import FunctionNode, Node
from tenxgraph.core.graph._remote_tools import check_remote_tools_resumable
from tenxgraph.core.graph._subgraph import NAMESPACE_MARKS, SubgraphNode, graphs_named_by
from tenxgraph.core.graph._updates import StateSchema
from tenxgraph.core.graph._warm import WARM_BYTES, WARM_THREADS, WarmThreads
from tenxgraph.core.graph._workers import WorkerPool
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import IdGenerator, new_message_id
from tenxgraph.errors import ConfigError, GraphBuildError, NodeError
from tenxgraph.runs import LeasePolicy, MultitaskStrategy, missing_leases
from tenxgraph.utils.constants import END, START

if TYPE_CHECKING:
    from tenxgraph.core.graph._compiled import CompiledGraph
    from tenxgraph.storage.checkpointer.base import Checkpointer

__all__ = ["Branch", "Join", "StateGraph"]

S = TypeVar("S", bound=AgentState)

Router = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: ``router(state)`` picks the next node, through ``path_map``."""

    router: Router
    path_map: dict[Hashable, str] | None
    """Router value -> node name; None when the router returns node names itself."""

    def targets(self) -> list[str] | None:
        """Every node this branch can lead to, or None when only the router knows."""
        return None if self.path_map is None else list(self.path_map.values())

    @property
    def name(self) -> str:
        """The router's name, for error messages."""
        return str(getattr(self.router, "__name__", self.router))

    def destinations(self, source: str, value: Any, nodes: Container[str]) -> list[str | Send]:
        """Where the router's return leads: one value, a ``Send``, or a list of them."""
        values = value if isinstance(value, list | tuple) else [value]
        return [v if isinstance(v, Send) else self.target(source, v, nodes) for v in values]

    def target(self, source: str, value: Any, nodes: Container[str]) -> str:
        """The node the router's ``value`` leads to; ``NodeError`` (at ``source``) if none."""
        if self.path_map is None:
            target = value
        elif value in self.path_map:
            target = self.path_map[value]
        else:
            raise NodeError(
                source,
                f"router {self.name!r} returned {value!r}, which is not in its path_map "
                f"{sorted(map(str, self.path_map))}",
            )
        if target != END and target not in nodes:
            raise NodeError(
                source,
                f"router {self.name!r} returned {target!r}, which is not a node of the graph",
            )
        return str(target)


@dataclass(frozen=True, slots=True)
class Join:
    """``add_edge([a, b], c)``: ``c`` runs once every source has finished since it last ran."""

    sources: tuple[str, ...]
    target: str

    @property
    def key(self) -> str:
        """The join's name in ``ExecMeta.joins``, where the sources finished so far are kept."""
        return f"{'+'.join(self.sources)}->{self.target}"


class StateGraph(Generic[S]):
    """A graph under construction over the state class ``S``."""

    def __init__(
        self,
        state: type[S] | S = AgentState,  # type: ignore[assignment]
        context_manager: Any = None,
        *,
        id_generator: IdGenerator = new_message_id,
    ) -> None:
        """Start a graph over a state class, or an instance whose values seed new threads.

        ``context_manager`` (a ``BaseContextManager``) trims or summarizes the
        context for Agents with ``trim_context=True`` and when a run ends.
        ``id_generator`` makes the ids of messages this graph creates.
        """
        if isinstance(state, AgentState):
            self.state_class: type[S] = type(state)
            self.initial_state: S | None = state
        elif isinstance(state, type) and issubclass(state, AgentState):
            self.state_class = state
            self.initial_state = None
        else:
            raise GraphBuildError(
                f"StateGraph needs an AgentState subclass or instance, got {state!r}"
            )
        self.context_manager = context_manager
        self.id_generator = id_generator
        self.nodes: dict[str, Node] = {}
        self.edges: dict[str, str] = {}
        """Each source with exactly one plain edge: its target (the run loop's fast path)."""
        self.fanout: dict[str, tuple[str, ...]] = {}
        """Each source with several plain edges: their targets, run in one parallel step."""
        self.joins: list[Join] = []
        self.branches: dict[str, Branch] = {}
        self.command_targets: dict[str, tuple[str, ...]] = {}

    def add_node(
        self,
        name: str | Callable[..., Any] | Node,
        node: Any = None,
        *,
        ends: Sequence[str] = (),
    ) -> StateGraph[S]:
        """Add a node: ``add_node("NAME", fn)``, or ``add_node(fn)`` named after the function.

        ``ends`` declares the nodes a ``Command(goto=...)`` from this node may go
        to, so they count as reachable and are checked when the graph is built.
        A compiled graph is a node too: a subgraph (``SubgraphNode``), saved in
        this graph's threads.
        """
        from tenxgraph.core.graph._compiled import CompiledGraph

        if node is None:
            node = name
            name = str(getattr(node, "name", None) or getattr(node, "__name__", ""))
        if not isinstance(name, str) or not name:
            raise GraphBuildError(f"a node needs a non-empty string name, got {name!r}")
        if name in (START, END, PARALLEL):
            raise GraphBuildError(f"{name!r} is reserved and cannot be a node name")
        if any(mark in name for mark in NAMESPACE_MARKS):
            raise GraphBuildError(
                f"node name {name!r} has one of {' '.join(NAMESPACE_MARKS)}: they separate "
                "the parts of a subgraph's namespace (outer|inner, task:1, node#2); "
                "use another character, such as '.' or '-'"
            )
        if name in self.nodes:
            raise GraphBuildError(f"node {name!r} is already in the graph")
        self.command_targets[name] = tuple(ends)
        if isinstance(node, CompiledGraph):
            node = SubgraphNode(node)
        if isinstance(node, Node):
            self.nodes[name] = node
        elif callable(node):
            function_node = FunctionNode(name, node)
            if not function_node.streams and graphs_named_by(node):
                function_node.streams = True  # the events of the graphs it runs, as they come
            self.nodes[name] = function_node
        else:
            raise GraphBuildError(f"node {name!r} must be a function or a Node, got {node!r}")
        return self

    def add_edge(self, source: str | Sequence[str], target: str) -> StateGraph[S]:
        """After ``source`` runs, go to ``target``; a list of sources is a join.

        Several edges from one source run their targets concurrently in one
        step. ``add_edge(["a", "b"], "c")`` runs ``c`` once both ``a`` and
        ``b`` have finished (in one step or in different ones), where plain
        edges from ``a`` and ``b`` would run ``c`` after each.
        """
        if not isinstance(source, str):
            return self._add_join(tuple(source), target)
        if source == END:
            raise GraphBuildError("END has no outgoing edges")
        if source in self.branches:
            raise GraphBuildError(
                f"{source!r} already has conditional edges; a router may return several "
                "nodes (or Send items) instead of adding plain edges beside it"
            )
        targets = self.fanout.get(source) or ((self.edges[source],) if source in self.edges else ())
        if target in targets:
            raise GraphBuildError(f"edge {source!r} -> {target!r} is already in the graph")
        if targets:
            self.edges.pop(source, None)
            self.fanout[source] = (*targets, target)
        else:
            self.edges[source] = target
        return self

    def _add_join(self, sources: tuple[str, ...], target: str) -> StateGraph[S]:
        if not sources or not all(isinstance(name, str) for name in sources):
            raise GraphBuildError(f"a join needs a non-empty list of node names, got {sources!r}")
        if START in sources or END in sources or len(set(sources)) != len(sources):
            raise GraphBuildError(
                f"a join's sources must be distinct nodes (not START or END), got {list(sources)}"
            )
        join = Join(sources, target)
        if join in self.joins:
            raise GraphBuildError(f"join {list(sources)} -> {target!r} is already in the graph")
        self.joins.append(join)
        return self

    def ways_out(self, source: str) -> tuple[str, ...]:
        """The targets of ``source``'s plain edges (joins apart)."""
        if source in self.edges:
            return (self.edges[source],)
        return self.fanout.get(source, ())

    def add_conditional_edges(
        self,
        source: str,
        router: Router,
        path_map: Mapping[Any, str] | Sequence[str] | None = None,
    ) -> StateGraph[S]:
        """After ``source`` runs, call ``router(state)`` and go where ``path_map`` says.

        ``path_map`` maps router values to node names; a list of names (or None)
        means the router returns node names itself.
        """
        if source in self.edges or source in self.fanout or source in self.branches:
            raise GraphBuildError(
                f"{source!r} already has an outgoing edge; a node has plain edges or one router"
            )
        if path_map is None:
            mapping = None
        elif isinstance(path_map, Mapping):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        self.branches[source] = Branch(router, mapping)
        return self

    def set_entry_point(self, name: str) -> StateGraph[S]:
        """Start every run at ``name`` (the same as ``add_edge(START, name)``)."""
        return self.add_edge(START, name)

    def set_finish_point(self, name: str) -> StateGraph[S]:
        """End the run after ``name`` (the same as ``add_edge(name, END)``)."""
        return self.add_edge(name, END)

    def get_graph(self, *, collapse_middleware: bool = False) -> GraphDescription:
        """The shape to draw (``draw_mermaid``, ``draw_ascii``...), even of one compile refuses."""
        return describe_graph(self, collapse_middleware=collapse_middleware)

    def compile(
        self,
        checkpointer: Checkpointer | None = None,
        *,
        interrupt_before: Iterable[str] = (),
        interrupt_after: Iterable[str] = (),
        recursion_limit: int = 25,
        warm_threads: int = WARM_THREADS,
        warm_bytes: int = WARM_BYTES,
        tool_threads: int = 16,
        lease_seconds: float = 30.0,
        multitask_strategy: MultitaskStrategy = "reject",
        busy_timeout: float = 60.0,
        hooks: Sequence[RunHooks] = (),
        max_concurrency: int | None = None,
    ) -> CompiledGraph[S]:
        """Check the graph and return it runnable; every problem is a ``GraphBuildError``.

        ``warm_threads`` and ``warm_bytes`` bound how many recently finished
        threads (and how many estimated bytes of their messages) the compiled
        graph keeps in memory, so their next run needs one version check
        instead of a reload (``warm_threads=0`` turns this off).
        ``tool_threads`` bounds the threads the graph runs sync tools, nodes and
        routers on, apart from storage I/O; a sync call that timed out holds
        its thread until it returns.

        One run holds a thread at a time (docs: persistence-and-threads.md),
        through a lease taken from the checkpointer, which must implement the
        ``ThreadLeases`` contract too (every tenxgraph backend does):
        ``lease_seconds`` is the longest a dead run blocks its thread;
        ``multitask_strategy`` is what a run does when another holds its
        thread (``reject``, ``enqueue``, ``interrupt`` or ``rollback``; a run's
        config may say otherwise), and ``busy_timeout`` bounds the waits.
        ``hooks`` (``RunHooks``) are told when runs and nodes start and end and
        when the thread is saved: the seam for tracing, metrics and servers.
        ``max_concurrency`` bounds how many tasks of one parallel step (several
        edges, a join, ``Send`` items) run at once; None runs them all at once.
        """
        from tenxgraph.core.graph._compiled import CompiledGraph

        schema = StateSchema(self.state_class)
        self._check_names(interrupt_before, interrupt_after)
        self._check_reachable()
        if checkpointer is None:
            check_remote_tools_resumable(self.nodes)
        elif (problem := missing_leases(checkpointer)) is not None:
            raise GraphBuildError(problem)
        if recursion_limit < 1:
            raise GraphBuildError("recursion_limit must be at least 1")
        if max_concurrency is not None and max_concurrency < 1:
            raise GraphBuildError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if tool_threads < 1:
            raise GraphBuildError(f"tool_threads must be at least 1, got {tool_threads}")
        try:
            leases = LeasePolicy(lease_seconds, multitask_strategy, busy_timeout)
        except ConfigError as exc:
            raise GraphBuildError(str(exc)) from None
        return CompiledGraph(
            source=self,
            shape=self._frozen_copy(),
            nodes={name: node.bind(self, name) for name, node in self.nodes.items()},
            schema=schema,
            checkpointer=checkpointer,
            interrupt_before=frozenset(interrupt_before),
            interrupt_after=frozenset(interrupt_after),
            recursion_limit=recursion_limit,
            warm=WarmThreads(warm_threads, warm_bytes),
            workers=WorkerPool(tool_threads),
            leases=leases,
            hooks=hooks,
            max_concurrency=max_concurrency,
        )

    def _frozen_copy(self) -> StateGraph[S]:
        """A copy of the graph as it is now, for the compiled graph alone.

        ``add_node`` or ``add_edge`` on the builder after compile must change
        neither what the compiled graph draws nor what ``recompile`` builds,
        and a change to the seed state instance no longer reaches new threads.
        """
        copied = copy.copy(self)
        copied.nodes, copied.edges = dict(self.nodes), dict(self.edges)
        copied.fanout, copied.joins = dict(self.fanout), list(self.joins)
        copied.branches, copied.command_targets = dict(self.branches), dict(self.command_targets)
        if self.initial_state is not None:
            copied.initial_state = self.initial_state.model_copy(deep=True)
        return copied

    def _check_names(self, before: Iterable[str], after: Iterable[str]) -> None:
        known = set(self.nodes)
        plain = [(s, t) for s, ts in self.fanout.items() for t in ts] + list(self.edges.items())
        for source, target in plain:
            self._check_known(source, known | {START}, f"edge {source!r} -> {target!r}")
            self._check_known(target, known | {END}, f"edge {source!r} -> {target!r}")
        for join in self.joins:
            for name in join.sources:
                self._check_known(name, known, f"join {list(join.sources)} -> {join.target!r}")
            self._check_known(join.target, known | {END}, f"join -> {join.target!r}")
        for source, branch in self.branches.items():
            self._check_known(source, known | {START}, f"conditional edges from {source!r}")
            for target in branch.targets() or ():
                self._check_known(target, known | {END}, f"conditional edges from {source!r}")
        for source, targets in self.command_targets.items():
            for target in targets:
                self._check_known(target, known | {END}, f"ends of node {source!r}")
        for name in [*before, *after]:
            self._check_known(name, known, "interrupt_before/interrupt_after")

    @staticmethod
    def _check_known(name: str, known: set[str], where: str) -> None:
        if name not in known:
            choices = ", ".join(sorted(known))
            raise GraphBuildError(f"{where}: unknown node {name!r} (known: {choices})")

    def _check_reachable(self) -> None:
        if not self.ways_out(START) and START not in self.branches:
            raise GraphBuildError(
                "the graph has no entry point: call set_entry_point(name) or add_edge(START, name)"
            )
        seen: set[str] = set()
        todo = [START]
        while todo:
            name = todo.pop()
            if name in seen or name == END:
                continue
            seen.add(name)
            todo.extend(self.command_targets.get(name, ()))
            todo.extend(j.target for j in self.joins if name in j.sources)
            todo.extend(self.ways_out(name))
            if name in self.branches:
                targets = self.branches[name].targets()
                if targets is None:  # the router may return any node name
                    return
                todo.extend(targets)
        unreachable = sorted(set(self.nodes) - seen)
        if unreachable:
            raise GraphBuildError(f"node(s) {', '.join(unreachable)} cannot be reached from START")
