"""``CompiledGraph``: the one run loop, and the entry points built on it.

``astream`` is the loop. ``ainvoke`` drains it; ``invoke`` and ``stream`` are
sync wrappers through ``tenxgraph._sync``. Nothing here knows about model
providers or storage backends: nodes and the checkpointer contract do.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph._sync import iterate_sync, run_sync
from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.graph._entry import (
    Entry,
    answer_pending_calls,
    check_input,
    input_messages_of,
    run_entry,
)
from tenxgraph.core.graph._events import (
    ErrorEvent,
    InterruptEvent,
    RunResult,
    StreamEvent,
)
from tenxgraph.core.graph._hooks import HookCaller, RunHooks
from tenxgraph.core.graph._interrupt import InterruptKind, InterruptScope
from tenxgraph.core.graph._lease_start import start_held, warm_lease
from tenxgraph.core.graph._node import Node, RunContext
from tenxgraph.core.graph._parallel import ParallelSteps
from tenxgraph.core.graph._remote_tools import REMOTE_CALLS_KIND, settle_remote_input
from tenxgraph.core.graph._run_control import (
    Displaced,
    Fail,
    Finish,
    Next,
    Outcome,
    Pause,
    RunControl,
    drain,
    new_run_id,
)
from tenxgraph.core.graph._steps import COMPLETED, Run
from tenxgraph.core.graph._stream_writer import CustomSink, written_before
from tenxgraph.core.graph._subgraph import (
    Nested,
    check_pausable,
    invoke_nested,
    parent_scope,
)
from tenxgraph.core.graph._thread_ops import ThreadOperations
from tenxgraph.core.graph._tracing import RunTrace, start_run
from tenxgraph.core.graph._updates import StateSchema
from tenxgraph.core.graph._warm import WarmThreads
from tenxgraph.core.graph._workers import WorkerPool
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey, checkpoint_of, run_config
from tenxgraph.core.state.message import Message
from tenxgraph.errors import (
    StateError,
    TenxGraphError,
    UnstorableStateError,
    UsageError,
)
from tenxgraph.runs import LeasePolicy, ThreadLease, discard_unfinished, take_thread
from tenxgraph.storage.checkpointer.base import Checkpointer
from tenxgraph.utils.constants import END, START

if TYPE_CHECKING:
    from tenxgraph.core.graph._builder import StateGraph

__all__ = ["CompiledGraph"]


S = TypeVar("S", bound=AgentState)


class CompiledGraph(ParallelSteps[S], ThreadOperations[S]):
    """A checked, runnable graph. Create it with ``StateGraph.compile``."""

    def __init__(
        self,
        *,
        source: StateGraph[S],
        shape: StateGraph[S],
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
        max_concurrency: int | None = None,
    ) -> None:
        self._source = source
        self._shape = shape
        self.state_class: type[S] = shape.state_class
        """The graph's state class: what its threads hold."""
        self.id_generator = shape.id_generator
        """Makes the ids of the messages this graph creates."""
        self.schema = schema
        self.checkpointer = checkpointer
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.recursion_limit = recursion_limit
        self.nodes = dict(nodes)
        self.edges = dict(shape.edges)
        self.branches = dict(shape.branches)
        self.max_concurrency = max_concurrency
        joins_of: dict[str, tuple[Any, ...]] = {}
        for join in shape.joins:
            for name in join.sources:
                joins_of[name] = (*joins_of.get(name, ()), join)
        self._joins_of = joins_of
        self._ways_out = {**{s: (t,) for s, t in shape.edges.items()}, **shape.fanout}
        self._single = {s: t for s, t in shape.edges.items() if s not in joins_of}
        self.context_manager = shape.context_manager
        self._active: dict[ThreadKey | None, RunControl] = {}
        self._runs: dict[str, RunControl] = {}
        self._goto = {name: Next(name) for name in [*self.nodes, END, PARALLEL]}
        self._where = {name: f"node {name!r}" for name in self.nodes}
        self._routed = frozenset(self.branches)
        self.hooks = HookCaller(hooks)
        """The ``RunHooks`` given to ``compile``, called around runs, nodes and saves."""
        self.warm = warm if warm is not None else WarmThreads()
        """Recently finished threads kept in memory, so their next run skips a reload."""
        self.workers = workers if workers is not None else WorkerPool()
        """Threads for this graph's sync user code (``workers.stuck`` counts timed-out calls)."""
        self.leases = leases if leases is not None else LeasePolicy()
        """How runs hold their thread: lease duration, default strategy, wait bound."""
        self._frozen = True

    def __setattr__(self, name: str, value: Any) -> None:
        """Refuse every assignment once built: a compiled graph's options are set by ``compile``.

        Two graphs compiled from one builder must never share a change made
        to one of them, and an assignment to an option that moved or never
        existed (``app.warm_threads = 8``) must not pass silently.
        """
        if getattr(self, "_frozen", False):
            raise UsageError(
                f"a compiled graph is frozen: {name!r} cannot be set after compile; pass the "
                "options to StateGraph.compile(...) (e.g. warm_threads=, tool_threads=, "
                "lease_seconds=, interrupt_before=) and compile again"
            )
        object.__setattr__(self, name, value)

    @property
    def builder(self) -> StateGraph[S]:
        """Deprecated: the ``StateGraph`` this graph was compiled from.

        Changing it after compile changes nothing here: the compiled graph
        keeps its own copy of the graph. Read ``state_class``, ``id_generator``
        and ``get_graph()`` on the compiled graph, and ``recompile(...)`` for
        the same graph with other options.
        """
        warnings.warn(
            "CompiledGraph.builder is deprecated: a compiled graph keeps its own copy of the "
            "graph, so changing the builder changes nothing here; use state_class, "
            "id_generator, get_graph() or recompile(...)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._source

    def recompile(self, **changes: Any) -> CompiledGraph[S]:
        """The same graph compiled again, with the options it was compiled with but ``changes``.

        ``changes`` are ``StateGraph.compile`` arguments (``checkpointer=``,
        ``lease_seconds=``...); the graph is the one compiled here, whatever
        the builder became since. A server serves a graph compiled without a
        checkpointer over its database this way.
        """
        options: dict[str, Any] = {
            "checkpointer": self.checkpointer,
            "interrupt_before": self.interrupt_before,
            "interrupt_after": self.interrupt_after,
            "recursion_limit": self.recursion_limit,
            "warm_threads": self.warm.max_threads,
            "warm_bytes": self.warm.max_bytes,
            "tool_threads": self.workers.max_threads,
            "lease_seconds": self.leases.lease_seconds,
            "multitask_strategy": self.leases.strategy,
            "busy_timeout": self.leases.busy_timeout,
            "hooks": self.hooks.hooks,
            "max_concurrency": self.max_concurrency,
        }
        unknown = sorted(set(changes) - set(options))
        if unknown:
            raise UsageError(
                f"recompile: unknown option(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(options))})"
            )
        options.update(changes)
        return self._shape._frozen_copy().compile(**options)

    # --- entry points -------------------------------------------------------------------

    def astream(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        control: RunControl | None = None,
        subgraphs: bool = False,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Run the graph: yield messages (deltas too), node updates and, last, a RunResult.

        Close it (``aclose``, or ``contextlib.aclosing``) when you stop reading early:
        the run holds its thread until then. ``control`` is the run's handle when
        the caller keeps one (``RunControl(run_id, None)``; its id is the run's
        unless the config names one): its ``stop`` reaches the run from before it
        takes its thread, and a run stopped before it took it ends without an
        event, having read and written nothing. ``subgraphs=True`` also yields the
        events of subgraphs, each in a ``SubgraphEvent`` naming its namespace.
        """
        return self._run(
            input, config, invocation_state, inline_sync=False, control=control, subgraphs=subgraphs
        )

    def stream(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        subgraphs: bool = False,
    ) -> Iterator[StreamEvent]:
        """Sync ``astream``."""
        run = self._run(input, config, invocation_state, inline_sync=True, subgraphs=subgraphs)
        return iterate_sync(run)

    async def ainvoke(
        self,
        input: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        invocation_state: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run the graph to its end (or an interrupt) and return ``RunResult.as_dict()``.

        Called in a node of a running graph, a graph without a checkpointer is its subgraph.
        """
        if (parent := parent_scope(self)) is not None:
            return await invoke_nested(self, parent, input, config, invocation_state)
        return await drain(
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
        if (parent := parent_scope(self)) is not None:  # taken here: run_sync may change thread
            return run_sync(invoke_nested(self, parent, input, config, invocation_state))
        return run_sync(
            drain(self._run(input, config, invocation_state, inline_sync=True, progress=False))
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
        control: RunControl | None = None,
        subgraphs: bool = False,
        nested: Nested | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """The run loop: one node per step until END, an interrupt, a stop or an error.

        Every step ends in an outcome (next node / pause / finish / fail), and
        ``_conclude`` is the one place that saves a run's end, yields its last
        events and raises. With ``progress=False`` (``invoke``, which keeps only
        the result) the per-step message and update events are not built.
        ``nested``: the run is a subgraph's, inside a node of its parent's run.
        """
        config = run_config(config)
        run_id = str(config.get("run_id") or (control and control.run_id) or new_run_id())
        key = ThreadKey.from_config(config) if config.get("thread_id") is not None else None
        control = RunControl(run_id, key) if control is None else control.bind(run_id, key)
        trace = start_run(control, config, self)  # None unless a tracer provider is set
        holding = self._hold(control, key, config, run_id, nested)
        leased = self.checkpointer is not None and nested is None
        lease = await (holding if trace is None else trace.lease(holding, leased=leased))
        if control.stop_requested:
            return
        run: Run[S] | None = None
        error: BaseException | None = None
        try:
            args = (input or {}, config, invocation_state, inline_sync, lease, control, nested)
            run = await start_held(self, lease, partial(self._start, *args))
            run.forward |= subgraphs
            run.trace = trace
            self._track(control, lease, nested)
            sink = run.ctx.custom = CustomSink() if progress else None
            if self.hooks.hooks:
                await self.hooks.run_started(control)
            outcome = await self._begin_turn(run)
            while type(outcome) is Next:
                if outcome.node == END:
                    outcome = COMPLETED
                    break
                node = self.nodes.get(outcome.node)  # None: a stored name the graph lacks
                if progress and (node.streams if node else outcome.node == PARALLEL):
                    items = self._streamed_step(run, outcome.node, node)
                    traced = items if trace is None else trace.streamed_step(outcome.node, items)
                    async for item in traced:
                        if isinstance(item, Outcome):
                            outcome = item
                        else:
                            yield item
                            control.yielded()
                else:
                    step = self._step(run, outcome.node, node, progress)
                    events, outcome = await (
                        step if trace is None else trace.step(outcome.node, step)
                    )
                    for event in written_before(sink, events):
                        yield event
                        control.yielded()
            events, raised = await self._conclude(run, outcome)
            for event in written_before(sink, events):
                yield event
            if raised is not None:
                raise raised
        except BaseException as exc:
            error = exc
            raise
        finally:
            await self._end(control, lease, run, error, trace)

    def stop_run(self, run_id: str) -> bool:
        """Ask the run ``run_id`` to stop, as ``stop`` does; False when it is not running here."""
        control = self._runs.get(run_id)
        if control is None:
            return False
        control.stop()
        return True

    def _track(self, control: RunControl, lease: ThreadLease | None, nested: Nested | None) -> None:
        """Make the run reachable by ``stop``, ``stop_run`` and its lease's stop requests.

        A subgraph's run is not: it is stopped with its parent's.
        """
        if nested is not None:
            return
        self._active[control.thread] = self._runs[control.run_id] = control
        if lease is not None:
            lease.on_stop = control.stop
            if not lease.kept:  # a kept lease's caller renews it, and relays its stop requests
                lease.start_heartbeat()

    async def _end(
        self,
        control: RunControl,
        lease: ThreadLease | None,
        run: Run[S] | None,
        error: BaseException | None,
        trace: RunTrace | None,
    ) -> None:
        """Forget the run, let its thread go, and tell the hooks and the trace how it ended."""
        if self._active.get(control.thread) is control:
            del self._active[control.thread]
        if self._runs.get(control.run_id) is control:
            del self._runs[control.run_id]
        if lease is not None:
            await lease.release()
        status = "error" if error is not None or run is None else run.state.execution_meta.status
        if self.hooks.hooks and run is not None:
            await self.hooks.run_ended(control, status, error)
        if trace is not None:
            trace.end(status, error)

    async def _hold(
        self,
        control: RunControl,
        key: ThreadKey | None,
        config: Mapping[str, Any],
        run_id: str,
        nested: Nested | None,
    ) -> ThreadLease | None:
        """The thread's lease, unless the run's handle was stopped first (None: nothing held).

        A bad ``checkpoint_id`` fails here, before the thread is held. A subgraph's
        run holds nothing: it runs under its parent's lease.
        """
        if nested is not None:
            return None
        if self.checkpointer is None:
            if checkpoint_of(config) is not None:
                raise StateError("this graph has no checkpointer, so no checkpoint to start from")
            check_pausable(self)
        if control.stop_requested or self.checkpointer is None:
            return None
        lease = await self._take(key, config, run_id, control)
        if lease.requested is not None:  # a stop came before the run took its caller's lease
            control.stop(lease.requested)
        if control.stop_requested:  # stopped while it waited for the lease: it never began
            await lease.release()
            return None
        return lease

    async def _take(
        self, key: ThreadKey | None, config: Mapping[str, Any], run_id: str, control: RunControl
    ) -> ThreadLease:
        """Take the thread's lease before anything is read (a graph with a checkpointer).

        The run's handle may carry a lease taken for it already (a run queue's
        claim, ``lease_owner``), which the run continues instead of taking
        another, from the stamp read with it (``lease_stamp``, used once).
        """
        assert self.checkpointer is not None  # the run loop asks only then
        if key is None:
            raise StateError("this graph has a checkpointer: pass config={'thread_id': ...}")
        policy = self.leases.for_run(config)
        owner, stamp, control.lease_stamp = control.lease_owner, control.lease_stamp, None
        if owner is None and (deferred := warm_lease(self, key, run_id, policy, config)):
            return deferred  # taken by the input's save (see start_held)
        return await take_thread(self.checkpointer, key, run_id, policy, owner=owner, stamp=stamp)

    async def _begin_turn(self, run: Run[S]) -> Outcome:
        """Find the first node, then save the input, and where the run goes on, before it runs.

        A run that dies after this save is continued by ``invoke(None)`` at that
        node, inside the same turn (so ``rollback`` still discards all of it).
        """
        first = run.next_node
        if first == START:
            try:
                first = await self._plan(run, ((START, None),))
            except TenxGraphError as exc:
                return Fail(START, exc)
        if run.new_input and run.session is not None:
            run.state.execution_meta.set_next_node(first)
            await self._save(run, [], START)
        return Next(first)

    async def _conclude(
        self, run: Run[S], outcome: Outcome
    ) -> tuple[list[StreamEvent], TenxGraphError | None]:
        """End the run as ``outcome`` says: save it; return its last events and what to raise."""
        if isinstance(outcome, Pause):
            paused = await self._pause(
                run, outcome.node, outcome.resume_at, outcome.value, outcome.when
            )
            return [paused, self._result(run)], None
        if isinstance(outcome, Finish):
            try:
                result = await self._finish(run, outcome.status)
            except UnstorableStateError as exc:  # the fields named are back as saved
                outcome = Fail(run.state.execution_meta.current_node, exc, resume_at=END)
            else:
                if outcome.status == "completed" and run.session is not None:
                    self.warm.keep(run.session)
                return [result], None
        if isinstance(outcome, Fail):
            return [await self._fail(run, outcome)], outcome.raised()
        assert isinstance(outcome, Displaced)  # Next never reaches here
        session = run.session
        if outcome.request == "rollback" and session is not None and session.lease:
            # still the holder: discard the turn before another run can build on it
            await discard_unfinished(session.checkpointer, session.key, session.lease)
        return [], outcome.raised(str(run.ctx.config["thread_id"]))

    async def _start(
        self,
        input: Mapping[str, Any],
        config: dict[str, Any],
        invocation_state: dict[str, Any] | None,
        inline_sync: bool,
        lease: ThreadLease | None,
        control: RunControl,
        nested: Nested | None = None,
    ) -> Run[S]:
        """Load the thread and apply the input; see ``entry`` for where the run enters."""
        input = check_input(input)
        session, state = await self._open(lease, config, nested)
        meta = state.execution_meta
        if meta.status == "interrupted":  # maybe waiting for a client's tool results
            input = settle_remote_input(state, input)
        first = self.edges.get(START, START)
        entry, goto_tasks = run_entry(meta, input, config.get("thread_id"), self.nodes, first)
        input_messages = input_messages_of(input, state, self.id_generator)
        added: list[Message] = []
        if entry.new_turn:
            turn_start = 0 if session is None else session.base
            if meta.step or meta.turn_start != turn_start:  # a fresh state has both already
                meta.step, meta.turn_start = 0, turn_start
            # a goto's tasks replace what the last turn left behind (a fresh state has neither)
            if goto_tasks or meta.tasks or meta.joins or meta.subgraphs:
                meta.tasks, meta.task_writes, meta.joins, meta.subgraphs = goto_tasks, {}, {}, {}
            if state.context:  # it may end in tool calls without results
                runner, added = answer_pending_calls(state, input_messages, meta.status, self)
                if runner is not None and "goto" not in input:  # such calls run first
                    entry = Entry(runner, True)
        if "resume" in input and meta.interrupt_kind in ("inside", REMOTE_CALLS_KIND):
            meta.resume_values = [*meta.resume_values, input["resume"]]
        meta.set_status("running")
        if meta.error is not None or meta.stop_requested or meta.interrupt_kind is not None:
            meta.error, meta.stop_requested = None, False
            meta.interrupt_kind = meta.interrupt_value = None
        if "state" in input:
            self.schema.apply_input(state, input["state"])
        added += state.append_messages(input_messages)
        if session is not None:
            session.record(added)
        ctx = RunContext(  # by position, as RunContext.for_task: keywords cost twice as much
            START,
            config,
            invocation_state if invocation_state is not None else {},
            InterruptScope([], control.thread),
            self.id_generator,
            self.context_manager,
            inline_sync,  # run_sync_inline
            control.run_id,
            self.workers,
            session if nested is None else nested.stored_thread,
        )
        run = Run(state, ctx, session, control, entry.node, entry.skip_interrupt_before, lease)
        if nested is not None:
            run.namespace, run.forward = nested.namespace, True
        run.new_input = entry.new_turn and (bool(added) or "state" in input)
        run.limit = int(config.get("recursion_limit", self.recursion_limit))
        return run

    async def _pause(
        self, run: Run[S], node: str, resume_at: str, value: Any, when: InterruptKind
    ) -> InterruptEvent:
        meta = run.state.execution_meta
        meta.status, meta.next_node, meta.interrupt_value = "interrupted", resume_at, value
        meta.interrupt_kind = when
        await self._save(run, [], node, last=True)
        return InterruptEvent(node, value, when)

    async def _fail(self, run: Run[S], failed: Fail) -> ErrorEvent:
        node, exc = failed.node, failed.error
        run.state.error(f"{type(exc).__name__}: {exc}")
        run.state.execution_meta.next_node = failed.resume_at or node
        await self._save(run, [], node, last=True)
        return ErrorEvent(node, f"{type(exc).__name__}: {exc}")

    async def _finish(self, run: Run[S], status: str) -> RunResult:
        state = run.state
        if self.context_manager is not None:
            state = await self.context_manager.atrim_context(state)
            run.state = state
        meta = state.execution_meta
        meta.set_status("completed" if status == "completed" else "stopped")
        pending = meta.next_node is not None or meta.interrupt_value is not None  # often neither
        if pending and not meta.tasks:  # a stopped parallel step continues with invoke(None)
            meta.clear_pause()
        if meta.stop_requested != (status == "stopped"):
            meta.stop_requested = status == "stopped"
        if run.session is not None:
            await self._save(run, [], meta.current_node, last=True)
        return self._result(run)

    def _result(self, run: Run[S]) -> RunResult:
        meta = run.state.execution_meta
        interrupt = None
        if meta.status == "interrupted":
            interrupt = InterruptEvent(meta.current_node, meta.interrupt_value, "paused")
        ctx = run.ctx
        return RunResult(run.produced, run.state, interrupt, ctx.invocation_state, ctx.run_id)
