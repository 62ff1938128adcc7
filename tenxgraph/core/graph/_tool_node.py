"""``ToolNode``: runs the tool calls of the last assistant message, concurrently.

Every call gets exactly one tool message holding one ``ToolResultBlock``, in
the order of the calls. Bad arguments, unknown tools, timeouts and tools that
raise become failed results the model can read, never a dead run. A call
whose arguments the model adapter refused (not a JSON object, see
``tenxgraph.core.state.tool_arguments``) is never run, nor passed to the
wrappers: its result quotes the error and the start of the arguments. A call
that finished is made storable (``ToolOutcome.storable``), written to the
tool ledger and saved at once, so a crash, an interrupt or a failed save
elsewhere in the step never runs it twice. Each start of a call is counted
and saved before the call runs: a call whose runs died ``max_starts`` times
(a tool that crashes its process) is answered with an error instead of being
started again.

Each call has an idempotency key (``RunContext.tool_call_key``), given to a
tool that has an ``idempotency_key`` parameter: the same for every start of
the call (a wrapper's retry, a re-run after a crash), so a tool that hands it
to an external API makes the window between its return and the save of its
result harmless. It follows the stored call, not the call a wrapper passes
on, and remote calls carry it in the pause's value.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from tenxgraph.core.graph._interrupt import GraphInterrupt, InterruptScope
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext, SaveProgress, Written
from tenxgraph.core.graph._remote_tools import RemoteTool, remote_pause
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.graph._toolsets import Toolset, index_tools
from tenxgraph.core.graph._tracing import traced_tool, tracer
from tenxgraph.core.graph._updates import Updates
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.json_policy import check_json_data, storable_data, storable_text
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    MediaRef,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.pairing import last_tool_request, unanswered_calls
from tenxgraph.core.state.tool_arguments import invalid_tool_args
from tenxgraph.core.state.tool_result import ToolResult
from tenxgraph.errors import ConfigError

__all__ = [
    "INTERRUPTED_CALL_TEXT",
    "STORAGE_NOTES_KEY",
    "ToolCallWrapper",
    "ToolNode",
    "ToolOutcome",
    "close_interrupted_calls",
    "execute_tool",
]

STORAGE_NOTES_KEY = "storage_notes"
"""Tool message metadata key: where text the store cannot hold was replaced by U+FFFD."""

INTERRUPTED_CALL_TEXT = (
    "[tenxgraph: this tool call was interrupted: the conversation moved on before the call "
    "finished, so it has no result]"
)
"""Output of the failed result that answers a call left without one: its run stopped or
died, or new input came first."""


@dataclass(slots=True)
class ToolOutcome:
    """A finished tool call: what the model reads, and the state update it asks for."""

    output: Any
    is_error: bool = False
    update: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """Where text the store cannot hold was replaced (see ``json_policy``)."""

    def entry(self) -> dict[str, Any]:
        """The tool ledger's JSON shape."""
        entry = {"output": self.output, "is_error": self.is_error, "update": self.update}
        if self.notes:
            entry["notes"] = self.notes
        return entry

    def storable(self, tool: str) -> ToolOutcome:
        """The outcome as every store can hold it; never raises, for the tool already ran.

        NUL characters and lone surrogates in the output or the update, at any
        depth, become U+FFFD, each noted. A value that cannot be stored at all
        in the output (NaN, infinity, nesting deeper than 100 levels) makes the
        call a failed result naming the tool and the field; its update is then
        not applied. The update's values are otherwise judged by the state class.
        """
        notes: list[str] = []
        try:
            output = storable_data(_model_output(self.output), "output", notes)
            update = storable_data(self.update, "ToolResult.state", notes)
            if not _is_blocks(output):  # blocks and media are validated by the result block
                check_json_data(output, "output")
        except Exception as exc:  # the call ran: its result must be recorded
            problem = storable_text(str(exc))
            return ToolOutcome(
                f"tool {tool!r} ran, but its result cannot be stored: {problem}; "
                "its state update was not applied",
                True,
            )
        return ToolOutcome(output, self.is_error, update, [*self.notes, *notes])

    def result_block(self, call_id: str) -> ToolResultBlock:
        """The block the model reads for call ``call_id``."""
        return ToolResultBlock(
            call_id=call_id,
            output=self.output,
            is_error=self.is_error,
            status="failed" if self.is_error else "completed",
        )

    def message(self, call_id: str, message_id: str | int) -> Message:
        """The tool message holding ``result_block``; ``notes`` go in its metadata."""
        metadata = {STORAGE_NOTES_KEY: self.notes} if self.notes else {}
        return Message(
            role="tool",
            content=[self.result_block(call_id)],
            message_id=message_id,
            metadata=metadata,
        )


