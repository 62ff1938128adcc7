"""A parallel step: several tasks run concurrently, each saved as it finishes, merged in order.

The semantics are LangGraph's (its "super-steps"): every task of a step reads
the state as it was when the step began; what each returns is kept apart
(``TaskWrite``) until every task has finished, then merged through the
state's reducers in the step's merge order, never in finish order: the
edge-triggered tasks by node name, then the ``Send`` tasks in the order
sent (``ExecMeta.tasks`` holds them in that order). Routers then run on the
merged state and the next step is planned (``RunSteps._plan``).

Durability: with a checkpointer, a finished task's write is saved at once
in ``ExecMeta.task_writes`` (a save of the small state row, never the
thread's messages; saves are serialized, and writes that finish during one
go out together in the next). A crash, a failure, an interrupt or a stop
therefore loses no finished task: continuing the step runs only the tasks
without a write. Until the step merges, the state's fields and messages are
as the step found them, and the finished writes are visible in
``execution_meta.task_writes``.

A graph whose steps all run one node never comes here: the run loop's
one-node path is untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.graph._events import MessageEvent, StreamEvent, SubgraphEvent, UpdateEvent
from tenxgraph.core.graph._interrupt import GraphInterrupt, InterruptScope
from tenxgraph.core.graph._node import (
    FunctionNode,
    Node,
    NodeOutput,
    RunContext,
    SaveProgress,
    Written,
)
from tenxgraph.core.graph._run_control import Fail, Outcome, Pause
from tenxgraph.core.graph._steps import Run, RunSteps, forward_to, returned_error
from tenxgraph.core.graph._stream_writer import written_before
from tenxgraph.core.graph._updates import Applied, TaskWrite
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.errors import NodeError, RecursionLimitError, StateError
from tenxgraph.utils.constants import END

__all__ = ["ParallelSteps"]

S = TypeVar("S", bound=AgentState)


class _Step:
    """One parallel step in progress: its tasks, the writes finished, what went wrong."""

    __slots__ = ("children", "failures", "interrupts", "lock", "saved", "savers", "tasks", "writes")

    def __init__(self, tasks: list[tuple[str, Any, bool]], writes: dict[int, TaskWrite]) -> None:
        self.tasks = tasks
        """(node, Send arg, is a Send) per task, in merge order."""
        self.writes = writes
        self.failures: dict[int, BaseException] = {}
        self.interrupts: dict[int, GraphInterrupt] = {}
        self.savers: list[asyncio.Future[None]] = []
        self.children: list[asyncio.Task[None]] = []  # pragma: no mutate (_run_tasks sets it)
        self.lock = asyncio.Lock()
        self.saved = len(writes)  # pragma: no mutate (another value: one more save, the same)


class ParallelSteps(RunSteps[S]):
    """The parallel half of ``CompiledGraph``'s run loop (the ``PARALLEL`` step)."""

    max_concurrency: int | None
    """At most this many tasks of one step run at once (None: all of them)."""

    async def _parallel_step(
        self, run: Run[S], progress: bool
    ) -> tuple[list[StreamEvent], Outcome]:
        """Run the tasks of ``ExecMeta.tasks`` that have no write yet; merge when all have."""
        meta = run.state.execution_meta
        tasks = [(t["node"], t.get("arg"), "arg" in t) for t in meta.tasks]
        names = [name for name, _, _ in tasks]
        control = run.control
        if control.stop_requested:
            return [], control.outcome()
        if not run.skip_interrupt_before:
            for name in names:
                if name in self.interrupt_before:
                    return [], Pause(name, PARALLEL, None, "before")
        run.skip_interrupt_before = False
        label = "[" + ", ".join(dict.fromkeys(names)) + "]"
        if meta.step >= run.limit:
            return [], Fail(PARALLEL, RecursionLimitError(run.limit, [*run.path, label]))
        run.path.append(label)
        meta.enter_node(PARALLEL)
        run.ctx.node = PARALLEL
        writes = {int(i): TaskWrite.decode(w, self.schema) for i, w in meta.task_writes.items()}
        step = _Step(tasks, writes)
        context_size = len(run.state.context)
        stopped = await self._run_tasks(run, step)
        unsaved: BaseException | None = None
        for saver in step.savers:  # a save a stop left running finishes before the next one
            try:
                await saver
            except Exception as exc:
                unsaved = unsaved or exc
        if stopped:  # every finished task's write went out with its own save
            return [], control.outcome()
        if unsaved is not None:  # the thread could not be saved: the step fails
            return [], Fail(label, unsaved, resume_at=PARALLEL)
        if len(run.state.context) != context_size:
            error = NodeError(label, "nodes of a parallel step must return their messages")
            return [], Fail(label, error, resume_at=PARALLEL)
        if step.failures or step.interrupts:
            return [], await self._unfinished(run, step)
        return await self._merge_step(run, step, progress)

    async def _streamed_parallel_step(self, run: Run[S]) -> AsyncIterator[StreamEvent | Outcome]:
        """``_parallel_step`` for a stream consumer: what its tasks stream, as they stream it.

        The step runs in a task of its own (a stop cancels that one); the
        run's task forwards what the tasks put in the run's ``CustomSink``
        (deltas, custom data, subgraphs' events) until it ends, then the
        step's own events in merge order.
        """
        sink = run.ctx.custom
        assert sink is not None  # a stream consumer's run has one
        run.control.yielded()  # the step's task is the one a stop cancels
        step = asyncio.ensure_future(self._parallel_step(run, True))
        try:
            while not step.done():
                await sink.written_or_done((step,))
                for streamed in sink.take():
                    yield streamed
        finally:
            if not step.done():  # the consumer stopped reading: the step ends before the run
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
        run.control.yielded()  # the next step's node runs in the run's task again
        events, outcome = step.result()
        for event in written_before(sink, events):
            yield event
        yield outcome

    async def _run_tasks(self, run: Run[S], step: _Step) -> bool:
        """Run the step's unfinished tasks concurrently; True when a stop cancelled them."""
        control = run.control
        tasks = run.state.execution_meta.tasks
        paused = next((i for i, task in enumerate(tasks) if task.get("paused")), None)
        limit = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None
        todo = [i for i in range(len(step.tasks)) if i not in step.writes]
        children = step.children = [
            asyncio.create_task(self._task(run, step, i, i == paused, limit)) for i in todo
        ]
        try:
            control.arm()
            await asyncio.gather(*children, return_exceptions=True)
        except asyncio.CancelledError:
            control.disarm()
            for child in children:
                child.cancel()
            await asyncio.gather(*children, return_exceptions=True)
            if not control.stop_requested:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return True
        control.disarm()
        return False

    async def _task(
        self,
        run: Run[S],
        step: _Step,
        index: int,
        paused: bool,
        limit: asyncio.Semaphore | None,
    ) -> None:
        """Run task ``index``; keep its write (saved at once) or what it raised."""
        name = step.tasks[index][0]
        meta = run.state.execution_meta
        try:
            if limit is None:
                output = await self._output(run, step, index, paused)
            else:
                async with limit:
                    output = await self._output(run, step, index, paused)
            try:
                write = self.schema.write_of(run.state, output, self._where[name])
            except StateError as exc:
                raise returned_error(name, self._where[name], exc) from None
        except GraphInterrupt as exc:
            step.interrupts[index] = exc
            if self.hooks.hooks:
                await self.hooks.node_ended(run.control, name, meta.step, exc)
            return
        except Exception as exc:
            step.failures[index] = exc
            current = asyncio.current_task()
            for child in step.children:  # the step fails: its other tasks stop
                if child is not current:
                    child.cancel()
            if self.hooks.hooks:
                await self.hooks.node_ended(run.control, name, meta.step, exc)
            return
        step.writes[index] = write
        if self.hooks.hooks:
            await self.hooks.node_ended(run.control, name, meta.step, None)
        if run.session is not None:
            meta.task_writes[str(index)] = write.encode(self.schema)
            await self._shielded_save(run, step)

    async def _output(self, run: Run[S], step: _Step, index: int, paused: bool) -> Any:
        """Run task ``index``'s node over its input (the state, or its ``Send`` arg)."""
        name, arg, is_send = step.tasks[index]
        node = self.nodes.get(name)
        if node is None:
            raise NodeError(name, "the saved step names a node this graph does not have")
        given = run.state
        if is_send:  # a function gets the arg as it is; any other node, a state
            given = arg if isinstance(node, FunctionNode) else self._state_of(name, arg)
        answers = list(run.state.execution_meta.resume_values) if paused else []
        segment = f"{name}:{index}"
        scope = InterruptScope(
            answers,
            thread=run.control.thread,
            subgraphs=run.state.execution_meta.subgraphs,
            namespace=f"{run.namespace}|{segment}" if run.namespace else segment,
            writer=run.ctx.writer(name),
            forward=forward_to(run),
        )
        ctx = run.ctx.for_task(name, scope)
        if self.hooks.hooks:
            await self.hooks.node_started(run.control, name, run.state.execution_meta.step)

        async def save() -> None:
            await self._shielded_save(run, step, always=True)

        running = self._task_output(run, node, given, ctx, save)
        return await (running if run.trace is None else run.trace.task(name, running))

    async def _task_output(
        self,
        run: Run[S],
        node: Node,
        given: Any,
        ctx: RunContext,
        save: Callable[[], Awaitable[None]],
    ) -> Any:
        """A task's output; a stream consumer gets its deltas through the run's sink."""
        sink = run.ctx.custom
        if sink is None or not node.streams or isinstance(node, FunctionNode):
            return await node.run_to_end(given, ctx, save)  # a function's writes reach the sink
        value = None
        async for item in node.run(given, ctx):
            if isinstance(item, NodeOutput):
                value = item.value
            elif isinstance(item, SaveProgress):
                await save()
            elif isinstance(item, Written):  # what it wrote is in the sink already
                continue
            elif run.forward or type(item) is not SubgraphEvent:
                sink.put(item)
        return value

    def _state_of(self, name: str, arg: Any) -> Any:
        """A ``Send`` arg for a node that reads a state: one, or a dict of its fields."""
        state_class = self.schema.state_class
        if isinstance(arg, state_class):
            return arg
        if isinstance(arg, dict):
            try:
                return state_class.model_validate(arg)
            except ValueError as exc:
                raise NodeError(name, f"its Send arg is no {state_class.__name__}: {exc}") from None
        raise NodeError(
            name,
            f"a Send to a {type(self.nodes[name]).__name__} needs a {state_class.__name__} "
            f"(or a dict of its fields) as its arg, got {type(arg).__name__}",
        )

    async def _shielded_save(self, run: Run[S], step: _Step, *, always: bool = False) -> None:
        """``_save_writes``, run to its end even when the task awaiting it is cancelled.

        A save cancelled halfway could commit while the run believes it did
        not; the step waits for every save it started before it ends.
        """
        saver = asyncio.ensure_future(self._save_writes(run, step, always))
        step.savers.append(saver)
        await asyncio.shield(saver)

    async def _save_writes(self, run: Run[S], step: _Step, always: bool = False) -> None:
        """Save the writes finished so far, unless a save since already has (or ``always``)."""
        if run.session is None:
            return
        async with step.lock:
            count = len(run.state.execution_meta.task_writes)
            if count == step.saved and not always:
                return
            await self._save(run, [], PARALLEL)
            step.saved = count  # pragma: no mutate (another value: one more save, the same)

    async def _unfinished(self, run: Run[S], step: _Step) -> Outcome:
        """A step a task failed or interrupted: fail or pause there; the step continues later."""
        meta = run.state.execution_meta
        if step.failures:
            index = min(step.failures)
            name = meta.current_node = step.tasks[index][0]
            return Fail(name, step.failures[index], resume_at=PARALLEL)
        index = min(step.interrupts)
        meta.current_node = step.tasks[index][0]
        for position, task in enumerate(meta.tasks):
            if position == index:
                if not task.get("paused"):
                    meta.resume_values = []  # another task's answers are not this one's
                task["paused"] = True
            else:
                task.pop("paused", None)
        exc = step.interrupts[index]
        return Pause(step.tasks[index][0], PARALLEL, exc.value, exc.kind)

    async def _merge_step(
        self, run: Run[S], step: _Step, progress: bool
    ) -> tuple[list[StreamEvent], Outcome]:
        """Merge a finished step's writes in merge order, plan the next step, save."""
        meta = run.state.execution_meta
        order = sorted(step.writes)
        pairs = [(step.tasks[i][0], step.writes[i]) for i in order]
        try:
            merged = self.schema.merge_writes(run.state, pairs)
        except StateError as exc:
            return [], Fail(PARALLEL, exc, resume_at=PARALLEL)
        meta.tasks, meta.task_writes = [], {}
        if meta.resume_values:
            meta.resume_values = []
        if meta.subgraphs:  # the tasks' subgraphs finished with them
            meta.subgraphs.clear()
        try:
            next_node = await self._plan(run, [(name, write.goto) for name, write in pairs])
        except Exception as exc:  # the merge stands; retrying ends the turn
            return [], Fail(PARALLEL, exc, resume_at=END)
        added = Applied([m for applied in merged for m in applied.messages])
        run.produced.extend(added.messages)
        if run.session is not None:
            failed = await self._commit(run, PARALLEL, added, next_node, progress)
            if failed is not None:
                return [], failed
        events: list[StreamEvent] = []
        if progress:
            for (name, _), applied in zip(pairs, merged, strict=True):
                events += [MessageEvent(name, message) for message in applied.messages]
                events.append(UpdateEvent(name, meta.step, tuple(applied.messages), applied.values))
        for name, _ in pairs:
            if name in self.interrupt_after:
                return events, Pause(name, next_node, None, "after")
        return events, self._goto[next_node]
