"""Remote tools: the model calls a tool that runs in the client, and the run goes on.

A graph declares a ``RemoteTool`` (``tenxgraph.core.graph``); when the model
calls it, the run pauses (an interrupt item with ``"kind": "remote_tool_calls"``
whose value is ``{"type": "remote_tool_calls", "calls": [{"call": ...}]}``,
see docs/tools.md; the words are shared with the runtime in
``tenxgraph.core.state.remote_calls``). The
server keeps that run open: it streams one ``remote_tool_call`` event per call
(the ``RemoteToolCallBlock`` JSON) and waits for
``POST /threads/{thread_id}/runs/{run_id}/tool_results``; once every call is
answered the same run, and its stream, go on (see docs/server.md).

A stream given ``tools`` shows each call as a ``RemoteToolCallPart``, runs
the handler registered under its name and posts the result, all while the
stream stays open. A run that ends paused instead (a server that does not
wait, or a call the server no longer waits for) is answered by resuming the
thread (``command={"resume": {"tool_results": [...]}}``) in a new run whose
events continue the same iterator; the paused run's ``end`` part is then not
shown, since the exchange has not ended.

Decisions:

- A handler is called with the call's arguments as keyword arguments, like
  the function of an in-process tool. It may be sync (run in a worker thread,
  so the loop keeps serving) or async. Calls are answered one at a time, in
  the order the server streams them.
- A handler that raises, or a call naming no registered handler, is answered
  with an error result (``is_error``) that the model reads, as ``ToolNode``
  does for in-process tools: the run goes on and the model can recover.
- A stream without ``tools`` answers nothing: the calls reach the reader as
  ``RemoteToolCallPart``s and the run waits (until the tool's timeout) for
  ``runs.tool_results(...)``, which the reader may call itself.
- The result must be JSON data (a pydantic model is dumped to JSON).
- A stream given ``tools`` whose ``stream_mode`` has neither ``values`` nor
  ``updates`` gets ``updates`` added, since a pause is announced there too.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from tenxgraph.client._events import (
    EndPart,
    MessagePart,
    MetadataPart,
    RemoteToolCallPart,
    StreamPart,
    UpdatesPart,
    ValuesPart,
)
from tenxgraph.core.state.message_block import RemoteToolCallBlock
from tenxgraph.core.state.remote_calls import (
    is_remote_pause,
    remote_tool_result,
    remote_tool_resume,
)

__all__ = [
    "PostResults",
    "RemoteTools",
    "ToolHandler",
    "remote_calls",
    "with_remote_tools",
]

ToolHandler = Callable[..., Any | Awaitable[Any]]
"""A remote tool: called with the call's arguments as keywords; returns JSON data."""

OpenRun = Callable[[dict[str, Any] | None], AsyncIterator[StreamPart]]
"""Starts a run on the thread (with this resume ``command``, or the first request's input)."""


def remote_calls(part: StreamPart) -> list[RemoteToolCallBlock]:
    """The remote tool calls a part announces: an ``__interrupt__`` in values/updates, a message."""
    if isinstance(part, UpdatesPart | ValuesPart) and isinstance(part.data, dict):
        return _interrupt_calls(part.data.get("__interrupt__"))
    if isinstance(part, MessagePart) and not part.message.delta:
        return [b for b in part.message.content if isinstance(b, RemoteToolCallBlock)]
    return []


def _interrupt_calls(interrupts: Any) -> list[RemoteToolCallBlock]:
    """The calls of the runtime's remote pause (by its item's ``kind``, which no user's has)."""
    calls: list[RemoteToolCallBlock] = []
    for item in interrupts if isinstance(interrupts, list) else []:
        value = item.get("value") if is_remote_pause(item) else None
        if isinstance(value, dict):
            for entry in value.get("calls") or []:
                call = entry.get("call") if isinstance(entry, dict) else None
                if isinstance(call, dict):
                    calls.append(RemoteToolCallBlock.model_validate(call))
    return calls


PostResults = Callable[[str, list[dict[str, Any]]], Awaitable[bool]]
"""Posts results to a run waiting for them; False when it waits for none (answer by resume)."""


async def with_remote_tools(
    open_run: OpenRun, tools: RemoteTools, post: PostResults
) -> AsyncIterator[StreamPart]:
    """Stream a run, answering its remote calls in the stream or by resuming, until none is left."""
    command: dict[str, Any] | None = None
    while True:
        announced: dict[str, RemoteToolCallBlock] = {}
        resume: list[dict[str, Any]] = []  # results the next run resumes the thread with
        run_id = ""
        async for part in open_run(command):
            if isinstance(part, MetadataPart):
                run_id = part.run_id
            if isinstance(part, RemoteToolCallPart):
                yield part  # the server waits for this call in the stream
                resume += await _answer_in_stream(part.call, run_id, tools, post)
                continue
            if isinstance(part, ValuesPart):  # the state now: an older pause may have moved on
                announced = {}
            for call in remote_calls(part):
                announced.setdefault(call.id, call)
            if isinstance(part, EndPart) and tools.answers:
                left = [call for call in announced.values() if tools.take(call)]
                for call in left:
                    yield RemoteToolCallPart("remote_tool_call", call.model_dump(), None, call=call)
                resume += await tools.results(left) if left else []
                if resume:
                    continue  # the exchange goes on in the next run
            yield part
        if not resume:
            return
        command = {"resume": remote_tool_resume(resume)}


async def _answer_in_stream(
    call: RemoteToolCallBlock, run_id: str, tools: RemoteTools, post: PostResults
) -> list[dict[str, Any]]:
    """Run and post one streamed call; its results if refused (left for a resume), else []."""
    if not tools.answers or not tools.take(call):
        return []  # nothing to do: no handlers, or answered already
    results = await tools.results([call])
    return [] if await post(run_id, results) else results


class RemoteTools:
    """The handlers of one stream, and the calls they already took."""

    def __init__(self, handlers: Mapping[str, ToolHandler] | None) -> None:
        self.handlers = dict(handlers or {})
        self.answers = handlers is not None
        """False for a stream given no ``tools``: calls are shown, never answered."""
        self._taken: set[str] = set()

    def take(self, call: RemoteToolCallBlock) -> bool:
        """True the first time ``call`` is seen in this stream (it shows up more than once)."""
        if call.id in self._taken:
            return False
        self._taken.add(call.id)
        return True

    async def results(self, calls: list[RemoteToolCallBlock]) -> list[dict[str, Any]]:
        """Run the calls concurrently; their results as the resume value lists them."""
        outcomes = await asyncio.gather(*(self._run(call) for call in calls))
        return [
            remote_tool_result(call.id, output, is_error=is_error)
            for call, (output, is_error) in zip(calls, outcomes, strict=True)
        ]

    async def _run(self, call: RemoteToolCallBlock) -> tuple[Any, bool]:
        handler = self.handlers.get(call.name)
        if handler is None:
            known = ", ".join(sorted(self.handlers)) or "none"
            return f"no handler for remote tool {call.name!r} in this client (has: {known})", True
        try:
            if inspect.iscoroutinefunction(handler):
                result = await handler(**call.args)
            else:
                result = await asyncio.to_thread(handler, **call.args)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:  # the model reads the failure, as with in-process tools
            return f"{type(exc).__name__}: {exc}", True
        if isinstance(result, BaseModel):
            result = result.model_dump(mode="json")
        return result, False
