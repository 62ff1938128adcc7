"""Nodes: what the run loop executes. User functions are wrapped in ``FunctionNode``.

Every node exposes one async generator, ``run(state, ctx)``: it may yield
stream events (a model's delta messages) and ends by yielding a ``NodeOutput``
with its return value. One protocol serves plain functions, Agents and ToolNodes.
"""

from __future__ import annotations

import asyncio
import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tenxgraph.core.graph._events import CustomEvent, MessageEvent, SubgraphEvent
from tenxgraph.core.graph._interrupt import InterruptScope, _scope
from tenxgraph.core.graph._stream_writer import with_writer
from tenxgraph.core.graph._tools import idempotency_key
from tenxgraph.core.graph._workers import WorkerPool
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import IdGenerator, new_message_id
from tenxgraph.errors import UsageError

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import StateGraph
    from tenxgraph.core.graph._stream_writer import CustomSink, StreamWriter
    from tenxgraph.core.state.ids import ThreadKey

__all__ = [
    "FunctionNode",
    "Node",
    "NodeOutput",
    "RunContext",
    "SaveProgress",
    "StoredThreadRef",
    "Written",
]


class StoredThreadRef(Protocol):
    """The stored thread a run holds: its key, and its incarnation as last loaded or saved."""

    key: ThreadKey
    incarnation: str


@dataclass(slots=True)
class RunContext:
    """What a running node may use besides the state. Passed explicitly, never global."""

    node: str
    config: dict[str, Any]
    invocation_state: dict[str, Any]
    interrupt_scope: InterruptScope
    id_generator: IdGenerator = new_message_id
    context_manager: Any = None
    """The graph's context manager (a ``BaseContextManager``), or None."""
    run_sync_inline: bool = False
    """True when the loop is private to a sync ``invoke``: sync code may run on it directly."""
    run_id: str = ""
    """This run's id: the config's ``run_id`` when given, else a new random one."""
    workers: WorkerPool = field(default_factory=WorkerPool)
    """The graph's threads for sync user code, apart from the executor storage I/O uses."""
    stored_thread: StoredThreadRef | None = None
    """The stored thread the run holds (its session); None for a run without one."""
    custom: CustomSink | None = None
    """Where the run's ``get_stream_writer()`` data goes; None when nothing streams the run."""

    def for_task(self, node: str, scope: InterruptScope) -> RunContext:
        """A copy of the context for one task of a parallel step: its node, its answers.

        Sync code runs on the worker threads even under ``invoke``, so the
        step's tasks run concurrently. Built field by field: ``dataclasses.replace``
        cost more than a no-op task.
        """
        return RunContext(
            node,
            self.config,
            self.invocation_state,
            scope,
            self.id_generator,
            self.context_manager,
            False,
            self.run_id,
            self.workers,
            self.stored_thread,
            self.custom,
        )

    def writer(self, node: str) -> StreamWriter | None:
        """The ``get_stream_writer()`` of the code ``node`` runs (None: nothing streams it)."""
        return None if self.custom is None else self.custom.writer(node)

    def tool_call_key(self, message_id: str | int, call_id: str) -> str:
        """The idempotency key of call ``call_id`` of assistant message ``message_id``.

        On a stored thread it names the thread (user, id, incarnation), the
        message and the call: all stored before the call starts, so a retry
        and a re-run after a crash get the same key, and a thread deleted and
        created anew another. Without one (no checkpointer, a direct call) the
        run's id stands in for the thread: nothing re-runs such a call.
        """
        thread = self.stored_thread
        if thread is None:
            return idempotency_key("run", self.run_id, message_id, call_id)
        key = thread.key
        return idempotency_key(
            "thread", key.user_id, key.thread_id, thread.incarnation, message_id, call_id
        )

    async def call(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        is_async: bool | None = None,
        scope: InterruptScope | None = None,
        concurrent: bool = False,
        run_limit: float | None = None,
    ) -> Any:
        """Call sync or async user code the right way, with ``interrupt`` answers in scope.

        Async functions are awaited. Sync ones run on the graph's worker threads, or inline
        when the loop belongs to a sync ``invoke`` and nothing else must run
        meanwhile (``concurrent=False``). ``is_async`` skips the check when the
        caller already knows; ``scope`` replaces the node's interrupt answers.
        ``run_limit`` (seconds of running; a sync call's clock starts on its
        thread) raises ``TimeoutError``; a sync call run inline has none.
        """
        if is_async is None:
            is_async = inspect.iscoroutinefunction(function)
        kwargs = kwargs or {}
        if is_async:
            token = _scope.set(scope or self.interrupt_scope)
            try:
                if run_limit is None:  # no timeout context: a parallel step makes one per task
                    return await function(*args, **kwargs)
                async with asyncio.timeout(run_limit):
                    return await function(*args, **kwargs)
            finally:
                _scope.reset(token)
        if self.run_sync_inline and not concurrent:
            result = self.call_here(function, args, kwargs, scope)
        else:
            run = self.workers.run
            result = await run(self.call_here, function, args, kwargs, scope, run_limit=run_limit)
        if not inspect.isawaitable(result):
            return result
        async with asyncio.timeout(run_limit):
            return await result

    def call_here(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        scope: InterruptScope | None = None,
    ) -> Any:
        """Call sync ``function`` on this thread, with ``interrupt`` answers in scope."""
        token = _scope.set(scope or self.interrupt_scope)
        try:
            return function(*args, **kwargs)
        finally:
            _scope.reset(token)


