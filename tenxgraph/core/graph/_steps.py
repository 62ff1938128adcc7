"""One step of the run loop: run a node, merge what it returned, save, and say what comes next.

``CompiledGraph`` inherits these. A step is plain awaits (``_step``), not an
async generator, unless a stream consumer reads a node that streams
(``_streamed_step``): for a short node, one generator per step used to cost
more than the node. Every step ends in an ``Outcome``; the run loop goes on
only after ``Next``, and ``CompiledGraph._conclude`` ends the run on any other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from tenxgraph.core.graph._command import PARALLEL, Command, Send
from tenxgraph.core.graph._events import MessageEvent, StreamEvent, SubgraphEvent, UpdateEvent
from tenxgraph.core.graph._history import StateSnapshot
from tenxgraph.core.graph._hooks import HookCaller
from tenxgraph.core.graph._interrupt import GraphInterrupt, InterruptScope
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext, SaveProgress, Written
from tenxgraph.core.graph._run_control import Fail, Finish, Next, Outcome, Pause, RunControl
from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.graph._stream_writer import written_before
from tenxgraph.core.graph._updates import Applied, StateSchema
from tenxgraph.core.state.agent_state import AgentState, ExecMeta
from tenxgraph.core.state.message import Message
from tenxgraph.errors import (
    NodeError,
    RecursionLimitError,
    StateError,
    TenxGraphError,
    UnstorableStateError,
)
from tenxgraph.runs import ThreadLease
from tenxgraph.utils.constants import END

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import Branch, Join
    from tenxgraph.core.graph._tracing import RunTrace

__all__ = ["COMPLETED", "Run", "RunSteps", "forward_to", "returned_error"]

S = TypeVar("S", bound=AgentState)

COMPLETED = Finish("completed")
"""The outcome of a step that reached END."""


@dataclass(slots=True)
class Run(Generic[S]):
    """Everything one run carries between steps."""

    state: S
    ctx: RunContext
    session: ThreadSession | None
    control: RunControl
    next_node: str
    skip_interrupt_before: bool = False
    lease: ThreadLease | None = None
    new_input: bool = False
    """The run brought messages or state: saved before its first node."""
    limit: int = 0
    """The recursion limit: the most node executions in this run."""
    produced: list[Message] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    namespace: str = ""
    """The graph's namespace when it runs as a subgraph (``outer|inner``); "" at the top."""
    forward: bool = False
    """Yield subgraphs' events (``stream(subgraphs=True)``, and every subgraph's run)."""
    trace: RunTrace | None = None
    """The run's spans, when a tracer provider is set (``_tracing``)."""


