"""``CompiledGraph``: the one run loop, and the entry points built on it.

``astream`` is the loop. ``ainvoke`` drains it; ``invoke`` and ``stream`` are
sync wrappers through ``tenxgraph._sync``. Nothing here knows about model
providers or storage backends: nodes and the checkpointer contract do.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tenxgraph._sync import iterate_sync, run_sync
from tenxgraph.core.graph._command import Command
from tenxgraph.core.graph._entry import (
    Entry,
    answer_pending_calls,
    check_input,
    entry_point,
    input_messages_of,
)
from tenxgraph.core.graph._events import (
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    StreamEvent,
    UpdateEvent,
)
from tenxgraph.core.graph._hooks import HookCaller, RunHooks
from tenxgraph.core.graph._interrupt import GraphInterrupt, InterruptScope
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext, SaveProgress
from tenxgraph.core.graph._remote_tools import settle_remote_input
from tenxgraph.core.graph._run_control import (
    Displaced,
    Fail,
    Finish,
    Next,
    Outcome,
    Pause,
    RunControl,
)
from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.graph._thread_lease import LeasePolicy, ThreadLease, take_thread
from tenxgraph.core.graph._thread_ops import ThreadOperations
from tenxgraph.core.graph._turns import discard_unfinished
from tenxgraph.core.graph._updates import Applied, StateSchema
from tenxgraph.core.graph._warm import WarmThreads
from tenxgraph.core.graph._workers import WorkerPool
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.errors import (
    GraphRunError,
    NodeError,
    RecursionLimitError,
    StateError,
    TenxGraphError,
    UnstorableStateError,
)
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadKey, run_config
from tenxgraph.utils.constants import END, START

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import StateGraph

__all__ = ["CompiledGraph"]

S = TypeVar("S", bound=AgentState)


@dataclass(slots=True)
class _Run(Generic[S]):
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
    produced: list[Message] = field(default_factory=list)
    path: list[str] = field(default_factory=list)


class CompiledGraph(ThreadOperations[S]):
    """A checked, runnable graph. Create it with ``StateGraph.compile``."""

    def __init__(
        self,
        *,
        builder: StateGraph[S],
        nodes: Mapping[str, Node],
        schema: StateSchema,
        checkpointer: Checkpointer | None,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        recursion_limit: int,
        warm: WarmThreads | None = None,
        workers: WorkerPool | None = None,
        leases: LeasePolicy | None = None,
        hooks: Sequence[RunHooks] = (),
    ) -> None:
        self.builder = builder
        self.schema = schema
        self.checkpointer = checkpointer
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.recursion_limit = recursion_limit
        self.nodes = dict(nodes)
        self.edges = dict(builder.edges)
        self.branches = dict(builder.branches)
        self.context_manager = builder.context_manager
        self._active: dict[ThreadKey | None, RunControl] = {}
        self._runs: dict[str, RunControl] = {}
        self.hooks = HookCaller(hooks)
        """The ``RunHooks`` given to ``compile``, called around runs, nodes and saves."""
        self.warm = warm if warm is not None else WarmThreads()
        """Recently finished threads kept in memory, so their next run skips a reload."""
        self.workers = workers if workers is not None else WorkerPool()
        """Threads for this graph's sync user code (``workers.stuck`` counts timed-out calls)."""
        self.leases = leases if leases is not None else LeasePolicy()
        """How runs hold their thread: lease duration, default strategy, wait bound."""

    # --- entry points -------------------------------------------------------------------

    def astream(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Run the graph: yield messages (deltas too), node updates and, last, a RunResult.

        Close it (``aclose``, or ``contextlib.aclosing``) when you stop reading early:
        the run holds its thread until then.
        """
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
        return await _drain(
            self._run(input, config, invocation_state, inline_sync=False, progress=False)
        )

    def invoke(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Sync ``ainvoke``."""
        return run_sync(
            _drain(self._run(input, config, invocation_state, inline_sync=True, progress=False))
        )

    def stop(self, config: Mapping[str, Any] | None = None) -> bool:
        """Ask the thread's running run to stop; False when none is running here.

        The run stops before its next node, and a running async node is
        cancelled; the state is saved with status ``stopped``. Safe to call from
        any thread.
        """
        config = run_config(config)
        key = ThreadKey.from_config(config) if config.get("thread_id") is not None else None
        active = self._active.get(key)
        if active is None:
            return False
        active.stop()
        return True

    # --- the run loop -------------------------------------------------------------------

    async def _run(
        self,
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any] | None,
        invocation_state: dict[str, Any] | None,
        *,
        inline_sync: bool,
        progress: bool = True,
    ) -> AsyncGenerator[StreamEvent, None]:
        """The run loop: one node per step until END, an interrupt, a stop or an error.

        Every step ends in an outcome (next node / pause / finish / fail), and
        ``_conclude`` is the one place that saves a run's end, yields its last
        events and raises. With ``progress=False`` (``invoke``, which keeps only
        the result) the per-step message and update events are not built.
        """
        config = run_config(config)
        run_id = str(config.get("run_id") or uuid.uuid4().hex)
        lease = await self._take(config, run_id)
        key = ThreadKey.from_config(config) if config.get("thread_id") is not None else None
        control = RunControl(run_id, key)
        run: _Run[S] | None = None
        error: BaseException | None = None
        try:
            run = await self._start(
                input or {}, config, invocation_state, inline_sync, lease, control
            )
            self._track(control, lease)
            if self.hooks:
                await self.hooks.run_started(control)
            outcome = await self._begin_turn(run)
            while isinstance(outcome, Next):
                async for item in self._step(run, outcome.node, progress):
                    if isinstance(item, Outcome):
                        outcome = item
                    else:
                        yield item
            async for event in self._conclude(run, outcome):
                yield event
        except BaseException as exc:
            error = exc
            raise
        finally:
            await self._end(control, lease, run, error)

    def stop_run(self, run_id: str) -> bool:
        """Ask the run ``run_id`` to stop, as ``stop`` does; False when it is not running here."""
        control = self._runs.get(run_id)
        if control is None:
            return False
        control.stop()
        return True

    def _track(self, control: RunControl, lease: ThreadLease | None) -> None:
        """Make the run reachable by ``stop``, ``stop_run`` and its lease's stop requests."""
        self._active[control.thread] = self._runs[control.run_id] = control
        if lease is not None:
            lease.on_stop = control.stop
            lease.start_heartbeat()

    async def _end(
        self,
        control: RunControl,
        lease: ThreadLease | None,
        run: _Run[S] | None,
        error: BaseException | None,
    ) -> None:
        """Forget the run, let its thread go, and tell the hooks how it ended."""
        if self._active.get(control.thread) is control:
            del self._active[control.thread]
        if self._runs.get(control.run_id) is control:
            del self._runs[control.run_id]
        if lease is not None:
            await lease.release()
        if self.hooks and run is not None:
            status = "error" if error is not None else run.state.execution_meta.status
            await self.hooks.run_ended(control, status, error)

    async def _take(self, config: Mapping[str, Any], run_id: str) -> ThreadLease | None:
        """Take the thread's lease before anything is read (None: no checkpointer)."""
        if self.checkpointer is None:
            return None
        if config.get("thread_id") is None:
            raise StateError("this graph has a checkpointer: pass config={'thread_id': ...}")
        key = ThreadKey.from_config(config)
        return await take_thread(self.checkpointer, key, run_id, self.leases.for_run(config))

    async def _begin_turn(self, run: _Run[S]) -> Outcome:
        """Find the first node, then save the input, and where the run goes on, before it runs.

        A run that dies after this save is continued by ``invoke(None)`` at that
        node, inside the same turn (so ``rollback`` still discards all of it).
        """
        first = run.next_node
        if first == START:
            try:
                first = await self._route(START, run)
            except TenxGraphError as exc:
                return Fail(START, exc)
        if run.new_input:
            run.state.execution_meta.next_node = first
            await self._save(run, [], START)
        return Next(first)

    async def _step(
        self, run: _Run[S], node_name: str, progress: bool
    ) -> AsyncIterator[StreamEvent | Outcome]:
        """Run one node and merge its output; the last item is the step's outcome."""
        if node_name == END:
            yield Finish("completed")
            return
        gate = self._gate(run, node_name)
        if gate is not None:
            yield gate
            return
        await self._begin_node(run, node_name)
        active, task = run.control, asyncio.current_task()
        try:
            active.arm(task)
            output: Any = None
            async for item in self.nodes[node_name].run(run.state, run.ctx):
                if isinstance(item, NodeOutput):
                    output = item.value
                elif isinstance(item, SaveProgress):
                    active.disarm()  # a stop never cancels a save halfway
                    await self._save(run, [], node_name)
                    active.arm(task)
                elif progress:
                    yield item
            applied, next_node = await self._advance(run, node_name, output)
        except GraphInterrupt as signal:
            await self._node_ended(run, node_name, signal)
            yield Pause(node_name, node_name, signal.value, "inside")
            return
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not active.stop_requested or task is None:
                raise
            task.uncancel()
            yield active.outcome()
            return
        except Exception as exc:
            await self._node_ended(run, node_name, exc)
            yield Fail(node_name, exc)
            return
        finally:
            active.disarm()
        await self._node_ended(run, node_name, None)
        events, outcome = await self._commit(run, node_name, applied, next_node, progress)
        for event in events:
            yield event
        yield outcome

    async def _commit(
        self, run: _Run[S], node_name: str, applied: Applied, next_node: str, progress: bool
    ) -> tuple[list[StreamEvent], Outcome]:
        """Save a finished step; return its events (when wanted) and where the run goes next."""
        run.produced.extend(applied.messages)
        run.state.execution_meta.next_node = next_node
        if self._ends_next(node_name, next_node, progress) and run.session is not None:
            run.session.record(applied.messages)  # saved with the end, just after
        else:
            try:
                await self._save(run, applied.messages, node_name)
            except UnstorableStateError as exc:  # the step is kept, less the fields it names
                return [], Fail(node_name, exc, resume_at=next_node)
        events: list[StreamEvent] = []
        if progress:
            events = [MessageEvent(node_name, message) for message in applied.messages]
            step = run.state.execution_meta.step
            events.append(UpdateEvent(node_name, step, tuple(applied.messages), applied.values))
        if node_name in self.interrupt_after:
            return events, Pause(node_name, next_node, None, "after")
        return events, Next(next_node)

    def _ends_next(self, node: str, next_node: str, progress: bool) -> bool:
        """True when the end's save follows this step's at once, so one save does both.

        Not with a stream consumer (it sees the step's events first), a pause
        after the node, or a context manager (it may call a model) before the end.
        """
        ends = next_node == END and node not in self.interrupt_after
        return ends and not progress and self.context_manager is None

    async def _node_ended(self, run: _Run[S], node: str, error: BaseException | None) -> None:
        if self.hooks:
            await self.hooks.node_ended(run.control, node, run.state.execution_meta.step, error)

    def _gate(self, run: _Run[S], node_name: str) -> Outcome | None:
        """Why ``node_name`` must not run now: a stop, an interrupt before it, the limit."""
        if run.control.stop_requested:
            return run.control.outcome()
        if node_name in self.interrupt_before and not run.skip_interrupt_before:
            return Pause(node_name, node_name, None, "before")
        run.skip_interrupt_before = False
        limit = int(run.ctx.config.get("recursion_limit", self.recursion_limit))
        if run.state.execution_meta.step >= limit:
            return Fail(node_name, RecursionLimitError(limit, [*run.path, node_name]))
        return None

    async def _begin_node(self, run: _Run[S], node_name: str) -> None:
        meta = run.state.execution_meta
        run.path.append(node_name)
        meta.current_node = node_name
        meta.step += 1
        run.ctx.node = node_name
        run.ctx.interrupt_scope = InterruptScope(meta.resume_values, thread=run.control.thread)
        if self.hooks:
            await self.hooks.node_started(run.control, node_name, meta.step)

    async def _advance(self, run: _Run[S], node_name: str, output: Any) -> tuple[Applied, str]:
        """Merge a node's output into the state and decide the next node."""
        meta = run.state.execution_meta
        if meta.resume_values:
            meta.resume_values = []
        goto = None
        if isinstance(output, Command):
            goto, output = output.goto, output.update
        try:
            applied = self.schema.apply(run.state, output, f"node {node_name!r}")
        except StateError as exc:
            raise NodeError(node_name, str(exc)) from None
        next_node = goto or self.edges.get(node_name) or await self._route(node_name, run)
        if next_node != END and next_node not in self.nodes:
            raise NodeError(node_name, f"Command(goto={next_node!r}) names no node")
        return applied, next_node

    async def _conclude(self, run: _Run[S], outcome: Outcome) -> AsyncIterator[StreamEvent]:
        """End the run as ``outcome`` says: save it, yield the last events, raise on failure."""
        if isinstance(outcome, Pause):
            yield await self._pause(
                run, outcome.node, outcome.resume_at, outcome.value, outcome.when
            )
            yield self._result(run)
        elif isinstance(outcome, Finish):
            try:
                yield await self._finish(run, outcome.status)
            except UnstorableStateError as exc:  # the fields named are back as saved
                outcome = Fail(run.state.execution_meta.current_node, exc, resume_at=END)
            else:
                if outcome.status == "completed" and run.session is not None:
                    self.warm.keep(run.session)
        if isinstance(outcome, Fail):
            yield await self._fail(run, outcome)
            raise outcome.raised()
        elif isinstance(outcome, Displaced):
            session = run.session
            if outcome.request == "rollback" and session is not None and session.lease:
                # still the holder: discard the turn before another run can build on it
                await discard_unfinished(session.checkpointer, session.key, session.lease)
            raise outcome.raised(str(run.ctx.config["thread_id"]))

    async def _start(
        self,
        input: Mapping[str, Any],
        config: dict[str, Any],
        invocation_state: dict[str, Any] | None,
        inline_sync: bool,
        lease: ThreadLease | None,
        control: RunControl,
    ) -> _Run[S]:
        """Load the thread and apply the input; see ``entry`` for where the run enters."""
        input = check_input(input)
        session, state = await self._load(config, lease)
        meta = state.execution_meta
        input = settle_remote_input(meta, input)  # a thread waiting for a client's tool results
        entry = entry_point(meta, input, config.get("thread_id"), self.edges.get(START, START))
        input_messages = input_messages_of(input)
        added: list[Message] = []
        if entry.new_turn:
            meta.step = 0
            meta.turn_start = 0 if session is None else session.version
            runner, added = answer_pending_calls(state, input_messages, meta.status, self)
            if runner is not None:  # a conversation that ends in tool calls runs them first
                entry = Entry(runner, True)
        if "resume" in input and meta.interrupt_kind == "inside":
            meta.resume_values = [*meta.resume_values, input["resume"]]
        meta.status = "running"
        if meta.error is not None or meta.stop_requested or meta.interrupt_kind is not None:
            meta.error, meta.stop_requested = None, False
            meta.interrupt_kind = meta.interrupt_value = None
        if "state" in input:
            self.schema.apply_input(state, input["state"])
        added += state.append_messages(input_messages)
        if session is not None:
            session.record(added)
        ctx = RunContext(
            node=START,
            config=config,
            invocation_state=invocation_state if invocation_state is not None else {},
            interrupt_scope=InterruptScope(thread=control.thread),
            id_generator=self.builder.id_generator,
            context_manager=self.context_manager,
            run_sync_inline=inline_sync,
            workers=self.workers,
            run_id=control.run_id,
        )
        run = _Run(state, ctx, session, control, entry.node, entry.skip_interrupt_before, lease)
        run.new_input = entry.new_turn and (bool(added) or "state" in input)
        return run

    async def _load(
        self, config: Mapping[str, Any], lease: ThreadLease | None
    ) -> tuple[ThreadSession | None, S]:
        session = None
        state: S | None = None
        if self.checkpointer is not None and lease is not None:
            session, state = await self.warm.open(
                self.checkpointer, lease.key, self.builder.state_class, lease.stamp
            )
            session.lease = lease.owner
        if state is None:
            state = self._fresh_state()
        return session, state

    def _fresh_state(self) -> S:
        """The state a new thread starts from: a copy of the graph's seed, or the defaults."""
        initial = self.builder.initial_state
        state = initial.model_copy(deep=True) if initial is not None else self.builder.state_class()
        state.message_index()
        return state

    async def _route(self, node: str, run: _Run[S]) -> str:
        """Where a node without a plain edge leads: its branch's router, or END."""
        branch = self.branches.get(node)
        if branch is None:
            return END
        try:
            value = await run.ctx.call(branch.router, (run.state,))
        except (GraphInterrupt, TenxGraphError):
            raise
        except Exception as exc:
            detail = f"router {branch.name!r} raised {type(exc).__name__}: {exc}"
            raise NodeError(node, detail) from exc
        return branch.target(node, value, self.nodes)

    async def _save(
        self, run: _Run[S], added: list[Message], node: str, *, last: bool = False
    ) -> None:
        """Save a step; the run's ``last`` save also gives the thread's lease up with it."""
        session = run.session
        if session is None:
            return
        session.record(added)
        lease = run.lease if last else None
        if lease is not None:
            await lease.stop_heartbeat()
        await session.save(run.state, node, run.state.execution_meta.step, release=bool(lease))
        if lease is not None:
            lease.released = True
        if self.hooks:
            await self.hooks.saved(run.control, node, session.stamp)

    async def _pause(
        self, run: _Run[S], node: str, resume_at: str, value: Any, when: str
    ) -> InterruptEvent:
        meta = run.state.execution_meta
        meta.status, meta.next_node, meta.interrupt_value = "interrupted", resume_at, value
        meta.interrupt_kind = when  # type: ignore[assignment]
        await self._save(run, [], node, last=True)
        return InterruptEvent(node, value, when)

    async def _fail(self, run: _Run[S], failed: Fail) -> ErrorEvent:
        node, exc = failed.node, failed.error
        run.state.error(f"{type(exc).__name__}: {exc}")
        run.state.execution_meta.next_node = failed.resume_at or node
        await self._save(run, [], node, last=True)
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
        await self._save(run, [], meta.current_node, last=True)
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
            run_id=run.ctx.run_id,
        )


async def _drain(events: AsyncIterator[StreamEvent]) -> dict[str, Any]:
    result: RunResult | None = None
    async for event in events:
        if isinstance(event, RunResult):
            result = event
    if result is None:  # pragma: no cover - the loop always ends with a RunResult
        raise GraphRunError("the run ended without a result")
    return result.as_dict()
