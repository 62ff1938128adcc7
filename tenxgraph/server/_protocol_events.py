"""A run's logged stream events as events of LangGraph's thread-streaming protocol.

The protocol (``@langchain/protocol``, served at ``POST /threads/{id}/stream/events``)
has its own envelope: ``{"type": "event", "method", "params": {"namespace",
"timestamp", "data", ...}, "event_id", "seq"}``, and channels of its own.
``RunTranslator`` reads one run's log (what ``RunStreamWriter`` wrote, in
tenxgraph's message JSON) and gives each logged event's protocol events:

- ``metadata`` (the run's start): ``lifecycle`` ``started``;
- ``values``: ``values`` (LangChain messages, without ``__interrupt__``);
  a pause's interrupts: one ``input.requested`` each (its value as
  ``payload``, the protocol's name, and as ``value``, which the Python SDK
  reads);
- ``updates``: ``updates`` (``{node, values}``) per node, and on the
  ``tools`` channel a ``tool-started`` per tool call an AI message makes
  and a ``tool-finished`` (``tool-error``) per tool result;
- ``messages`` (``messages-tuple``): the ``messages`` channel's lifecycle,
  ``message-start``, ``content-block-start``/``-delta``/``-finish``,
  ``message-finish`` (text streamed as ``text-delta``; tool calls as
  finished ``tool_call`` blocks);
- ``error``: ``lifecycle`` ``failed``; the run's end: ``lifecycle``
  ``completed``, ``interrupted`` or ``failed`` (``finish``).

tenxgraph graphs have no subgraphs, so every namespace is the root's, ``[]``.
Each protocol event's ``event_id`` is ``<run_id>:<n>:<k>`` (the logged
event's number and its place among the events made from it): stable on
every connection, as clients deduplicate by it. ``seq`` is the
connection's own (``thread_protocol``).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic_core import from_json

from tenxgraph.core.state.langchain_format import langchain_from_json
from tenxgraph.server._message_format import langchain_json, translate_event

__all__ = ["CHANNELS", "RunTranslator", "channel_of"]

CHANNELS = frozenset(
    {"values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks"}
)
"""The protocol's channels (besides ``custom`` and ``custom:<name>``)."""

_TERMINAL = {"success": "completed", "interrupted": "interrupted", "error": "failed"}


def channel_of(method: str) -> str:
    """The channel an event of ``method`` belongs to (``input.requested`` is ``input``)."""
    return "input" if method.startswith("input.") else method


class _Streamed:
    """A message whose chunks are being sent: its id, whether its text block is open, its text."""

    def __init__(self, message_id: str) -> None:
        self.id = message_id
        self.text: list[str] = []
        self.open = False