ToolCallWrapper = Callable[
    [ToolCallBlock, Callable[[ToolCallBlock], Awaitable[ToolOutcome]]], Awaitable[ToolOutcome]
]
"""``async def wrap(call, handler) -> ToolOutcome``: runs around each call (middleware)."""


class ToolNode(Node):
    """Run the tool calls of the last assistant message and append their results."""

    def __init__(
        self,
        tools: Sequence[Callable[..., Any] | Tool | Toolset],
        *,
        timeout: float | None = None,
        wrappers: Sequence[ToolCallWrapper] = (),
        max_starts: int = 3,
    ) -> None:
        """``timeout`` (seconds) applies to each call unless its ``Tool`` sets its own.

        ``wrappers`` run around every call, the first outermost (middleware's
        ``wrap_tool_call``); each may change the call or answer it itself.
        ``max_starts`` is how many times one call may be started when its runs
        keep dying before it finishes (resumed after a crash each time).
        """
        if max_starts < 1:
            raise ConfigError(f"max_starts must be >= 1, got {max_starts}")
        self.tools = index_tools(tools)
        self.timeout = timeout
        self.wrappers = tuple(wrappers)
        self.max_starts = max_starts

    async def run(
        self, state: AgentState, ctx: RunContext
    ) -> AsyncIterator[SaveProgress | Written | NodeOutput]:
        """Execute pending calls concurrently; yield one ordered update with all results."""
        async for item in self._run(state, ctx, live=True):
            yield item

    async def run_to_end(
        self, state: AgentState, ctx: RunContext, save: Callable[[], Awaitable[None]]
    ) -> Any:
        """``run`` for a caller that keeps only the result: what the calls write waits."""
        value = None
        async for item in self._run(state, ctx, live=False):
            if isinstance(item, NodeOutput):
                value = item.value
            elif isinstance(item, SaveProgress):
                await save()
        return value

    async def _run(
        self, state: AgentState, ctx: RunContext, *, live: bool
    ) -> AsyncIterator[SaveProgress | Written | NodeOutput]:
        asked = last_tool_request(state.context)
        calls, refused = _calls_of(asked)
        if calls and self.tools.toolsets:  # (re)connect before the calls are looked up
            await self.tools.aprepare()
        message_id = "" if asked is None else asked.message_id
        ledger = state.execution_meta.tool_ledger
        for call in calls:
            if call.id in refused and call.id not in ledger:
                refusal = ToolOutcome(refused[call.id], is_error=True).storable(call.name)
                ledger[call.id] = refusal.entry()
        remote = {call.id for call in calls if isinstance(self.tools.get(call.name), RemoteTool)}
        local = [call for call in calls if call.id not in ledger and call.id not in remote]
        pending = self._count_starts(local, state)
        if pending:
            yield SaveProgress()  # the starts are durable before any call runs
        interrupts: list[tuple[ToolCallBlock, GraphInterrupt]] = []
        async for progress in self._settle(pending, message_id, state, ctx, interrupts, live):
            yield progress
        if interrupts:
            yield SaveProgress()
            call, signal = min(interrupts, key=lambda item: calls.index(item[0]))
            if call.id != pending[0].id:  # only the first pending call holds the node's answers
                state.execution_meta.resume_values = []
            raise signal
        waiting = [call for call in calls if call.id in remote and call.id not in ledger]
        if waiting:  # the local calls are done: the client runs the rest (see _remote_tools)
            answers = ctx.interrupt_scope.answers
            pause = remote_pause(
                waiting,
                self.tools,
                state.execution_meta,
                answers,
                key_of=lambda call_id: ctx.tool_call_key(message_id, call_id),
            )
            if pause is not None:
                raise pause
        yield NodeOutput(Updates(_results(calls, state, ctx.id_generator)))

    def _count_starts(self, pending: list[ToolCallBlock], state: AgentState) -> list[ToolCallBlock]:
        """Count a start of each pending call; answer those started ``max_starts`` times."""
        meta = state.execution_meta
        starting = []
        for call in pending:
            starts = meta.tool_starts.get(call.id, 0)
            if starts >= self.max_starts:
                meta.tool_ledger[call.id] = ToolOutcome(
                    f"tool {call.name!r} was started {starts} times and its run stopped before "
                    "it finished each time; it is not started again",
                    True,
                ).entry()
            else:
                meta.tool_starts[call.id] = starts + 1
                starting.append(call)
        return starting

    async def _settle(
        self,
        pending: list[ToolCallBlock],
        message_id: str | int,
        state: AgentState,
        ctx: RunContext,
        interrupts: list[tuple[ToolCallBlock, GraphInterrupt]],
        live: bool,
    ) -> AsyncIterator[SaveProgress | Written]:
        """Run ``pending`` (calls of message ``message_id``) concurrently into the ledger.

        Collects the calls that interrupted. ``live`` (a stream reads the
        node): what the calls write or forward (``get_stream_writer``, an
        agent tool's events) is streamed as they run. A call's idempotency key is made
        from the stored call, so what a wrapper passes on keeps it.
        """
        ledger = state.execution_meta.tool_ledger

        async def settle(call: ToolCallBlock, scope: InterruptScope) -> None:
            key = ctx.tool_call_key(message_id, call.id)

            async def innermost(wanted: ToolCallBlock) -> ToolOutcome:
                return await execute_tool(
                    self.tools, wanted, state, ctx, scope, self.timeout, key=key
                )

            handler: Callable[[ToolCallBlock], Awaitable[ToolOutcome]] = innermost
            for wrapper in reversed(self.wrappers):
                handler = _around(wrapper, handler)
            found = tracer()
            running = handler(call)
            if found is not None:
                running = traced_tool(found, call, running, ctx.config)
            try:
                outcome = await running
            except GraphInterrupt as signal:
                interrupts.append((call, signal))
                state.execution_meta.tool_starts.pop(call.id, None)  # a pause is no crash
                return
            ledger[call.id] = outcome.storable(call.name).entry()

        holder = pending[0].id if pending else None
        own = ctx.interrupt_scope
        tasks = [
            asyncio.ensure_future(
                settle(
                    call,
                    own
                    if call.id == holder
                    else InterruptScope(
                        thread=own.thread,
                        namespace=own.namespace,
                        writer=own.writer,
                        forward=own.forward,
                    ),
                )
            )
            for call in pending
        ]
        sink = ctx.custom if live else None
        running: set[asyncio.Future[None]] = set(tasks)
        try:
            while running:
                if sink is None:
                    await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                else:  # what the calls write or forward is streamed while they run
                    await sink.written_or_done(running)
                    if sink:
                        yield Written()
                for done in [task for task in running if task.done()]:
                    running.discard(done)
                    done.result()
                    if not interrupts:  # the entry is durable before anything else can fail
                        yield SaveProgress()
        finally:
            for task in tasks:
                task.cancel()


