"""Remote tools: the model calls a tool that runs in the client, and the run goes on.

The server streams the call (a ``RemoteToolCallBlock``: ``id``, ``name``,
``args``); the client runs the handler registered under that name and posts
the result to the run; the server resumes the run with it, in the same
stream. Each call is answered once per stream, however many times it shows
up (as a ``remote_tool_call`` event and again inside the assistant message).

Decisions:

- A handler is called with the call's arguments as keyword arguments, like
  the function of an in-process tool. It may be sync (run in a worker thread,
  so the stream's loop keeps reading) or async.
- A handler that raises, or a call naming no registered handler, is answered
  with an error result (``is_error``) that the model reads, as ``ToolNode``
  does for in-process tools: the run goes on and the model can recover. A
  stream without ``tools`` answers nothing; the calls still reach its reader.
- The result must be JSON data (or a pydantic model, dumped to JSON).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from tenxgraph.client._events import MessagePart, RemoteToolCallPart, StreamPart
from tenxgraph.client._transport import Transport
from tenxgraph.core.state.message_block import RemoteToolCallBlock

__all__ = ["RemoteTools", "ToolHandler", "remote_calls", "tool_results_path"]

ToolHandler = Callable[..., Any | Awaitable[Any]]
"""A remote tool: called with the call's arguments as keywords; returns JSON data."""


def tool_results_path(thread_id: str, run_id: str) -> str:
    """Where a remote tool's result is posted (server B's endpoint)."""
    return f"/threads/{thread_id}/runs/{run_id}/tool_results"


def remote_calls(part: StreamPart) -> list[RemoteToolCallBlock]:
    """The remote tool calls a stream part carries (none for most parts)."""
    if isinstance(part, RemoteToolCallPart) and part.call is not None:
        return [part.call]
    if isinstance(part, MessagePart) and part.message is not None and not part.message.delta:
        return [b for b in part.message.content if isinstance(b, RemoteToolCallBlock)]
    return []


class RemoteTools:
    """Runs registered handlers for a stream's remote calls and posts their results."""

    def __init__(self, handlers: Mapping[str, ToolHandler], transport: Transport) -> None:
        self.handlers = dict(handlers)
        self._transport = transport
        self._answered: set[str] = set()

    async def answer(self, part: StreamPart, thread_id: str | None, run_id: str | None) -> None:
        """Answer every call in ``part`` not answered yet in this stream."""
        for call in remote_calls(part):
            if call.id in self._answered:
                continue
            self._answered.add(call.id)
            output, is_error = await self._run(call)
            if thread_id is None or run_id is None:  # pragma: no cover - the server sent no ids
                continue
            await self._transport.request(
                "POST",
                tool_results_path(thread_id, run_id),
                json_body={"call_id": call.id, "output": output, "is_error": is_error},
            )

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
