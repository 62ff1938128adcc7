"""``CompiledGraph``: the one run loop, and the entry points built on it.

``astream`` is the loop. ``ainvoke`` drains it; ``invoke`` and ``stream`` are
sync wrappers through ``tenxgraph._sync``. Nothing here knows about model
providers or storage backends: nodes and the checkpointer contract do.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tenxgraph._sync import iterate_sync, run_sync
from tenxgraph.core.graph import history, snapshots
from tenxgraph.core.graph.command import Command
from tenxgraph.core.graph.events import (
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    StreamEvent,
    UpdateEvent,
)
from tenxgraph.core.graph.interrupt import GraphInterrupt, InterruptScope
from tenxgraph.core.graph.node import NodeOutput, RunContext, SaveProgress
from tenxgraph.core.graph.session import ThreadSession
from tenxgraph.core.graph.updates import StateSchema
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.errors import NodeError, RecursionLimitError, StateError, TenxGraphError
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadKey
from tenxgraph.utils.constants import END, START

if TYPE_CHECKING:
    from tenxgraph.core.graph.builder import StateGraph
    from tenxgraph.core.graph.tools import Tool

__all__ = ["CompiledGraph"]

S = TypeVar("S", bound=AgentState)


@dataclass(slots=True)
class _ActiveRun:
    """A run in progress, so ``stop`` can reach it."""

    stop_requested: bool = False
    task: asyncio.Task[Any] | None = None


@dataclass(slots=True)
class _Run(Generic[S]):
    """Everything one run carries between steps."""

    state: S
    ctx: RunContext
    session: ThreadSession | None
    next_node: str
    skip_interrupt_before: bool = False
    produced: list[Message] = field(default_factory=list)
    path: list[str] = field(default_factory=list)


class CompiledGraph(Generic[S]):
    """A checked, runnable graph. Create it with ``StateGraph.compile``."""

    def __init__(
        self,
        *,
        builder: StateGraph[S],
        schema: StateSchema,
        checkpointer: Checkpointer | None,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        recursion_limit: int,
        warm_threads: int = 128,
    ) -> None:
        self.builder = builder
        self.schema = schema
        self.checkpointer = checkpointer
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.recursion_limit = recursion_limit
        self.nodes = dict(builder.nodes)
        self.edges = dict(builder.edges)
        self.branches = dict(builder.branches)
        self.context_manager = builder.context_manager
        self._active: dict[ThreadKey | None, _ActiveRun] = {}
        self.warm_threads = warm_threads
        self._warm: OrderedDict[ThreadKey, ThreadSession] = OrderedDict()
        if checkpointer is not None:
            checkpointer.state_class = builder.state_class

    # --- entry points -------------------------------------------------------------------

    def astream(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Run the graph: yield messages (deltas too), node updates and, last, a RunResult."""
        return self._run(input, config, invocation_state, inline_sync=False)

    def stream(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        """Sync ``astream``."""
        return iterate_sync(self._run(input, config, invocation_state, inline_sync=True))

    async def ainvoke(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run the graph to its end (or an interrupt) and return ``RunResult.as_dict()``."""
        return await _drain(self._run(input, config, invocation_state, inline_sync=False))

    def invoke(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Sync ``ainvoke``."""
        return run_sync(_drain(self._run(input, config, invocation_state, inline_sync=True)))

    async def aget_state(
        self, config: Mapping[str, Any], *, version: int | None = None
    ) -> S | None:
        """The thread's saved state (or its state at checkpoint ``version``); None if new."""
        checkpointer = self._require_checkpointer()
        key = history.thread_key(config)
        if version is not None:
            return await history.state_at(checkpointer, key, self.builder.state_class, version)
        return await ThreadSession(checkpointer, key).load(self.builder.state_class)

    def get_state(self, config: Mapping[str, Any], *, version: int | None = None) -> S | None:
        """Sync ``aget_state``."""
        return run_sync(self.aget_state(config, version=version))

    async def aget_state_history(
        self, config: Mapping[str, Any], *, limit: int | None = None
    ) -> list[history.StateSnapshot[S]]:
        """The thread's checkpoints, newest first, each with the state it recorded."""
        return await history.state_history(
            self._require_checkpointer(),
            history.thread_key(config),
            self.builder.state_class,
            limit,
        )

    def get_state_history(
        self, config: Mapping[str, Any], *, limit: int | None = None
    ) -> list[history.StateSnapshot[S]]:
        """Sync ``aget_state_history``."""
        return run_sync(self.aget_state_history(config, limit=limit))

    async def aupdate_state(
        self, config: Mapping[str, Any], values: Any, *, as_node: str | None = None
    ) -> int:
        """Merge ``values`` (anything a node may return) into the thread as a new checkpoint.

        Returns the new version. The run status is kept, so a paused thread can be
        corrected and then resumed.
        """
        return await history.update_state(
            self._require_checkpointer(), history.thread_key(config), self.schema, values, as_node
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
            self._require_checkpointer(), source, version, target, self.builder.state_class
        )
        return {**config, "thread_id": new_thread_id}

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
        return await snapshots.restore_snapshot(
            self._require_checkpointer(),
            history.thread_key(config),
            snapshot,
            self.builder.state_class,
        )

    def restore(self, config: Mapping[str, Any], snapshot: snapshots.ThreadSnapshot) -> int:
        """Sync ``arestore``."""
        return run_sync(self.arestore(config, snapshot))

    async def acreate_thread(
        self,
        config: Mapping[str, Any],
        messages: Sequence[Message],
        state: Mapping[str, Any] | None = None,
    ) -> int:
        """Start a thread from an existing conversation (and custom field values).

        The messages must be well paired (every tool call answered, no result
        without its call); the thread must not exist yet. Returns its version.
        """
        initial = self._fresh_state()
        if state:
            self.schema.apply_input(initial, state)
        return await snapshots.create_thread(
            self._require_checkpointer(), history.thread_key(config), messages, initial
        )

    def create_thread(
        self,
        config: Mapping[str, Any],
        messages: Sequence[Message],
        state: Mapping[str, Any] | None = None,
    ) -> int:
        """Sync ``acreate_thread``."""
        return run_sync(self.acreate_thread(config, messages, state))

    def _require_checkpointer(self) -> Checkpointer:
        if self.checkpointer is None:
            raise StateError("this graph has no checkpointer, so threads are not saved")
        return self.checkpointer

    def tools(self) -> dict[str, Tool]:
        """Every tool of the graph's ToolNodes and Agents, by name."""
        found: dict[str, Tool] = {}
        for node in self.nodes.values():
            found.update(getattr(node, "tools", {}))
        return found

    async def acall_tool(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        record: bool = True,
        invocation_state: dict[str, Any] | None = None,
    ) -> ToolResultBlock:
        """Call tool ``name`` directly, outside the model loop, on the thread of ``config``.

        With ``record=True`` (the default) the call and its result are added to
        the thread's history and a ``ToolResult.state`` update is merged and
        saved; ``record=False`` leaves the thread untouched. Tool failures come
        back as a result with ``is_error=True``, as the model would see them.
        """
        from tenxgraph.core.graph.direct import acall_tool

        return await acall_tool(
            self, name, args or {}, config, record=record, invocation_state=invocation_state
        )

    def call_tool(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        record: bool = True,
        invocation_state: dict[str, Any] | None = None,
    ) -> ToolResultBlock:
        """Sync ``acall_tool``."""
        return run_sync(
            self.acall_tool(name, args, config, record=record, invocation_state=invocation_state)
        )

    def stop(self, config: Mapping[str, Any] | None = None) -> bool:
        """Ask the thread's running run to stop; False when none is running here.

        The run stops before its next node, and a running async node is
        cancelled; the state is saved with status ``stopped``. Safe to call from
        any thread.
        """
        key = ThreadKey.from_config(config) if config and config.get("thread_id") else None
        active = self._active.get(key)
        if active is None:
            return False
        active.stop_requested = True
        task = active.task
        if task is not None and not task.get_loop().is_closed():
            task.get_loop().call_soon_threadsafe(task.cancel)
        return True

    # --- the run loop -------------------------------------------------------------------

    async def _run(
        self,
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any] | None,
        invocation_state: dict[str, Any] | None,
        *,
        inline_sync: bool,
    ) -> AsyncIterator[StreamEvent]:
        """The run loop: one node per step until END, an interrupt, a stop or an error."""
        config = dict(config or {})
        run = await self._start(input or {}, config, invocation_state, inline_sync)
        key = ThreadKey.from_config(config) if config.get("thread_id") else None
        active = self._active[key] = _ActiveRun()
        try:
            state, meta = run.state, run.state.execution_meta
            limit = int(run.ctx.config.get("recursion_limit", self.recursion_limit))
            node_name = run.next_node
            if node_name == START:
                node_name = await self._route(START, run)
            while node_name != END:
                if active.stop_requested:
                    yield await self._finish(run, "stopped")
                    return
                if node_name in self.interrupt_before and not run.skip_interrupt_before:
                    yield await self._pause(run, node_name, node_name, None, "before")
                    yield self._result(run)
                    return
                run.skip_interrupt_before = False
                if meta.step >= limit:
                    error = RecursionLimitError(limit, [*run.path, node_name])
                    yield await self._fail(run, node_name, error)
                    raise error
                run.path.append(node_name)
                meta.current_node = node_name
                meta.step += 1
                run.ctx.node = node_name
                run.ctx.interrupt_scope = InterruptScope(answers=meta.resume_values)
                output: Any = None
                active.task = asyncio.current_task()
                try:
                    async for item in self.nodes[node_name].run(state, run.ctx):
                        if isinstance(item, NodeOutput):
                            output = item.value
                        elif isinstance(item, SaveProgress):
                            await self._save(run, [], node_name)
                        else:
                            yield item
                except GraphInterrupt as signal:
                    yield await self._pause(run, node_name, node_name, signal.value, "inside")
                    yield self._result(run)
                    return
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if not active.stop_requested or task is None:
                        raise
                    task.uncancel()
                    yield await self._finish(run, "stopped")
                    return
                except TenxGraphError as exc:
                    yield await self._fail(run, node_name, exc)
                    raise
                except Exception as exc:
                    yield await self._fail(run, node_name, exc)
                    raise NodeError(node_name, f"raised {type(exc).__name__}: {exc}") from exc
                finally:
                    active.task = None
                if meta.resume_values:
                    meta.resume_values = []
                goto = None
                if isinstance(output, Command):
                    goto, output = output.goto, output.update
                try:
                    applied = self.schema.apply(state, output, f"node {node_name!r}")
                except StateError as exc:
                    yield await self._fail(run, node_name, exc)
                    raise NodeError(node_name, str(exc)) from None
                for message in applied.messages:
                    yield MessageEvent(node_name, message)
                run.produced.extend(applied.messages)
                next_node = goto if goto is not None else await self._route(node_name, run)
                if next_node != END and next_node not in self.nodes:
                    raise NodeError(node_name, f"Command(goto={next_node!r}) names no node")
                meta.next_node = next_node
                await self._save(run, applied.messages, node_name)
                yield UpdateEvent(node_name, meta.step, tuple(applied.messages), applied.values)
                if node_name in self.interrupt_after:
                    yield await self._pause(run, node_name, next_node, None, "after")
                    yield self._result(run)
                    return
                node_name = next_node
            yield await self._finish(run, "completed")
            self._keep_warm(run.session)
        finally:
            if self._active.get(key) is active:
                del self._active[key]

    async def _start(
        self,
        input: Mapping[str, Any],
        config: dict[str, Any],
        invocation_state: dict[str, Any] | None,
        inline_sync: bool,
    ) -> _Run[S]:
        unknown = set(input) - {"messages", "state", "resume"}
        if unknown:
            raise StateError(
                f"invoke input has unknown key(s) {sorted(unknown)}; "
                "expected 'messages', 'state' and/or 'resume'"
            )
        session, state = await self._load(config)
        meta = state.execution_meta
        next_node = self._entry(state)
        resuming = "resume" in input
        skip_before = False
        if meta.status == "interrupted":
            if not resuming:
                raise StateError(
                    f"thread {config.get('thread_id')!r} is paused at node "
                    f"{meta.current_node!r}; continue it with invoke({{'resume': answer}}, config)"
                )
            next_node = meta.next_node or next_node
            skip_before = meta.interrupt_kind == "before"
            if meta.interrupt_kind == "inside":
                meta.resume_values = [*meta.resume_values, input["resume"]]
        elif resuming:
            raise StateError("nothing to resume: the thread is not paused at an interrupt")
        elif meta.status == "running" and meta.next_node and not input.get("messages"):
            next_node = meta.next_node  # a run that died mid-way continues where it stopped
        else:
            meta.step = 0
        meta.status, meta.error, meta.stop_requested = "running", None, False
        meta.interrupt_kind = meta.interrupt_value = None
        input_messages = _input_messages(input.get("messages"))
        if "state" in input:
            self.schema.apply_input(state, input["state"])
        added = state.append_messages(input_messages)
        if session is not None:
            session.record(added)
        ctx = RunContext(
            node=START,
            config=config,
            invocation_state=invocation_state if invocation_state is not None else {},
            interrupt_scope=InterruptScope(),
            id_generator=self.builder.id_generator,
            context_manager=self.context_manager,
            run_sync_inline=inline_sync,
        )
        return _Run(state, ctx, session, next_node, skip_interrupt_before=skip_before)

    async def _load(self, config: Mapping[str, Any]) -> tuple[ThreadSession | None, S]:
        session = None
        state: S | None = None
        if self.checkpointer is not None:
            if not config.get("thread_id"):
                raise StateError("this graph has a checkpointer: pass config={'thread_id': ...}")
            key = ThreadKey.from_config(config)
            session = self._warm.pop(key, None)
            if session is not None and await self.checkpointer.aversion(key) == session.version:
                state = session.revive(self.builder.state_class)
            if state is None:
                session = ThreadSession(self.checkpointer, key)
                state = await session.load(self.builder.state_class)
        if state is None:
            state = self._fresh_state()
        return session, state

    def _fresh_state(self) -> S:
        """The state a new thread starts from: a copy of the graph's seed, or the defaults."""
        initial = self.builder.initial_state
        state = initial.model_copy(deep=True) if initial is not None else self.builder.state_class()
        state.message_index()
        return state

    def _keep_warm(self, session: ThreadSession | None) -> None:
        """Keep a finished run's session, so the thread's next run skips reloading it.

        The next run checks the stored version first (one cheap query), so a
        write by anyone else is never missed. At most ``warm_threads`` are kept.
        """
        if session is None or self.warm_threads <= 0:
            return
        self._warm[session.key] = session
        self._warm.move_to_end(session.key)
        while len(self._warm) > self.warm_threads:
            self._warm.popitem(last=False)

    def _entry(self, state: S) -> str:
        if START in self.edges:
            return self.edges[START]
        return START  # a conditional entry: routed from START below

    async def _route(self, node: str, run: _Run[S]) -> str:
        if node in self.edges:
            return self.edges[node]
        branch = self.branches.get(node)
        if branch is None:
            return END
        value = await run.ctx.call(branch.router, (run.state,))
        if branch.path_map is None:
            target = value
        elif value in branch.path_map:
            target = branch.path_map[value]
        else:
            raise NodeError(
                node,
                f"router {getattr(branch.router, '__name__', branch.router)!r} returned "
                f"{value!r}, which is not in its path_map {sorted(map(str, branch.path_map))}",
            )
        if target != END and target not in self.nodes:
            raise NodeError(
                node,
                f"router {getattr(branch.router, '__name__', branch.router)!r} returned "
                f"{target!r}, which is not a node of the graph",
            )
        return str(target)

    async def _save(self, run: _Run[S], added: list[Message], node: str) -> None:
        if run.session is not None:
            run.session.record(added)
            await run.session.save(run.state, node, run.state.execution_meta.step)

    async def _pause(
        self, run: _Run[S], node: str, resume_at: str, value: Any, when: str
    ) -> InterruptEvent:
        meta = run.state.execution_meta
        meta.status, meta.next_node, meta.interrupt_value = "interrupted", resume_at, value
        meta.interrupt_kind = when  # type: ignore[assignment]
        await self._save(run, [], node)
        return InterruptEvent(node, value, when)

    async def _fail(self, run: _Run[S], node: str, exc: BaseException) -> ErrorEvent:
        run.state.error(f"{type(exc).__name__}: {exc}")
        run.state.execution_meta.next_node = node
        await self._save(run, [], node)
        return ErrorEvent(node, f"{type(exc).__name__}: {exc}")

    async def _finish(self, run: _Run[S], status: str) -> RunResult:
        state = run.state
        if self.context_manager is not None:
            state = await self.context_manager.atrim_context(state)
            run.state = state
        meta = state.execution_meta
        meta.status = "completed" if status == "completed" else "stopped"
        meta.next_node = None
        meta.interrupt_value = None
        meta.stop_requested = status == "stopped"
        await self._save(run, [], meta.current_node)
        return self._result(run)

    def _result(self, run: _Run[S]) -> RunResult:
        meta = run.state.execution_meta
        interrupt = None
        if meta.status == "interrupted":
            interrupt = InterruptEvent(meta.current_node, meta.interrupt_value, "paused")
        return RunResult(
            messages=run.produced,
            state=run.state,
            interrupt=interrupt,
            invocation_state=run.ctx.invocation_state,
        )


def _input_messages(raw: Any) -> list[Message]:
    if raw is None:
        return []
    if isinstance(raw, (Message, dict)):
        raw = [raw]
    if not isinstance(raw, list):
        raise StateError(f"invoke input 'messages' must be a list of Message, got {type(raw)}")
    return [m if isinstance(m, Message) else Message.model_validate(m) for m in raw]


async def _drain(events: AsyncIterator[StreamEvent]) -> dict[str, Any]:
    result: RunResult | None = None
    async for event in events:
        if isinstance(event, RunResult):
            result = event
    if result is None:  # pragma: no cover - the loop always ends with a RunResult
        raise RuntimeError("the run ended without a result")
    return result.as_dict()
