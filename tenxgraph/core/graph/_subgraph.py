"""Subgraphs: a compiled graph run inside a node of another graph, on the parent's thread.

A subgraph has no checkpointer of its own. It runs as part of one step of
its parent, under the parent's lease; while it is paused (an ``interrupt``
or ``interrupt_before`` inside it), its state waits in the parent's
``ExecMeta.subgraphs`` under its namespace segment, and the parent's pause
saves it. The parent's caller resumes the parent, the parent's node runs
again, and the subgraph continues from its saved state with the answer.
When the subgraph finishes, its entry is marked done (a node that runs
again after a later pause does not run it twice) and dropped when its node
finishes: nothing of it stays in the thread but what it handed back.

One mechanism serves ``add_node("name", compiled)`` (``SubgraphNode``) and
a node that calls ``compiled.invoke(...)`` itself (``run_nested``).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tenxgraph.core.graph._events import (
    CustomEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    SubgraphEvent,
    UpdateEvent,
)
from tenxgraph.core.graph._interrupt import GraphInterrupt, InterruptScope, _scope
from tenxgraph.core.graph._node import FunctionNode, Node, NodeOutput, RunContext, StoredThreadRef
from tenxgraph.core.graph._snapshots import ThreadSnapshot
from tenxgraph.core.graph._steps import RunSteps
from tenxgraph.core.state.agent_state import RUNTIME_FIELDS, AgentState, field_reducers
from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.errors import GraphBuildError, StateError, UsageError

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import StateGraph
    from tenxgraph.core.graph._compiled import CompiledGraph

__all__ = [
    "NAMESPACE_MARKS",
    "Fresh",
    "Nested",
    "StateTree",
    "SubgraphNode",
    "check_pausable",
    "graphs_named_by",
    "invoke_nested",
    "parent_scope",
    "run_nested",
    "state_tree",
    "subgraphs_of",
]

NAMESPACE_MARKS = ("|", ":", "#")
"""What separates a namespace's parts (``outer|inner``, ``task:1``, ``node#2``): no node
name may hold one, so every namespace names one path of nodes."""


@dataclass(slots=True)
class Nested:
    """How a subgraph run starts: its state, and what it shares with its parent's run."""

    state: AgentState
    namespace: str
    stored_thread: StoredThreadRef | None


@dataclass(slots=True)
class StateTree:
    """A state with the states of its paused subgraphs (``get_state(subgraphs=True)``)."""

    state: AgentState
    namespace: str = ""
    subgraphs: dict[str, StateTree] = field(default_factory=dict)
    """The paused subgraphs' trees, by namespace segment (the node's name)."""


def parent_scope(graph: CompiledGraph[Any]) -> InterruptScope | None:
    """The running node's scope when ``graph`` (without a checkpointer) is called inside one."""
    if graph.checkpointer is not None:
        return None
    scope = _scope.get()
    return scope if scope is not None and scope.subgraphs is not None else None


def check_pausable(graph: CompiledGraph[Any]) -> None:
    """Refuse a top-level run of a graph that pauses but has no checkpointer to resume from.

    Compiling one is allowed: as a subgraph it is saved by its parent's checkpointer.
    """
    if graph.interrupt_before or graph.interrupt_after:
        raise UsageError(
            "interrupt_before/interrupt_after need a checkpointer to resume: compile "
            "with one, or run this graph as a subgraph of a graph that has one"
        )


def _segment(scope: InterruptScope) -> str:
    """The namespace segment of the next subgraph run in this node: its name, then ``#2``..."""
    scope.calls += 1
    last = scope.namespace.rsplit("|", 1)[-1]
    return last if scope.calls == 1 else f"{last}#{scope.calls}"


@dataclass(slots=True)
class Fresh:
    """How a subgraph's first run starts: its state, its input, the parent's messages it shares."""

    make: Callable[[], AgentState]
    input: Mapping[str, Any] = field(default_factory=dict)
    shared: list[Message] = field(default_factory=list)
    """The parent's messages the state starts with: not saved again with the subgraph."""