def close_interrupted_calls(
    state: AgentState, new_id: Callable[[], str | int], answered: Set[str] = frozenset()
) -> Updates | None:
    """Results for the calls of the last tool group that have none, or None if all have one.

    Used when a thread moves on (new input) after its run stopped or died
    inside the tools: a call that finished gets its ledger result, any other
    a failed result saying ``INTERRUPTED_CALL_TEXT``, so the stored log stays
    paired and the model is told plainly. Calls in ``answered`` (results the
    new input brings) are left alone.
    """
    pending = [call for call in unanswered_calls(state.context) if call.id not in answered]
    if not pending:
        return None
    ledger = state.execution_meta.tool_ledger
    for call in pending:
        if call.id not in ledger:
            ledger[call.id] = ToolOutcome(INTERRUPTED_CALL_TEXT, True).entry()
    return Updates(_results(pending, state, new_id))


def _results(
    calls: list[ToolCallBlock], state: AgentState, new_id: Callable[[], str | int]
) -> list[tuple[str, Any]]:
    """One tool message per settled call, in call order, plus their ``ToolResult.state``."""
    meta = state.execution_meta
    updates: list[tuple[str, Any]] = []
    for call in calls:
        meta.tool_starts.pop(call.id, None)
        entry = meta.tool_ledger.pop(call.id, None)
        if entry is None:  # answered in an earlier step
            continue
        outcome = ToolOutcome(**entry)
        message = outcome.message(call.id, new_id())
        updates.append((f"tool {call.name!r} (call {call.id})", [message]))
        if outcome.update:
            updates.append((f"tool {call.name!r} ToolResult.state", outcome.update))
    return updates


