"""Typed stream parts: one Server-Sent Event of a run, its data parsed once.

A run's stream is the LangGraph server protocol's: events named
``metadata``, ``values``, ``updates``, ``messages`` (and ``messages/...``),
``error`` and ``end``, each with JSON data, plus a ``remote_tool_call`` event
when the model calls a tool the client runs. Messages are parsed into
``tenxgraph.core.state.Message`` objects, so a client reads the same types a
graph does in process. An event this client does not know arrives as a plain
``StreamPart`` with its decoded data: a newer server never breaks an older
client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.core.state.message_block import RemoteToolCallBlock

__all__ = [
    "EndPart",
    "ErrorPart",
    "MessagePart",
    "MetadataPart",
    "RemoteToolCallPart",
    "StreamPart",
    "UpdatesPart",
    "ValuesPart",
    "messages_in",
    "parse_part",
]


@dataclass(frozen=True, slots=True)
class StreamPart:
    """One event of a run's stream: its SSE name, decoded JSON data and id."""

    event: str
    """The SSE event name (``values``, ``updates``, ``messages``...)."""
    data: Any
    """The event's data, decoded from JSON."""
    id: str | None = None
    """The SSE id: what a reconnect sends as ``Last-Event-ID`` to resume after this event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataPart(StreamPart):
    """The first event of a run: which run this stream belongs to."""

    run_id: str
    """The run's id (for ``join``, ``cancel`` and resuming the stream)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ValuesPart(StreamPart):
    """The whole state after a step; ``messages`` are its message fields parsed."""

    values: dict[str, Any] = field(default_factory=dict)
    """The state as JSON data."""
    messages: list[Message] = field(default_factory=list)
    """The state's ``messages`` (else ``context``) as ``Message`` objects."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatesPart(StreamPart):
    """What one node changed: ``{node: update}``."""

    updates: dict[str, Any] = field(default_factory=dict)
    """The node name mapped to the fields it changed (as JSON data)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessagePart(StreamPart):
    """A message: a streamed chunk (``message.delta``) or a complete one."""

    message: Message
    """The message."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """What the server sent beside it (the node that produced it...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteToolCallPart(StreamPart):
    """The model called a tool the client runs; the run waits for its result."""

    call: RemoteToolCallBlock
    """The call: ``id``, ``name`` and ``args``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorPart(StreamPart):
    """The run failed; the stream ends after this part."""

    error: str = ""
    """The error's kind (a class name) as the server sent it."""
    message: str = ""
    """What went wrong, as the server sent it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EndPart(StreamPart):
    """The run's stream is complete (it ended, paused at an interrupt, or was cancelled)."""


def parse_part(event: str, data: str, event_id: str | None = None) -> StreamPart:
    """Build the typed part for one SSE event (its ``data`` is JSON text)."""
    decoded: Any = json.loads(data) if data.strip() else None
    base = {"event": event, "data": decoded, "id": event_id}
    kind = event.split("|", 1)[0]  # "values|subgraph:..." from subgraph streams
    if kind == "metadata" and isinstance(decoded, dict):
        return MetadataPart(**base, run_id=str(decoded.get("run_id", "")))
    if kind == "values" and isinstance(decoded, dict):
        return ValuesPart(**base, values=decoded, messages=messages_in(decoded))
    if kind == "updates" and isinstance(decoded, dict):
        return UpdatesPart(**base, updates=decoded)
    if kind == "messages" or kind.startswith("messages/"):
        return _message_part(base, decoded)
    if kind == "remote_tool_call" and isinstance(decoded, dict):
        return RemoteToolCallPart(**base, call=RemoteToolCallBlock.model_validate(decoded))
    if kind == "error":
        return _error_part(base, decoded)
    if kind == "end":
        return EndPart(**base)
    return StreamPart(**base)


def messages_in(values: dict[str, Any]) -> list[Message]:
    """The state's messages as ``Message`` objects (``messages``, else ``context``)."""
    for name in ("messages", "context"):
        items = values.get(name)
        if isinstance(items, list) and all(_is_message(item) for item in items):
            return MessagesAdapter.validate_python(items)
    return []


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and "role" in item and "content" in item


def _message_part(base: dict[str, Any], decoded: Any) -> StreamPart:
    """``messages`` data is a message, or ``[message, metadata]`` (LangGraph's tuple form)."""
    metadata: dict[str, Any] = {}
    item = decoded
    if isinstance(decoded, list) and len(decoded) == 2 and isinstance(decoded[1], dict):
        item, metadata = decoded
    if isinstance(decoded, list) and len(decoded) == 1:
        item = decoded[0]
    if not _is_message(item):
        return StreamPart(**base)
    return MessagePart(**base, message=Message.model_validate(item), metadata=metadata)


def _error_part(base: dict[str, Any], decoded: Any) -> ErrorPart:
    if isinstance(decoded, dict):
        message = decoded.get("message", decoded.get("detail", ""))
        return ErrorPart(**base, error=str(decoded.get("error", "")), message=str(message))
    return ErrorPart(**base, error="", message="" if decoded is None else str(decoded))