async def run_nested(
    graph: CompiledGraph[Any],
    fresh: Fresh,
    scope: InterruptScope,
    ctx: RunContext | None,
    config: Mapping[str, Any] | None,
    invocation_state: dict[str, Any] | None = None,
) -> AsyncIterator[SubgraphEvent | RunResult]:
    """Run ``graph`` as a subgraph of the node whose ``scope`` is given.

    Yields its events as ``SubgraphEvent``s under its namespace segment when
    the parent's stream reads them (``scope.forward``), and ends with the
    subgraph's ``RunResult`` when it finished. When it pauses, its state is
    kept in the parent's ``ExecMeta.subgraphs`` and a ``GraphInterrupt``
    with its value pauses the parent; the parent's node runs again on
    resume, and so does this call: it continues the subgraph with the next
    answer. A subgraph that finished in an earlier run of the node is not
    run again (the node runs again when a later part of it paused): its
    result is kept until the node has finished.
    """
    store = scope.subgraphs
    assert store is not None  # parent_scope and SubgraphNode check
    segment = _segment(scope)
    parent_ns = scope.namespace.rsplit("|", 1)[0] if "|" in scope.namespace else ""
    saved = store.get(segment)
    input: Mapping[str, Any] = fresh.input
    if saved is None:
        state, used, produced = fresh.make(), 0, []
    else:
        state = _restore(graph.state_class, saved, fresh.shared)
        used, produced = int(saved["used"]), list(saved["produced"])
        scope.asked += used  # the answers it had: already in its saved state
        if saved["done"]:
            yield RunResult(_produced(state, produced), state)
            return
        if scope.asked >= len(scope.answers):  # no new answer: it stays paused
            raise GraphInterrupt(saved["interrupt"])
        input = {"resume": scope.answers[scope.asked]}
        scope.asked, used = scope.asked + 1, used + 1
    nested = Nested(
        state,
        f"{parent_ns}|{segment}" if parent_ns else segment,
        None if ctx is None else ctx.stored_thread,
    )
    events = graph._run(
        input,
        {k: v for k, v in (config or {}).items() if k != "checkpoint_id"},
        ctx.invocation_state if ctx is not None else invocation_state,
        inline_sync=False if ctx is None else ctx.run_sync_inline,
        progress=scope.forward is not None,
        nested=nested,
    )
    result: RunResult | None = None
    copied: tuple[int, AgentState] | None = None
    async for event in events:
        if isinstance(event, RunResult):
            result = event
        elif isinstance(event, SubgraphEvent):
            yield SubgraphEvent((segment, *event.namespace), event.event, event.state)
        elif isinstance(event, UpdateEvent):  # with the state after its step: its values
            if copied is None or copied[0] != event.step:  # one copy per step, not per task
                copied = (event.step, state.model_copy(deep=True))
            yield SubgraphEvent((segment,), event, copied[1])
        elif isinstance(event, MessageEvent | CustomEvent):
            yield SubgraphEvent((segment,), event)
    assert result is not None  # a run that did not raise ends with its result
    produced += [m.message_id for m in result.messages]
    paused = result.interrupt
    store[segment] = _saved(result.state, fresh.shared, used, produced, paused)
    if paused is not None:
        raise GraphInterrupt(paused.value)
    yield RunResult(_produced(result.state, produced), result.state, None, result.invocation_state)


def _produced(state: AgentState, ids: list[str | int]) -> list[Message]:
    """The messages the subgraph's runs produced, in context order (from their ids)."""
    wanted = set(ids)
    return [m for m in state.context if m.message_id in wanted]


def _saved(
    state: AgentState,
    shared: list[Message],
    used: int,
    produced: list[str | int],
    paused: InterruptEvent | None,
) -> dict[str, Any]:
    """The JSON form of a subgraph's state, without the messages it got from its parent."""
    snapshot = ThreadSnapshot.of(state)
    context, base = snapshot.context, len(shared)
    same = [m.message_id for m in context[:base]] == [m.message_id for m in shared]
    context, base = (context[base:], base) if base and same else (context, 0)
    return {
        "values": snapshot.values,
        "context": MessagesAdapter.dump_python(context, mode="json"),
        "base": base,
        "used": used,
        "produced": produced,
        "done": paused is None,
        "interrupt": None if paused is None else paused.value,
        "state_class": _class_name(type(state)),
    }


def _class_name(state_class: type[AgentState]) -> str:
    """How a saved subgraph names its state class, to find its graph again (never imported)."""
    return f"{state_class.__module__}.{state_class.__qualname__}"


def _restore(
    state_class: type[AgentState], saved: Mapping[str, Any], shared: list[Message]
) -> AgentState:
    """A subgraph's state from its saved form, with the messages it shares with its parent."""
    context = shared[: int(saved["base"])] + MessagesAdapter.validate_python(saved["context"])
    declared = {k: v for k, v in saved["values"].items() if k in state_class.model_fields}
    return ThreadSnapshot(values=declared, context=context).to_state(state_class)