@dataclass(frozen=True, slots=True)
class NodeOutput:
    """The last item a node yields: its return value."""

    value: Any


@dataclass(frozen=True, slots=True)
class SaveProgress:
    """Yielded by a node mid-step: save the state as it is now (e.g. a tool ledger entry)."""


@dataclass(frozen=True, slots=True)
class Written:
    """Yielded by a node mid-step: stream what its code wrote or forwarded (``RunContext.custom``).

    The run loop takes the sink's items itself, in order; a node that took
    them and yielded them one by one could be overtaken by newer ones.
    """


class Node(ABC):
    """A graph node: an async generator of stream events ending with a ``NodeOutput``."""

    streams: bool = True
    """False when ``run`` yields nothing but its ``NodeOutput``: the run loop then awaits
    ``run_to_end`` instead of iterating ``run``, even for a stream consumer."""
    inline: bool = False
    """True when ``run_here`` does the node's work without awaiting, on a loop private to a
    sync ``invoke`` (``RunContext.run_sync_inline``): the run loop then calls it directly."""

    @abstractmethod
    def run(
        self, state: AgentState, ctx: RunContext
    ) -> AsyncIterator[
        MessageEvent | CustomEvent | SubgraphEvent | SaveProgress | Written | NodeOutput
    ]:
        """Run once over ``state``."""

    async def run_to_end(
        self, state: AgentState, ctx: RunContext, save: Callable[[], Awaitable[None]]
    ) -> Any:
        """Run once for a caller that keeps only the return value (``invoke``); return it.

        Stream events are dropped; ``save`` is awaited where ``run`` yields
        ``SaveProgress``. Nodes that can return without an async generator
        override this (``FunctionNode``), since one per step is a large part
        of a short step's cost.
        """
        value = None
        async for item in self.run(state, ctx):
            if isinstance(item, NodeOutput):
                value = item.value
            elif isinstance(item, SaveProgress):
                await save()
        return value

    def run_here(self, state: AgentState, ctx: RunContext) -> Any:
        """``run_to_end`` without a coroutine, for a node that is ``inline``; return the value."""
        raise UsageError(f"{type(self).__name__} is not an inline node: await run_to_end")

    def bind(self, graph: StateGraph[Any], name: str) -> Node:
        """The node as ``graph`` runs it under ``name``; called by ``compile``.

        Check the setup here. A node that adapts to its graph returns a new
        object and leaves ``self`` as it was, so one node can serve several
        graphs, each with its own setup.
        """
        return self


class FunctionNode(Node):
    """A plain function ``fn(state)``, ``fn(state, config)``, ``fn(state, writer)``, sync or async.

    A function with a ``writer`` parameter gets the node's ``get_stream_writer()``
    there, and what it writes is streamed while it runs (``streams``).
    """

    streams = False

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name = name
        parameters = inspect.signature(function).parameters
        self.wants_config = "config" in parameters
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - async callable objects
        )
        self.inline = not self.is_async
        self.streams = "writer" in parameters
        self.function = with_writer(function, self.is_async) if self.streams else function

    async def run(self, state: AgentState, ctx: RunContext) -> AsyncIterator[Written | NodeOutput]:
        """Call the function and yield what it returned; what it writes, as it writes it."""
        sink = ctx.custom
        if not self.streams or sink is None:
            yield NodeOutput(await self.run_to_end(state, ctx, _no_save))
            return
        task = asyncio.ensure_future(self.run_to_end(state, ctx, _no_save))
        try:
            while not task.done():
                await sink.written_or_done((task,))
                yield Written()
            yield NodeOutput(task.result())
        finally:
            task.cancel()  # a stop cancelled the wait: the node's own await goes too

    async def run_to_end(
        self, state: AgentState, ctx: RunContext, save: Callable[[], Awaitable[None]]
    ) -> Any:
        """Call the function and return what it returned (it never asks for a save)."""
        if self.is_async:  # ``ctx.call`` written out: one coroutine less per step
            token = _scope.set(ctx.interrupt_scope)
            try:
                if self.wants_config:
                    return await self.function(state, config=ctx.config)
                return await self.function(state)
            finally:
                _scope.reset(token)
        if not ctx.run_sync_inline:
            kwargs = {"config": ctx.config} if self.wants_config else {}
            return await ctx.call(self.function, (state,), kwargs, is_async=False)
        return self.run_here(state, ctx)

    def run_here(self, state: AgentState, ctx: RunContext) -> Any:
        """Call the sync function on this thread and return what it returned.

        ``ctx.call_here`` written out: this is every step of a sync graph's ``invoke``.
        """
        token = _scope.set(ctx.interrupt_scope)
        try:
            if self.wants_config:
                return self.function(state, config=ctx.config)
            return self.function(state)
        finally:
            _scope.reset(token)


async def _no_save() -> None:
    """The ``save`` of a ``run`` that never yields ``SaveProgress``."""