class RunTranslator:
    """One run's logged events, translated one at a time, in order."""

    def __init__(self, run_id: str, graph_name: str) -> None:
        self.run_id, self.graph_name = run_id, graph_name
        self._streaming: _Streamed | None = None
        self._asked: set[str] = set()
        self._failed = False
        self._number = 0
        self._events: list[dict[str, Any]] = []

    def translate(self, number: int, event: str, data: str) -> list[dict[str, Any]]:
        """The protocol events the logged event ``number`` (``event``, ``data``) makes."""
        self._number, self._events = number, []
        if event == "metadata":
            self._add("lifecycle", {"event": "started", "graph_name": self.graph_name})
        elif event == "values":
            self._values(from_json(translate_event(event, data, langchain_json)))
        elif event == "updates":
            self._updates(from_json(translate_event(event, data, langchain_json)))
        elif event == "messages":
            self._message(langchain_from_json(from_json(data)[0]), from_json(data)[1])
        elif event == "error":
            self._failed = True
            error = from_json(data) if data != "null" else {}
            self._add("lifecycle", {"event": "failed", "error": str(error.get("message", ""))})
        return self._events

    def finish(self, number: int, status: str) -> list[dict[str, Any]]:
        """The run's terminal ``lifecycle`` event for its ``status`` (none after ``failed``)."""
        self._number, self._events = number, []
        self._close_stream({})
        if not self._failed:
            self._add("lifecycle", {"event": _TERMINAL.get(status, "failed")})
        return self._events

    def _add(self, method: str, data: Any, **params: Any) -> None:
        params = {"namespace": [], "timestamp": int(time.time() * 1000), **params, "data": data}
        event_id = f"{self.run_id}:{self._number}:{len(self._events)}"
        self._events.append(
            {"type": "event", "method": method, "params": params, "event_id": event_id}
        )

    def _interrupts(self, interrupts: Any) -> None:
        for item in interrupts if isinstance(interrupts, list) else ():
            interrupt_id = str(item.get("id", ""))
            if interrupt_id not in self._asked:
                self._asked.add(interrupt_id)
                value = item.get("value")  # as ``payload`` (the protocol's) and ``value``
                asked = {"interrupt_id": interrupt_id, "payload": value, "value": value}
                self._add("input.requested", asked)

    def _values(self, values: dict[str, Any]) -> None:
        interrupts = values.pop("__interrupt__", None)
        self._add("values", values)
        self._interrupts(interrupts)

    def _updates(self, updates: dict[str, Any]) -> None:
        for node, update in updates.items():
            if node == "__interrupt__":
                self._interrupts(update)
                continue
            self._add("updates", {"node": node, "values": update})
            for message in update.get("messages", ()) if isinstance(update, dict) else ():
                self._tool_events(node, message)

    def _tool_events(self, node: str, message: dict[str, Any]) -> None:
        if message.get("type") == "ai":
            for call in message.get("tool_calls") or ():
                started = {"event": "tool-started", "tool_call_id": call.get("id") or ""}
                started.update(tool_name=call.get("name", ""), input=call.get("args"))
                self._add("tools", started, node=node)
        elif message.get("type") == "tool":
            call_id = message.get("tool_call_id", "")
            if message.get("status") == "error":
                error = {"event": "tool-error", "tool_call_id": call_id}
                self._add("tools", error | {"message": _text(message)}, node=node)
            else:
                done = {"event": "tool-finished", "tool_call_id": call_id}
                self._add("tools", done | {"output": message.get("content")}, node=node)

    def _message(self, message: dict[str, Any], meta: dict[str, Any]) -> None:
        """One message of ``messages-tuple``: a chunk of the AI message streaming, or a whole one.

        Messages do not interleave, so the whole AI message that follows
        chunks completes them, whatever its id (the stored message's id is
        not the chunks'). Tool results are the ``tools`` channel's.
        """
        node = meta.get("langgraph_node") if isinstance(meta, dict) else None
        extra = {"node": node} if node else {}
        kind = str(message.get("type", ""))
        if kind.startswith("tool"):
            return
        message_id = str(message.get("id") or "")
        streaming = self._streaming
        if kind.endswith("Chunk"):
            if streaming is None or streaming.id != message_id:
                self._close_stream(extra)
                streaming = self._streaming = self._start(message, message_id, extra)
            self._delta(streaming, _text(message), extra)
            return
        if streaming is None or kind != "ai":
            self._close_stream(extra)
            streaming = self._start(message, message_id, extra)
        self._streaming = None
        self._finish_message(message, streaming, extra)

    def _start(self, message: dict[str, Any], message_id: str, extra: dict[str, Any]) -> _Streamed:
        start = {"event": "message-start", "role": _role(message), "id": message_id}
        self._add("messages", start, **extra)
        return _Streamed(message_id)

    def _delta(self, streaming: _Streamed, text: str, extra: dict[str, Any]) -> None:
        if not text:
            return
        if not streaming.open:
            streaming.open = True
            empty = {"type": "text", "text": ""}
            self._add("messages", _block("content-block-start", 0, empty), **extra)
        delta = {"type": "text-delta", "text": text}
        self._add("messages", {"event": "content-block-delta", "index": 0, "delta": delta}, **extra)
        streaming.text.append(text)

    def _close_stream(self, extra: dict[str, Any]) -> None:
        """Finish a message whose chunks came without the whole message after them."""
        if self._streaming is not None:
            streaming, self._streaming = self._streaming, None
            self._finish_message({}, streaming, extra)

    def _finish_message(
        self, message: dict[str, Any], streamed: _Streamed, extra: dict[str, Any]
    ) -> None:
        text = _text(message) or "".join(streamed.text)
        index = 0
        if text or streamed.open:
            if not streamed.open:
                empty = {"type": "text", "text": ""}
                self._add("messages", _block("content-block-start", 0, empty), **extra)
            whole = {"type": "text", "text": text}
            self._add("messages", _block("content-block-finish", 0, whole), **extra)
            index = 1
        for call in message.get("tool_calls") or ():
            block: dict[str, Any] = {"type": "tool_call", "id": call.get("id")}
            block.update(name=call.get("name", ""), args=call.get("args") or {})
            self._add("messages", _block("content-block-start", index, block), **extra)
            self._add("messages", _block("content-block-finish", index, block), **extra)
            index += 1
        finish: dict[str, Any] = {"event": "message-finish"}
        if isinstance(message.get("usage_metadata"), dict):
            finish["usage"] = message["usage_metadata"]
        self._add("messages", finish, **extra)


def _block(event: str, index: int, content: dict[str, Any]) -> dict[str, Any]:
    return {"event": event, "index": index, "content": content}


def _role(message: dict[str, Any]) -> str:
    kind = str(message.get("type", "ai")).removesuffix("MessageChunk").lower()
    return {"human": "human", "system": "system"}.get(kind, "ai")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""
