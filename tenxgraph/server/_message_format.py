"""Which message format an answer is in: LangChain's (the default) or tenxgraph's.

The LangGraph routes (threads, their state and history, runs: their output
and every stream mode) answer with messages in LangChain's format, which the
official LangGraph SDKs, ``useStream`` and Agent Chat UI read. A request
with the header ``X-Message-Format: tenxgraph`` gets tenxgraph's own
``Message`` JSON instead (typed blocks, media refs, citations, timestamps),
as tenxgraph's clients and the web page ask for. tenxgraph's own routes
(``/threads/{id}/messages``, ``/window``...) always answer in tenxgraph's.

A run's stream is kept in tenxgraph's format (what the runtime emits, on
every backend) and translated as each reader reads it, so readers of both
formats can follow the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends
from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic_core import to_json
from starlette.requests import Request

from tenxgraph.core.state.langchain_format import to_langchain_message
from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.errors import StateError

__all__ = [
    "FORMAT_HEADER",
    "Encode",
    "MessageEncoder",
    "langchain_json",
    "message_encoder",
    "output_json",
    "tenxgraph_json",
    "translate_event",
]

FORMAT_HEADER = "x-message-format"
"""The request header that picks the format of the messages in an answer."""

MessageEncoder = Callable[[Message], dict[str, Any]]
"""A message as the JSON of an answer."""


def tenxgraph_json(message: Message) -> dict[str, Any]:
    """The message as tenxgraph's own ``Message`` JSON."""
    return message.model_dump(mode="json")


def langchain_json(message: Message) -> dict[str, Any]:
    """The message as a LangChain message dict (``to_langchain_message``)."""
    return to_langchain_message(message)


_FORMATS: dict[str, MessageEncoder] = {"langchain": langchain_json, "tenxgraph": tenxgraph_json}


def message_encoder(request: Request) -> MessageEncoder:
    """The encoder the request asks for with ``X-Message-Format`` (default: LangChain's)."""
    value = request.headers.get(FORMAT_HEADER, "langchain").strip().lower()
    encoder = _FORMATS.get(value)
    if encoder is None:
        raise StateError(f"{FORMAT_HEADER} must be 'langchain' or 'tenxgraph', got {value[:40]!r}")
    return encoder


Encode = Annotated[MessageEncoder, Depends(message_encoder)]
"""A route's parameter: how the messages of its answer are written."""


class _Values(BaseModel):
    """A ``values`` payload with its messages read as messages and the rest as it is."""

    model_config = ConfigDict(extra="allow")

    messages: list[Message] | None = None


_VALUES = TypeAdapter(_Values)
_UPDATES = TypeAdapter(dict[str, _Values | list[Any] | Any])
_TUPLE = TypeAdapter(tuple[Message, dict[str, Any]])


def output_json(output: Any, encode: MessageEncoder) -> Any:
    """A run's output (its final values) with its messages in ``encode``'s format."""
    if encode is tenxgraph_json or not isinstance(output, dict):
        return output
    messages = output.get("messages")
    if not isinstance(messages, list):
        return output
    # as JSON, as the stream is read: a tool's media output stays media
    read = MessagesAdapter.validate_json(to_json(messages))
    return {**output, "messages": [encode(message) for message in read]}


def translate_event(event: str, data: str, encode: MessageEncoder) -> str:
    """One logged stream event's data (tenxgraph's JSON) with its messages in ``encode``'s."""
    if encode is tenxgraph_json:
        return data
    if event == "values":
        return _dump(_values(_VALUES.validate_json(data), encode))
    if event == "updates":
        updates = _UPDATES.validate_json(data)
        return _dump(
            {
                node: _values(update, encode) if isinstance(update, _Values) else update
                for node, update in updates.items()
            }
        )
    if event == "messages":
        message, metadata = _TUPLE.validate_json(data)
        return _dump([encode(message), metadata])
    if event in ("messages/partial", "messages/complete"):
        return _dump([encode(message) for message in MessagesAdapter.validate_json(data)])
    return data


def _values(values: _Values, encode: MessageEncoder) -> dict[str, Any]:
    out = dict(values.model_extra or {})
    if values.messages is not None:
        out = {"messages": [encode(message) for message in values.messages], **out}
    return out


def _dump(data: Any) -> str:
    return to_json(data, inf_nan_mode="null").decode()