class SubgraphNode(Node):
    """A compiled graph as a node: ``add_node("research", research_app)``.

    With the same state fields as its parent (by name), the subgraph starts
    from the parent's values of the fields both declare and its messages,
    and hands back the shared fields it changed and the messages it added,
    through the parent's reducers. ``input(parent_state)`` (a dict of the
    subgraph's fields, ``context`` for its messages, or a state of its class)
    and ``output(subgraph_state)`` (anything a node may return) map states
    of different classes instead.
    """

    def __init__(
        self,
        graph: CompiledGraph[Any],
        *,
        input: Callable[[Any], Any] | None = None,
        output: Callable[[Any], Any] | None = None,
    ) -> None:
        self.graph = graph
        self.input = input
        self.output = output
        self.shared: tuple[str, ...] = ()
        self.reduced: frozenset[str] = frozenset()

    def bind(self, graph: StateGraph[Any], name: str) -> Node:
        """Check the subgraph can run here and find the fields it shares with ``graph``."""
        if self.graph.checkpointer is not None:
            raise GraphBuildError(
                f"subgraph {name!r} has a checkpointer of its own; compile it without one: "
                "it is saved in its parent's thread, under the parent's checkpointer"
            )
        bound = copy.copy(self)
        parent_fields = graph.state_class.model_fields
        child_fields = self.graph.state_class.model_fields
        if self.input is None or self.output is None:
            shared = [f for f in child_fields if f in parent_fields and f not in RUNTIME_FIELDS]
            bound.shared = tuple(shared)
        bound.reduced = frozenset(field_reducers(graph.state_class))
        return bound

    def _fresh(self, state: AgentState) -> Fresh:
        """How the subgraph starts from the parent's ``state``: shared fields, or the mapping."""
        if self.input is None:
            shared = list(state.context)

            def make() -> AgentState:
                values = {f: copy.deepcopy(getattr(state, f)) for f in self.shared}
                child: AgentState = self.graph.state_class(**values)
                child.set_context(list(shared))
                return child

            return Fresh(make, shared=shared)
        mapped = self.input(state)

        def make_mapped() -> AgentState:
            if isinstance(mapped, self.graph.state_class):
                copied: AgentState = mapped.model_copy(deep=True)
                return copied
            if not isinstance(mapped, Mapping):
                raise StateError(
                    f"a subgraph's input mapping must return a dict of "
                    f"{self.graph.state_class.__name__} fields or a state, got {mapped!r}"
                )
            child: AgentState = self.graph.state_class()
            self.graph.schema.apply(child, dict(mapped), "the subgraph's input mapping")
            return child

        return Fresh(make_mapped)

    async def run(self, state: AgentState, ctx: RunContext) -> AsyncIterator[Any]:
        """Run the subgraph; yield its events namespaced, then what it hands back."""
        async for item in self._run(state, ctx, True):
            yield item

    async def run_to_end(self, state: AgentState, ctx: RunContext, save: Any) -> Any:
        """Run the subgraph for a caller that awaits the return value (a parallel step's task).

        Its events, when the parent's stream reads them, go to ``forward``.
        """
        value = None
        async for item in self._run(state, ctx, False):
            if isinstance(item, NodeOutput):
                value = item.value
        return value

    async def _run(self, state: AgentState, ctx: RunContext, live: bool) -> AsyncIterator[Any]:
        scope = ctx.interrupt_scope
        if scope.subgraphs is None:
            raise StateError("a subgraph node runs only inside a graph")
        fresh = self._fresh(state)
        result: RunResult | None = None
        async for event in run_nested(self.graph, fresh, scope, ctx, ctx.config):
            if isinstance(event, RunResult):
                result = event
            elif live:
                yield event
            elif scope.forward is not None:
                scope.forward(event)
        assert result is not None
        yield NodeOutput(self._handed_back(state, result.state))

    def _handed_back(self, parent: AgentState, child: AgentState) -> Any:
        """What the finished subgraph gives its parent: the output mapping, or the shared delta."""
        if self.output is not None:
            return self.output(child)
        known = {m.message_id for m in parent.context}
        update: dict[str, Any] = {}
        added = [m for m in child.context if m.message_id not in known]
        if added:
            update["context"] = added
        for name in self.shared:
            old, new = getattr(parent, name), getattr(child, name)
            if new == old:
                continue
            appended = isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old
            if appended and name in self.reduced:  # hand back only what it added
                new = new[len(old) :]
            update[name] = new
        return update