class RunSteps(Generic[S]):
    """The step half of ``CompiledGraph``'s run loop."""

    nodes: dict[str, Node]
    edges: dict[str, str]
    branches: dict[str, Branch]
    schema: StateSchema
    hooks: HookCaller
    interrupt_before: frozenset[str]
    interrupt_after: frozenset[str]
    context_manager: Any
    _goto: dict[str, Next]
    """One ``Next`` per node and END, shared by every step that goes there."""
    _routed: frozenset[str]
    """The nodes with a conditional edge. Their router may await (an ``async def``, or a
    sync function returning an awaitable), so a stop must be able to cancel it: the step
    is armed even when the node itself is sync."""
    _where: dict[str, str]
    """Each node's name as merge errors quote it (``node 'a'``), made once."""
    _single: dict[str, str]
    """The nodes whose one way out is one plain edge, and its target: the fast path."""
    _ways_out: dict[str, tuple[str, ...]]
    """Each node's plain edges' targets (joins apart)."""
    _joins_of: dict[str, tuple[Join, ...]]
    """The joins each node is a source of."""
    _parallel_step: Callable[[Run[S], bool], Awaitable[tuple[list[StreamEvent], Outcome]]]
    """Runs the step of several tasks in ``ExecMeta.tasks`` (``ParallelSteps``)."""
    _streamed_parallel_step: Callable[[Run[S]], AsyncIterator[StreamEvent | Outcome]]
    """``_parallel_step`` for a stream consumer: its tasks' events as they come, then its own."""

    async def _step(
        self, run: Run[S], name: str, node: Node | None, progress: bool
    ) -> tuple[list[StreamEvent], Outcome]:
        """Run one node as a plain await and settle it; its events (if wanted) come after.

        For ``invoke``, and for nodes that never stream (``Node.streams``).
        """
        if node is None and name == PARALLEL:
            return await self._parallel_step(run, progress)
        stop = self._enter(run, name)
        if stop is not None or node is None:
            return [], stop or COMPLETED
        control = run.control
        try:
            if self.hooks.hooks:
                await self.hooks.node_started(control, name, run.state.execution_meta.step)
            inline = node.inline and run.ctx.run_sync_inline  # a sync node: no coroutine
            if not inline or name in self._routed:
                control.arm()  # a stop may cancel what awaits: the node, or its router
            elif control.stop_requested:  # nothing to cancel, but a stop during the hooks holds
                return [], control.outcome()
            if inline:
                output = node.run_here(run.state, run.ctx)
            else:
                save = lambda: self._save_step(run, name)  # noqa: E731
                output = await node.run_to_end(run.state, run.ctx, save)
        except (Exception, asyncio.CancelledError) as exc:
            return [], await self._broke(run, name, exc)
        return await self._settle(run, name, output, progress)

    def _streamed_step(
        self, run: Run[S], name: str, node: Node | None
    ) -> AsyncIterator[StreamEvent | Outcome]:
        """``_step`` for a stream consumer of a node that streams: events, then the outcome.

        ``node`` is None for a parallel step (``ParallelSteps``): its tasks stream too.
        """
        if node is None:
            return self._streamed_parallel_step(run)
        return self._streamed_node_step(run, name, node)

    async def _streamed_node_step(
        self, run: Run[S], name: str, node: Node
    ) -> AsyncIterator[StreamEvent | Outcome]:
        """``_streamed_step`` of one node."""
        stop = self._enter(run, name)
        if stop is not None:
            yield stop
            return
        output: Any = None
        try:
            if self.hooks.hooks:
                await self.hooks.node_started(run.control, name, run.state.execution_meta.step)
            run.control.arm()
            async for item in node.run(run.state, run.ctx):
                if isinstance(item, NodeOutput):
                    output = item.value
                elif isinstance(item, SaveProgress):
                    await self._save_step(run, name)
                else:
                    for event in _streamed(run, item):
                        yield event
        except (Exception, asyncio.CancelledError) as exc:
            yield await self._broke(run, name, exc)
            return
        events, outcome = await self._settle(run, name, output, True)
        for event in written_before(run.ctx.custom, events):
            yield event
        yield outcome

    def _enter(self, run: Run[S], name: str) -> Outcome | None:
        """Begin node ``name``, or say why it must not run: END, a stop, an interrupt, the limit."""
        if name == END:
            return COMPLETED
        control = run.control
        if control.stop_requested:
            return control.outcome()
        if name in self.interrupt_before and not run.skip_interrupt_before:
            return Pause(name, name, None, "before")
        run.skip_interrupt_before = False
        meta = run.state.execution_meta
        if meta.step >= run.limit:
            return Fail(name, RecursionLimitError(run.limit, [*run.path, name]))
        run.path.append(name)
        meta.enter_node(name)
        run.ctx.node = name
        sink = run.ctx.custom  # forward_to written out: this is every step
        run.ctx.interrupt_scope = InterruptScope(
            meta.resume_values,
            control.thread,
            meta.subgraphs,
            f"{run.namespace}|{name}" if run.namespace else name,
            None if sink is None else sink.writer(name),  # writer
            sink.put if run.forward and sink is not None else None,  # forward
        )
        return None

    async def _save_step(self, run: Run[S], name: str) -> None:
        """Save mid-step, as the node asks (``SaveProgress``); a stop never cancels it halfway."""
        run.control.disarm()
        await self._save(run, [], name)
        run.control.arm()

    async def _settle(
        self, run: Run[S], name: str, output: Any, progress: bool
    ) -> tuple[list[StreamEvent], Outcome]:
        """Merge the node's output, decide the next node, save the step."""
        try:
            goto = None
            if isinstance(output, Command):
                goto, output = output.goto, output.update
            meta = run.state.execution_meta
            if meta.resume_values:
                meta.resume_values = []
            if meta.subgraphs:  # the node's subgraphs finished with it
                meta.subgraphs.clear()
            try:
                applied = self.schema.apply(run.state, output, self._where[name])
            except StateError as exc:  # a bad return is the node's error
                raise returned_error(name, self._where[name], exc) from None
            next_node = self._single.get(name) if goto is None else None
            if next_node is None:
                next_node = await self._plan(run, ((name, goto),))
        except (Exception, asyncio.CancelledError) as exc:
            return [], await self._broke(run, name, exc)
        run.control.disarm()
        if self.hooks.hooks:
            await self.hooks.node_ended(run.control, name, run.state.execution_meta.step, None)
        run.produced.extend(applied.messages)
        if run.session is not None:
            failed = await self._commit(run, name, applied, next_node, progress)
            if failed is not None:
                return [], failed
        events: list[StreamEvent] = []
        if progress:
            events = [MessageEvent(name, message) for message in applied.messages]
            step = run.state.execution_meta.step
            events.append(UpdateEvent(name, step, tuple(applied.messages), applied.values))
        if name in self.interrupt_after:
            return events, Pause(name, next_node, None, "after")
        return events, self._goto[next_node]

    async def _commit(
        self, run: Run[S], name: str, applied: Applied, next_node: str, progress: bool
    ) -> Fail | None:
        """Save a finished step, or queue it for the end's save when that comes next."""
        session = run.session
        assert session is not None  # only runs with a thread save
        run.state.execution_meta.set_next_node(next_node)
        if next_node == END and self._ends_next(name, progress):
            session.record(applied.messages)  # saved with the end, just after
            return None
        try:
            await self._save(run, applied.messages, name)
        except UnstorableStateError as exc:  # the step is kept, less the fields it names
            return Fail(name, exc, resume_at=next_node)
        return None

    def _ends_next(self, node: str, progress: bool) -> bool:
        """True when the end's save follows this END-bound step's at once, so one save does both.

        Not with a stream consumer (it sees the step's events first), a pause
        after the node, or a context manager (it may call a model) before the end.
        """
        return node not in self.interrupt_after and not progress and self.context_manager is None

    async def _broke(self, run: Run[S], name: str, exc: BaseException) -> Outcome:
        """How a step that raised ends: paused (``interrupt``), stopped, or failed.

        A cancellation that is not this run's stop request is not ours: it is raised on.
        """
        control = run.control
        control.disarm()
        if isinstance(exc, asyncio.CancelledError):
            if not control.stop_requested:
                raise exc
            task = asyncio.current_task()
            if task is not None:  # None only outside a task, where nothing was cancelled
                task.uncancel()
            return control.outcome()
        if self.hooks.hooks:
            await self.hooks.node_ended(control, name, run.state.execution_meta.step, exc)
        if isinstance(exc, GraphInterrupt):
            return Pause(name, name, exc.value, exc.kind)
        return Fail(name, exc)

    async def _plan(self, run: Run[S], finished: Iterable[tuple[str, Any]]) -> str:
        """Where the run goes after the tasks ``finished`` (node, its ``Command`` goto or None).

        Every target of every task counts: its goto, else its router's pick
        (one value, a ``Send`` or a list), else its plain edges, else END. A
        node reached by several runs once; ``Send`` items each run. One plain
        target is returned as it is; several (or any ``Send``) are put in
        ``ExecMeta.tasks``, in merge order, and ``PARALLEL`` is returned.
        """
        meta = run.state.execution_meta
        targets: dict[str, None] = {}
        sends: list[Send] = []
        for name, goto in finished:
            found: Iterable[Any]
            if goto is not None:
                found = goto if isinstance(goto, list | tuple) else (goto,)
            elif name in self.branches:
                found = await self._route(name, run)
            else:
                found = self._ways_out.get(name) or (() if name in self._joins_of else (END,))
            for item in found:
                if isinstance(item, Send):
                    if item.node not in self.nodes:
                        raise NodeError(name, f"Send({item.node!r}, ...) names no node")
                    if run.session is not None:
                        _check_saved_arg(name, item)
                    sends.append(item)
                elif item != END:
                    if item not in self.nodes:
                        raise NodeError(name, f"Command(goto={item!r}) names no node")
                    targets[item] = None
            if name in self._joins_of:
                self._join(meta, name, targets)
        if not sends and len(targets) <= 1:
            return next(iter(targets), END)
        edge_tasks: list[dict[str, Any]] = [{"node": node} for node in sorted(targets)]
        meta.tasks = edge_tasks + [{"node": s.node, "arg": s.arg} for s in sends]
        return PARALLEL

    def _join(self, meta: ExecMeta, name: str, targets: dict[str, None]) -> None:
        """Count ``name`` finished for each join it is a source of; add the joins it completes."""
        for join in self._joins_of[name]:
            seen = meta.joins.setdefault(join.key, [])
            if name not in seen:
                seen.append(name)
            if len(seen) == len(join.sources):
                del meta.joins[join.key]
                if join.target != END:
                    targets[join.target] = None

    async def _route(self, node: str, run: Run[S]) -> list[str | Send]:
        """Where ``node``'s router leads: node names (END among them) and ``Send`` items."""
        branch = self.branches[node]
        try:
            value = await run.ctx.call(branch.router, (run.state,))
        except (GraphInterrupt, TenxGraphError):
            raise
        except Exception as exc:
            detail = f"router {branch.name!r} raised {type(exc).__name__}: {exc}"
            raise NodeError(node, detail) from exc
        return branch.destinations(node, value, self.nodes)

    async def _save(
        self, run: Run[S], added: list[Message], node: str, *, last: bool = False
    ) -> None:
        """Save a step; the run's ``last`` save also gives the thread's lease up with it."""
        session = run.session
        if session is None:
            return
        if added:  # the start's and the end's saves add none
            session.record(added)
        lease = run.lease if last else None
        release = lease is not None and not lease.kept  # a kept lease is its caller's to release
        if lease is not None:
            await lease.stop_heartbeat()
        watch, step = run.control.on_save, run.state.execution_meta.step
        parent = (session.base or None) if watch is not None else None  # as _codec.parent_of
        taking = run.lease if run.lease is not None and run.lease.pending is not None else None
        take = None if taking is None else taking.seconds  # a deferred lease: this save takes it
        saving = session.save(run.state, node, step, release=release, take=take)
        if run.trace is None:
            await saving
        else:
            await run.trace.save(node, saving, lambda: session.stamp)
        if taking is not None:
            taking.pending = None
        if lease is not None and release:
            lease.released = True
        if watch is not None:
            watch(StateSnapshot(session.version, node, step, time.time(), run.state, parent))
        if self.hooks.hooks:
            await self.hooks.saved(run.control, node, session.stamp)