async def execute_tool(
    tools: Mapping[str, Tool],
    call: ToolCallBlock,
    state: AgentState,
    ctx: RunContext,
    scope: InterruptScope | None = None,
    default_timeout: float | None = None,
    *,
    key: str,
) -> ToolOutcome:
    """Run one call; every failure becomes an error outcome (only interrupts propagate).

    ``key`` is the call's idempotency key, for a tool with an ``idempotency_key`` parameter.
    """
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return ToolOutcome(f"unknown tool {call.name!r}; available tools: {known}", True, {})
    try:
        kwargs = tool.validate(call.args)
    except ValueError as exc:
        return ToolOutcome(str(exc), True, {})
    injected = {
        "state": state,
        "config": ctx.config,
        "tool_call_id": call.id,
        "invocation_state": ctx.invocation_state,
        "idempotency_key": key,
    }
    kwargs.update({name: injected[name] for name in tool.injected})
    timeout = tool.timeout or default_timeout
    try:
        value = await ctx.call(
            tool.function,
            (),
            kwargs,
            is_async=tool.is_async,
            scope=scope,
            concurrent=True,
            run_limit=timeout or None,
        )
    except GraphInterrupt:
        raise
    except TimeoutError:
        return ToolOutcome(f"tool {call.name!r} timed out after {timeout} seconds", True, {})
    except Exception as exc:
        return ToolOutcome(f"tool {call.name!r} failed: {type(exc).__name__}: {exc}", True, {})
    if isinstance(value, ToolResult):
        return ToolOutcome(_model_output(value.message), False, dict(value.state))
    return ToolOutcome(_model_output(value), False, {})


def _around(
    wrapper: ToolCallWrapper, inner: Callable[[ToolCallBlock], Awaitable[ToolOutcome]]
) -> Callable[[ToolCallBlock], Awaitable[ToolOutcome]]:
    async def call(wanted: ToolCallBlock) -> ToolOutcome:
        return await wrapper(wanted, inner)

    return call


def _calls_of(asked: Message | None) -> tuple[list[ToolCallBlock], dict[str, str]]:
    """The calls of ``asked``, and the refusal text of those not to run."""
    if asked is None:
        return [], {}
    return asked.tool_calls(), invalid_tool_args(asked)


def _model_output(value: Any) -> Any:
    """Turn a tool's return value into something a ToolResultBlock stores as JSON."""
    if value is None or isinstance(value, str | int | float | bool | MediaRef):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
        return value
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _is_blocks(output: Any) -> bool:
    """True for a ``MediaRef`` or a list of content blocks (pydantic models)."""
    return isinstance(output, BaseModel) or (
        isinstance(output, list) and bool(output) and all(isinstance(v, BaseModel) for v in output)
    )