def state_tree(graph: CompiledGraph[Any], state: AgentState, namespace: str = "") -> StateTree:
    """``state`` with the states of its paused subgraphs, decoded by their graphs' classes.

    A graph a node called itself is found among the graphs its function
    names (``graphs_named_by``) by the state class it saved; when none
    matches, its state is decoded as an ``AgentState``.
    """
    tree = StateTree(state, namespace)
    for segment, saved in state.execution_meta.subgraphs.items():
        if saved["done"]:
            continue
        inner = _graph_of(graph.nodes.get(segment.split(":", 1)[0].split("#", 1)[0]), saved)
        child_ns = f"{namespace}|{segment}" if namespace else segment
        if inner is None:
            child = _restore(AgentState, saved, state.context)
            tree.subgraphs[segment] = StateTree(child, child_ns)
        else:
            child = _restore(inner.state_class, saved, state.context)
            tree.subgraphs[segment] = state_tree(inner, child, child_ns)
    return tree


def _graph_of(node: Node | None, saved: Mapping[str, Any]) -> CompiledGraph[Any] | None:
    """The graph whose paused state ``saved`` is: the subgraph node's, or one its function names."""
    if isinstance(node, SubgraphNode):
        return node.graph
    if isinstance(node, FunctionNode):
        for graph in graphs_named_by(node.function):
            if _class_name(graph.state_class) == saved.get("state_class"):
                return graph
    return None


def graphs_named_by(function: Callable[..., Any], depth: int = 2) -> list[CompiledGraph[Any]]:
    """The compiled graphs ``function`` names: its closure's and the globals its code reads.

    The functions it names are searched too, ``depth`` levels down, so a
    node that calls a helper that runs a graph is covered. A graph reached
    otherwise (an attribute, one built inside the node) is not found.
    """
    found: list[CompiledGraph[Any]] = []
    seen: set[int] = set()

    def visit(target: Any, depth: int) -> None:
        target = inspect.unwrap(target)
        if inspect.ismethod(target):
            target = target.__func__
        if id(target) in seen or not inspect.isfunction(target):
            return
        seen.add(id(target))
        for value in _named_values(target):
            if isinstance(value, RunSteps):  # a CompiledGraph (a RunSteps imports no cycle)
                if all(value is not known for known in found):
                    found.append(cast("CompiledGraph[Any]", value))
            elif depth:
                visit(value, depth - 1)

    visit(function, depth)
    return found


def _named_values(function: Any) -> list[Any]:
    """The values of ``function``'s closure cells (set ones) and of the globals its code reads."""
    values: list[Any] = []
    for cell in function.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a variable not assigned yet
            continue
    names = function.__globals__
    values += [names[name] for name in function.__code__.co_names if name in names]
    return values


async def invoke_nested(
    graph: CompiledGraph[Any],
    scope: InterruptScope,
    input: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    invocation_state: dict[str, Any] | None,
) -> dict[str, Any]:
    """``graph.ainvoke`` called by a node of a running graph: it runs as that node's subgraph.

    Its events go to the parent's stream when that reads them (``forward``).
    """
    fresh = Fresh(graph._fresh_state, input or {})
    result: RunResult | None = None
    async for event in run_nested(graph, fresh, scope, None, config, invocation_state):
        if isinstance(event, RunResult):
            result = event
        elif scope.forward is not None:
            scope.forward(event)
    assert result is not None  # run_nested ends with its result or raises
    return result.as_dict()


def subgraphs_of(
    nodes: Mapping[str, Node], recurse: bool, prefix: str = "", within: tuple[int, ...] = ()
) -> dict[str, Any]:
    """The compiled graphs under ``nodes`` by namespace: subgraph nodes' and those functions name.

    A function node that names one graph (``graphs_named_by``) lists it under
    the node's name, as a subgraph node would be; one that names several lists
    the next ones as ``node#2``, ``node#3`` in the order it names them.
    ``within`` holds the ids of the graphs above: a graph a node names that is
    one of them (its own graph, read for its state, say) is not its subgraph.
    """
    found: dict[str, Any] = {}
    for name, node in nodes.items():
        if isinstance(node, SubgraphNode):
            graphs: list[CompiledGraph[Any]] = [node.graph]
        elif isinstance(node, FunctionNode):
            graphs = [g for g in graphs_named_by(node.function) if id(g) not in within]
        else:
            continue
        namespace = f"{prefix}|{name}" if prefix else name
        for count, graph in enumerate(graphs, 1):
            where = namespace if count == 1 else f"{namespace}#{count}"
            found[where] = graph
            if recurse:
                found.update(subgraphs_of(graph.nodes, True, where, (*within, id(graph))))
    return found