def forward_to(run: Run[Any]) -> Callable[[Any], None] | None:
    """Where the graphs a node of ``run`` runs send their events (None: nothing reads them)."""
    sink = run.ctx.custom
    return sink.put if run.forward and sink is not None else None


def returned_error(name: str, where: str, exc: StateError) -> NodeError:
    """The node's error for a return value the state refused (its message names the node once)."""
    return NodeError(name, str(exc).removeprefix(f"{where}: "))


def _check_saved_arg(source: str, send: Send) -> None:
    """A ``Send`` arg is saved with its step: refuse one that is not JSON data, naming it."""
    try:
        to_json(send.arg)
    except PydanticSerializationError as exc:
        raise NodeError(
            source,
            f"Send({send.node!r}, ...): its arg must be JSON data, as it is saved with the "
            f"step on a graph with a checkpointer ({exc})",
        ) from None


def _streamed(run: Run[Any], item: Any) -> list[StreamEvent]:
    """What the stream gets for an event a node yielded, or for ``Written``.

    What the node's code wrote or forwarded comes first, then the event; a
    subgraph's event only for ``stream(subgraphs=True)`` (and in a subgraph).
    """
    if type(item) is SubgraphEvent and not run.forward:
        return []
    events = written_before(run.ctx.custom, [])
    if type(item) is not Written:
        events.append(item)
    return events
