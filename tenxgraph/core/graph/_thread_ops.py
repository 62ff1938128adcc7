"""Thread operations outside a run: read, edit, branch, snapshot, and direct tool calls.

``CompiledGraph`` inherits these; they act on a thread through the graph's
checkpointer and state class, never through a second copy of the run loop
(a direct tool call is a one-node run).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from tenxgraph._sync import run_sync
from tenxgraph.core.graph import _history as history
from tenxgraph.core.graph import _snapshots as snapshots
from tenxgraph.core.graph._drawing import GraphDescription, describe_graph
from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.graph._subgraph import StateTree, state_tree, subgraphs_of
from tenxgraph.core.graph._toolsets import ToolIndex, Toolset
from tenxgraph.core.graph._warm import WarmThreads
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import (
    DEFAULT_USER,
    ThreadKey,
    checkpoint_of,
    run_config,
    thread_metadata_of,
)
from tenxgraph.core.state.message import IdGenerator, Message
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.errors import StateError
from tenxgraph.runs import LeasePolicy, ThreadLease, discard_unfinished, take_thread
from tenxgraph.storage.checkpointer.base import (
    Checkpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
)

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import StateGraph
    from tenxgraph.core.graph._node import Node
    from tenxgraph.core.graph._subgraph import Nested
    from tenxgraph.core.graph._tools import Tool
    from tenxgraph.core.graph._updates import StateSchema
    from tenxgraph.core.graph._workers import WorkerPool

__all__ = ["ThreadOperations"]

S = TypeVar("S", bound=AgentState)


class ThreadOperations(Generic[S]):
    """What you can do with a saved thread besides running it."""

    state_class: type[S]
    id_generator: IdGenerator
    _shape: StateGraph[S]
    schema: StateSchema
    checkpointer: Checkpointer | None
    nodes: dict[str, Node]
    leases: LeasePolicy
    warm: WarmThreads
    workers: WorkerPool
    context_manager: Any
    """The graph's ``BaseContextManager``, or None."""

    interrupt_before: frozenset[str]
    interrupt_after: frozenset[str]

    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> dict[str, Any]:
        """The graph's subgraphs' compiled graphs, by namespace (``research``).

        Subgraph nodes, and the graphs a function node names (its closure and
        the globals its code reads: see ``graphs_named_by``), under the node's
        name. ``recurse`` adds theirs (``research|search``); ``namespace`` keeps
        the one named and, with ``recurse``, those under it.
        """
        if namespace is None:
            return subgraphs_of(self.nodes, recurse, within=(id(self),))
        under = namespace + "|"
        return {
            ns: graph
            for ns, graph in subgraphs_of(self.nodes, True, within=(id(self),)).items()
            if ns == namespace or (recurse and ns.startswith(under))
        }

    def get_graph(self, *, collapse_middleware: bool = False) -> GraphDescription:
        """The graph's shape to draw (``draw_mermaid``, ``draw_ascii``...), pauses marked."""
        return describe_graph(
            self._shape,
            interrupt_before=self.interrupt_before,
            interrupt_after=self.interrupt_after,
            collapse_middleware=collapse_middleware,
        )

    async def _load(self, lease: ThreadLease, config: Mapping[str, Any]) -> tuple[ThreadSession, S]:
        """The thread's session and state: kept warm, loaded, or new.

        A first save branches at the config's ``checkpoint_id``, merges its ``thread_metadata``.
        """
        assert self.checkpointer is not None  # a lease is taken only then
        at, tags = checkpoint_of(config), thread_metadata_of(config)
        if at is not None and (lease.stamp is None or at != lease.stamp.version):
            session = ThreadSession(self.checkpointer, lease.key)
            state = await session.load(self.state_class, at)
            assert state is not None  # a missing thread or checkpoint raised
        else:
            session, state = await self.warm.open(
                self.checkpointer, lease.key, self.state_class, lease.stamp
            )
        session.lease = lease.owner
        if tags:
            session.merge_metadata(tags)
        return session, self._fresh_state() if state is None else state

    async def _open(
        self, lease: ThreadLease | None, config: Mapping[str, Any], nested: Nested | None
    ) -> tuple[ThreadSession | None, S]:
        """A run's session (None without a stored thread) and the state it starts from.

        A subgraph's run starts from the state its parent's node gave it.
        """
        if nested is not None:
            return None, nested.state  # type: ignore[return-value]
        if lease is None:
            return None, self._fresh_state()
        return await self._load(lease, config)

    def _fresh_state(self) -> S:
        """The state a new thread starts from: a copy of the graph's seed, or the defaults."""
        initial = self._shape.initial_state
        state = initial.model_copy(deep=True) if initial is not None else self.state_class()
        state.message_index()
        return state

    @overload
    async def aget_state(
        self,
        config: Mapping[str, Any],
        *,
        version: int | None = None,
        subgraphs: Literal[False] = False,
    ) -> S | None: ...

    @overload
    async def aget_state(
        self, config: Mapping[str, Any], *, version: int | None = None, subgraphs: Literal[True]
    ) -> StateTree | None: ...

    async def aget_state(
        self, config: Mapping[str, Any], *, version: int | None = None, subgraphs: bool = False
    ) -> S | StateTree | None:
        """The thread's saved state (or its state at checkpoint ``version``); None if new.

        A ``checkpoint_id`` in ``config`` names the version too (LangGraph's way).
        ``subgraphs=True`` returns a ``StateTree``: the state with the states of
        the subgraphs paused inside it, by namespace.
        """
        state = await self._state(config, version)
        if not subgraphs or state is None:
            return state
        return state_tree(self, state)  # type: ignore[arg-type]

    def state_tree(self, state: AgentState) -> StateTree:
        """``state`` with the states of the subgraphs paused inside it.

        What ``get_state(subgraphs=True)`` returns, for a state read otherwise
        (a history entry).
        """
        return state_tree(self, state)  # type: ignore[arg-type]

    async def _state(self, config: Mapping[str, Any], version: int | None) -> S | None:
        checkpointer = self._require_checkpointer()
        key = history.thread_key(config)
        if version is None:
            version = checkpoint_of(run_config(config))
        if version is not None:
            return await history.state_at(checkpointer, key, self.state_class, version)
        stamp = await checkpointer.aversion(key)
        session, state = await self.warm.open(checkpointer, key, self.state_class, stamp)
        if state is not None:
            self.warm.keep(session)  # the next run (or read) of the thread needs no reload
        return state

    @overload
    def get_state(
        self,
        config: Mapping[str, Any],
        *,
        version: int | None = None,
        subgraphs: Literal[False] = False,
    ) -> S | None: ...

    @overload
    def get_state(
        self, config: Mapping[str, Any], *, version: int | None = None, subgraphs: Literal[True]
    ) -> StateTree | None: ...

    def get_state(
        self, config: Mapping[str, Any], *, version: int | None = None, subgraphs: bool = False
    ) -> S | StateTree | None:
        """Sync ``aget_state``."""
        if subgraphs:
            return run_sync(self.aget_state(config, version=version, subgraphs=True))
        return run_sync(self.aget_state(config, version=version))

    async def aget_state_history(
        self,
        config: Mapping[str, Any],
        *,
        limit: int | None = None,
        before: int | None = None,
        where: Callable[[history.CheckpointInfo], bool] | None = None,
    ) -> list[history.StateSnapshot[S]]:
        """The thread's checkpoints, newest first, each with the state it recorded.

        ``before`` keeps the checkpoints older than that version; ``where``
        those whose ``CheckpointInfo`` (version, node, step, status) it
        accepts. They choose before any state is rebuilt, so a filtered page
        of a long history costs the page. An unknown thread has none.
        """
        return await history.state_history(
            self._require_checkpointer(),
            history.thread_key(config),
            self.state_class,
            limit,
            before,
            where,
        )

    def get_state_history(
        self,
        config: Mapping[str, Any],
        *,
        limit: int | None = None,
        before: int | None = None,
        where: Callable[[history.CheckpointInfo], bool] | None = None,
    ) -> list[history.StateSnapshot[S]]:
        """Sync ``aget_state_history``."""
        return run_sync(self.aget_state_history(config, limit=limit, before=before, where=where))

    async def athread_info(self, config: Mapping[str, Any]) -> ThreadInfo | None:
        """The thread's listing line (log length, metadata, created and updated times), or None.

        One row read, no state rebuilt: what an API shows for a thread beside
        its state, and the cheap way to ask whether a thread exists.
        """
        return await self._require_checkpointer().athread_info(history.thread_key(config))

    def thread_info(self, config: Mapping[str, Any]) -> ThreadInfo | None:
        """Sync ``athread_info``."""
        return run_sync(self.athread_info(config))

    async def alist_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """The tenant's threads, most recently updated first, as listing lines.

        ``metadata`` keeps the threads whose metadata contains it (every key
        with an equal value, nested objects alike); ``offset`` and ``limit``
        page the result. A tenant sees only its own threads.
        """
        return await self._require_checkpointer().alist_threads(
            user_id, metadata=metadata, offset=offset, limit=limit
        )

    def list_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """Sync ``alist_threads``."""
        return run_sync(self.alist_threads(user_id, metadata=metadata, offset=offset, limit=limit))

    async def alist_messages(
        self, config: Mapping[str, Any], *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """A page of the thread's whole log, oldest first, each message with its ``seq``.

        The log keeps every message the thread ever had, those the context
        window has left (trimmed or summarised) too; the state holds only the
        window. An unknown thread has none.
        """
        return await self._require_checkpointer().alist_messages(
            history.thread_key(config), offset=offset, limit=limit
        )

    def list_messages(
        self, config: Mapping[str, Any], *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """Sync ``alist_messages``."""
        return run_sync(self.alist_messages(config, offset=offset, limit=limit))

    async def aload_thread(self, config: Mapping[str, Any]) -> StoredThread | None:
        """The thread as stored: its values as JSON, its window's log ranges and messages.

        Nothing is decoded into the state class, so it shows what the
        checkpointer keeps (how the window maps onto the log, the summary)
        even for fields the graph no longer declares. ``aget_state`` is the
        state to work with; None for an unknown thread.
        """
        return await self._require_checkpointer().aload(history.thread_key(config))

    def load_thread(self, config: Mapping[str, Any]) -> StoredThread | None:
        """Sync ``aload_thread``."""
        return run_sync(self.aload_thread(config))

    async def aupdate_state(
        self, config: Mapping[str, Any], values: Any, *, as_node: str | None = None
    ) -> int:
        """Merge ``values`` (anything a node may return) into the thread as a new checkpoint.

        Returns the new version. The run status is kept, so a paused thread can be
        corrected and then resumed. With a ``checkpoint_id`` in ``config`` the values
        are merged into that older checkpoint's state instead, and the thread
        branches there (its new checkpoint's parent is that one).
        """
        at = checkpoint_of(run_config(config))
        async with self._holding(config) as lease:
            return await history.update_state(
                lease.checkpointer, lease.key, self.schema, values, as_node, lease.owner, at
            )

    def update_state(
        self, config: Mapping[str, Any], values: Any, *, as_node: str | None = None
    ) -> int:
        """Sync ``aupdate_state``."""
        return run_sync(self.aupdate_state(config, values, as_node=as_node))

    async def afork(
        self, config: Mapping[str, Any], new_thread_id: str, *, version: int | None = None
    ) -> dict[str, Any]:
        """Copy the thread (as it is, or as it was at ``version``) into a new thread.

        Returns the new thread's config; invoke it to continue from there while the
        original thread stays as it was.
        """
        source = history.thread_key(config)
        target = ThreadKey(new_thread_id, source.user_id)
        await history.fork_thread(
            self._require_checkpointer(), source, version, target, self.state_class
        )
        return {**run_config(config), "thread_id": new_thread_id}

    def fork(
        self, config: Mapping[str, Any], new_thread_id: str, *, version: int | None = None
    ) -> dict[str, Any]:
        """Sync ``afork``."""
        return run_sync(self.afork(config, new_thread_id, version=version))

    async def asnapshot(self, config: Mapping[str, Any]) -> snapshots.ThreadSnapshot:
        """A point-in-time copy of the thread's state and context window (JSON data)."""
        return await snapshots.take_snapshot(
            self._require_checkpointer(), history.thread_key(config)
        )

    def snapshot(self, config: Mapping[str, Any]) -> snapshots.ThreadSnapshot:
        """Sync ``asnapshot``."""
        return run_sync(self.asnapshot(config))

    async def arestore(self, config: Mapping[str, Any], snapshot: snapshots.ThreadSnapshot) -> int:
        """Make ``snapshot`` the thread's current state, as a new checkpoint; return the version."""
        async with self._holding(config) as lease:
            return await snapshots.restore_snapshot(
                lease.checkpointer, lease.key, snapshot, self.state_class
            )

    def restore(self, config: Mapping[str, Any], snapshot: snapshots.ThreadSnapshot) -> int:
        """Sync ``arestore``."""
        return run_sync(self.arestore(config, snapshot))

    async def acreate_thread(
        self,
        config: Mapping[str, Any],
        messages: Sequence[Message],
        state: Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Start a thread from an existing conversation (and custom field values).

        The messages must be well paired (every tool call answered, no result
        without its call), except the last assistant message's calls: a thread
        that ends in calls runs them first when it is continued with
        ``invoke(None, config)``, and answers them as interrupted when new
        messages come instead. The thread must not exist yet. ``metadata`` is
        the thread's (what ``alist_threads`` filters on). Returns its version.
        """
        initial = self._fresh_state()
        if state:
            self.schema.apply_input(initial, state)
        async with self._holding(config) as lease:
            session = await snapshots.create_thread(
                lease, messages, initial, metadata=None if metadata is None else dict(metadata)
            )
        self.warm.keep(session)  # created to be run: its first run needs no load
        return session.version

    def create_thread(
        self,
        config: Mapping[str, Any],
        messages: Sequence[Message],
        state: Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Sync ``acreate_thread``."""
        return run_sync(self.acreate_thread(config, messages, state, metadata=metadata))

    async def aensure_thread(
        self, config: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None
    ) -> bool:
        """Save the thread with the graph's fresh state (no messages) unless it exists.

        True when this call created it (checkpoint 1, node ``create_thread``,
        with ``metadata``); False when it existed, left as it was. The thread
        is held while checked and saved, so of two calls at once one creates
        it: an API can create a thread before anything runs on it this way.
        """
        async with self._holding(config) as lease:
            if lease.stamp is not None:  # read with the lease: it exists
                return False
            session = await snapshots.create_thread(
                lease,
                (),
                self._fresh_state(),
                metadata=dict(metadata or {}),
                node=snapshots.CREATE_NODE,
            )
        self.warm.keep(session)  # created to be run: its first run needs no load
        return True

    def ensure_thread(
        self, config: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None
    ) -> bool:
        """Sync ``aensure_thread``."""
        return run_sync(self.aensure_thread(config, metadata=metadata))

    async def aupdate_metadata(self, config: Mapping[str, Any], changes: Mapping[str, Any]) -> int:
        """Merge ``changes`` into the thread's metadata; return the new checkpoint's version.

        The state is saved again unchanged with the new metadata, as a
        checkpoint of node ``update_metadata``, so the history shows when
        metadata changed; a key set to None stays, as None. It holds the
        thread's lease like a run, so it never slips between a run's saves.
        An unknown thread raises ``ThreadNotFoundError``.
        """
        async with self._holding(config) as lease:
            return await history.update_metadata(
                lease.checkpointer, lease.key, changes, lease.owner
            )

    def update_metadata(self, config: Mapping[str, Any], changes: Mapping[str, Any]) -> int:
        """Sync ``aupdate_metadata``."""
        return run_sync(self.aupdate_metadata(config, changes))

    async def arollback(self, config: Mapping[str, Any]) -> bool:
        """Discard the thread's latest turn if it did not complete; True if one was discarded.

        A turn that failed, was stopped, died with its process or is paused
        at an interrupt is removed whole: the thread returns to its state
        before the turn, and the turn's messages leave the log (this is the
        one operation that removes logged messages). A completed turn stays.
        Use it to drop a failed turn before sending the input again.
        """
        async with self._holding(config) as lease:
            return await discard_unfinished(lease.checkpointer, lease.key, lease.owner)

    def rollback(self, config: Mapping[str, Any]) -> bool:
        """Sync ``arollback``."""
        return run_sync(self.arollback(config))

    async def adelete_thread(self, config: Mapping[str, Any]) -> bool:
        """Delete the thread, its whole log and its checkpoints; False if it did not exist.

        It holds the thread's lease while it deletes, as a run does, so it
        never deletes under a running run: while one holds the thread it
        raises ``ThreadBusyError`` naming the thread, and the run goes on and
        saves normally. That is the ``reject`` strategy whatever the graph's
        ``multitask_strategy`` (a delete is never queued behind a run by
        surprise); a ``multitask_strategy`` in ``config`` asks for another
        (``enqueue`` waits for the run to end, ``interrupt`` or ``rollback``
        stops it first), bounded by ``busy_timeout``.
        """
        strict = LeasePolicy(self.leases.lease_seconds, "reject", self.leases.busy_timeout)
        async with self._holding(config, strict) as lease:
            return await lease.checkpointer.adelete_thread(lease.key)

    def delete_thread(self, config: Mapping[str, Any]) -> bool:
        """Sync ``adelete_thread``."""
        return run_sync(self.adelete_thread(config))

    @asynccontextmanager
    async def _holding(
        self, config: Mapping[str, Any], policy: LeasePolicy | None = None
    ) -> AsyncIterator[ThreadLease]:
        """Hold the thread's lease while an operation writes it, as a run does.

        ``policy`` (the graph's by default) with the config's strategy and wait.
        """
        key = history.thread_key(config)
        policy = (policy or self.leases).for_run(run_config(config))
        lease = await take_thread(self._require_checkpointer(), key, uuid.uuid4().hex, policy)
        try:
            yield lease
        finally:
            await lease.release()

    def _require_checkpointer(self) -> Checkpointer:
        if self.checkpointer is None:
            raise StateError("this graph has no checkpointer, so threads are not saved")
        return self.checkpointer

    def tools(self) -> dict[str, Tool]:
        """Every tool of the graph's ToolNodes and Agents, by name (toolsets' as last listed)."""
        found: dict[str, Tool] = {}
        for node in self.nodes.values():
            found.update(getattr(node, "tools", {}))
        return found

    def toolsets(self) -> list[Toolset]:
        """The toolsets of the graph's ToolNodes and Agents (MCP servers...), each once.

        Whatever hosts the graph prepares them when it starts and closes them
        when it stops (``tenxgraph serve`` does).
        """
        found: list[Toolset] = []
        for node in self.nodes.values():
            index = getattr(node, "tools", None)
            for toolset in index.toolsets if isinstance(index, ToolIndex) else ():
                if toolset not in found:
                    found.append(toolset)
        return found

    async def acall_tool(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        record: bool = True,
        note: str | None = None,
        invocation_state: dict[str, Any] | None = None,
    ) -> ToolResultBlock:
        """Call tool ``name`` directly, outside the model loop, on the thread of ``config``.

        With ``record=True`` (the default) the call is a turn of its own: the
        call and its result (after ``note``, as a user message, when given) are
        added to the thread's history, a ``ToolResult.state`` update is merged,
        the graph's context manager applies, and all of it is saved at once;
        ``record=False`` leaves the thread untouched. Tool failures come back as
        a result with ``is_error=True``, as the model would see them. A tool
        that calls ``interrupt()`` raises ``ToolError``, and a recorded call
        from inside a run of the same thread raises ``UsageError``: neither
        changes the thread.
        """
        from tenxgraph.core.graph._direct import acall_tool

        return await acall_tool(
            self,
            name,
            {} if args is None else args,
            config,
            record=record,
            note=note,
            invocation_state=invocation_state,
        )

    def call_tool(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        record: bool = True,
        note: str | None = None,
        invocation_state: dict[str, Any] | None = None,
    ) -> ToolResultBlock:
        """Sync ``acall_tool``."""
        return run_sync(
            self.acall_tool(
                name, args, config, record=record, note=note, invocation_state=invocation_state
            )
        )
