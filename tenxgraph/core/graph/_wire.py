"""Stream events as data: one JSON envelope per event, with its kind, run id and number.

``astream`` yields Python objects (a ``MessageEvent`` holds a live
``Message``, a ``RunResult`` the typed state). Anything that sends a run over
a wire (the coming server's SSE stream, a queue, a log) needs the same
events as plain JSON, each saying what it is (``kind``), which run it
belongs to (``run_id``) and where it stands in that run (``seq``, from 0,
so a client can resume a stream after the last number it saw). This module
is that one format: pydantic models, one discriminated union, and its JSON
schema (``event_schema()``), from which clients in other languages can
generate their types.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

from tenxgraph.core.graph._events import (
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    StreamEvent,
    UpdateEvent,
)
from tenxgraph.core.state.message import Message

__all__ = [
    "WIRE_EVENTS",
    "ErrorWire",
    "InterruptWire",
    "MessageWire",
    "ResultWire",
    "UpdateWire",
    "WireEvent",
    "event_schema",
    "to_wire",
    "wire_events",
]


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    """The run the event belongs to (``RunResult.run_id``)."""
    seq: int = Field(ge=0)
    """The event's position in its run, from 0."""


class MessageWire(_Envelope):
    """A message a node produced: a streamed chunk (``message.delta``) or a complete one."""

    kind: Literal["message"] = "message"
    node: str
    message: Message


class UpdateWire(_Envelope):
    """A node finished: the messages it added and the other fields it changed."""

    kind: Literal["update"] = "update"
    node: str
    step: int
    messages: list[Message]
    values: dict[str, JsonValue]


class InterruptWire(_Envelope):
    """The run paused for a human."""

    kind: Literal["interrupt"] = "interrupt"
    node: str
    value: JsonValue
    when: str
    """``before``, ``after`` or ``inside`` the node."""


class ErrorWire(_Envelope):
    """A node failed; the run ends with an error."""

    kind: Literal["error"] = "error"
    node: str
    error: str


class ResultWire(_Envelope):
    """The last event of a run: the messages it added and the final state as JSON."""

    kind: Literal["result"] = "result"
    messages: list[Message]
    state: dict[str, JsonValue]
    interrupted: bool
    """True when the run paused for a human (an ``interrupt`` event came before)."""


WireEvent = Annotated[
    MessageWire | UpdateWire | InterruptWire | ErrorWire | ResultWire,
    Field(discriminator="kind"),
]
"""Any event on the wire, told apart by ``kind``."""

WIRE_EVENTS: TypeAdapter[WireEvent] = TypeAdapter(WireEvent)
"""Validates and serializes ``WireEvent`` values (``WIRE_EVENTS.validate_json(line)``)."""


def to_wire(event: StreamEvent, run_id: str, seq: int) -> WireEvent:
    """The envelope of one ``astream`` event."""
    stamp: dict[str, Any] = {"run_id": run_id, "seq": seq}
    if isinstance(event, MessageEvent):
        return MessageWire(**stamp, node=event.node, message=event.message)
    if isinstance(event, UpdateEvent):
        return UpdateWire(
            **stamp,
            node=event.node,
            step=event.step,
            messages=list(event.messages),
            values=event.values,
        )
    if isinstance(event, InterruptEvent):
        return InterruptWire(**stamp, node=event.node, value=event.value, when=event.when)
    if isinstance(event, ErrorEvent):
        return ErrorWire(**stamp, node=event.node, error=event.error)
    return _result(event, stamp)


def _result(event: RunResult, stamp: dict[str, Any]) -> ResultWire:
    return ResultWire(
        **stamp,
        messages=event.messages,
        state=event.state.model_dump(mode="json"),
        interrupted=event.interrupt is not None,
    )


async def wire_events(events: AsyncIterator[StreamEvent], run_id: str) -> AsyncIterator[WireEvent]:
    """Number a run's events from 0 and wrap each; pass ``run_id`` as the run's config did."""
    seq = 0
    async for event in events:
        yield to_wire(event, run_id, seq)
        seq += 1


def event_schema() -> dict[str, Any]:
    """The JSON schema of ``WireEvent``: the contract for clients in other languages."""
    return WIRE_EVENTS.json_schema()
