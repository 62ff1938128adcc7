"""Threads: create, read, search and delete conversations, and read their state.

The paths and bodies are the LangGraph server API's (``POST /threads``,
``GET /threads/{id}/state``...), so a thread made by this client is the same
thread the official LangGraph SDK sees. tenxgraph's own thread routes are
here too: the whole log (``GET /threads/{id}/messages``) beside the context
window (``GET /threads/{id}/window``), a direct tool call
(``POST /threads/{id}/tools/{name}``) and the rollback of an unfinished turn
(``POST /threads/{id}/rollback``); see docs/server.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tenxgraph.client._events import messages_in
from tenxgraph.client._transport import Transport
from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.core.state.message_block import ToolResultBlock

__all__ = ["ContextWindow", "LogPage", "ThreadState", "Threads", "segment"]


def segment(value: str) -> str:
    """A path segment: an id with ``/`` or ``?`` in it cannot address another resource."""
    return quote(str(value), safe="")


@dataclass(frozen=True, slots=True)
class ThreadState:
    """A thread's state as the server reports it, with its messages parsed."""

    values: dict[str, Any]
    """The state as JSON data."""
    messages: list[Message]
    """The state's ``messages`` (else ``context``) as ``Message`` objects."""
    next: list[str] = field(default_factory=list)
    """The nodes that run next (non-empty while the thread is paused at an interrupt)."""
    checkpoint_id: str | None = None
    """The checkpoint this state was read from."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The checkpoint's metadata."""
    created_at: str | None = None
    """When the checkpoint was written."""
    raw: dict[str, Any] = field(default_factory=dict)
    """Everything the server sent (interrupts, tasks, parent checkpoint...)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ThreadState:
        """Build from the server's JSON (``GET /threads/{id}/state``)."""
        values = data.get("values") or {}
        values = values if isinstance(values, dict) else {"values": values}
        checkpoint = data.get("checkpoint") or {}
        return cls(
            values=values,
            messages=messages_in(values),
            next=list(data.get("next") or []),
            checkpoint_id=checkpoint.get("checkpoint_id") or data.get("checkpoint_id"),
            metadata=dict(data.get("metadata") or {}),
            created_at=data.get("created_at"),
            raw=data,
        )


@dataclass(frozen=True, slots=True)
class LogPage:
    """A page of a thread's whole log: every message ever added, oldest first."""

    log_length: int
    """How many messages the log holds now."""
    offset: int
    """The log position of the page's first message."""
    messages: list[Message]
    """The page's messages, in log order."""
    seqs: list[int]
    """The log position of each message (``seqs[i]`` is ``messages[i]``'s)."""

    @property
    def next_offset(self) -> int | None:
        """The ``offset`` of the next page; None when this page reaches the log's end."""
        end = self.seqs[-1] + 1 if self.seqs else self.offset
        return end if end < self.log_length else None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LogPage:
        """Build from the server's JSON (each message carries its ``seq``)."""
        items = list(data.get("messages") or [])
        bare = [{k: v for k, v in item.items() if k != "seq"} for item in items]
        return cls(
            log_length=int(data.get("log_length", 0)),
            offset=int(data.get("offset", 0)),
            messages=MessagesAdapter.validate_python(bare),
            seqs=[int(item["seq"]) for item in items],
        )


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """What the model sees next: log ranges, their messages, and the summary of what was cut."""

    log_length: int
    """How many messages the log holds now."""
    window: list[tuple[int, int]]
    """The log ranges ``[start, end)`` the window is made of, in order."""
    messages: list[Message]
    """The window's messages (a state's ``messages``)."""
    context_summary: str | None = None
    """The summary that replaced the messages cut from the window, if any."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContextWindow:
        """Build from the server's JSON (``GET /threads/{id}/window``)."""
        return cls(
            log_length=int(data.get("log_length", 0)),
            window=[(int(start), int(end)) for start, end in data.get("window") or []],
            messages=MessagesAdapter.validate_python(data.get("messages") or []),
            context_summary=data.get("context_summary"),
        )


class Threads:
    """The ``/threads`` endpoints (async)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    async def create(
        self,
        *,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: str | None = None,
    ) -> dict[str, Any]:
        """Create a thread (the server picks the id unless given); returns the thread."""
        body = {"thread_id": thread_id, "metadata": metadata, "if_exists": if_exists}
        return await self._post("/threads", {k: v for k, v in body.items() if v is not None})

    async def get(self, thread_id: str) -> dict[str, Any]:
        """The thread (``APINotFoundError`` if there is none with that id)."""
        result: dict[str, Any] = await self._transport.request(
            "GET", f"/threads/{segment(thread_id)}"
        )
        return result

    async def delete(self, thread_id: str) -> None:
        """Delete the thread and its history."""
        await self._transport.request("DELETE", f"/threads/{segment(thread_id)}")

    async def search(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        status: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Threads whose metadata contains ``metadata`` (and in ``status``), newest first."""
        body = {"metadata": metadata, "status": status, "limit": limit, "offset": offset}
        result: list[dict[str, Any]] = await self._transport.request(
            "POST", "/threads/search", json_body={k: v for k, v in body.items() if v is not None}
        )
        return result

    async def get_state(self, thread_id: str) -> ThreadState:
        """The thread's current state, messages parsed."""
        data = await self._transport.request("GET", f"/threads/{segment(thread_id)}/state")
        return ThreadState.from_json(data)

    async def update_state(
        self, thread_id: str, values: dict[str, Any], *, as_node: str | None = None
    ) -> dict[str, Any]:
        """Write ``values`` into the thread's state as if ``as_node`` had returned them."""
        body: dict[str, Any] = {"values": values}
        if as_node is not None:
            body["as_node"] = as_node
        return await self._post(f"/threads/{segment(thread_id)}/state", body)

    async def get_history(self, thread_id: str, *, limit: int = 10) -> list[ThreadState]:
        """The thread's past states, newest first."""
        data = await self._transport.request(
            "POST", f"/threads/{segment(thread_id)}/history", json_body={"limit": limit}
        )
        return [ThreadState.from_json(item) for item in data or []]

    async def get_log(self, thread_id: str, *, offset: int = 0, limit: int = 100) -> LogPage:
        """A page of the thread's whole log from position ``offset`` (``limit`` <= 1000).

        The log keeps every message ever added, also those trimmed or
        summarized out of the context window; ``page.next_offset`` is where
        the next page starts.
        """
        data = await self._transport.request(
            "GET",
            f"/threads/{segment(thread_id)}/messages",
            params={"offset": offset, "limit": limit},
        )
        return LogPage.from_json(data)

    async def get_window(self, thread_id: str) -> ContextWindow:
        """The context window: what the model sees next, as log ranges and messages."""
        data = await self._transport.request("GET", f"/threads/{segment(thread_id)}/window")
        return ContextWindow.from_json(data)

    async def call_tool(
        self,
        thread_id: str,
        name: str,
        args: dict[str, Any] | None = None,
        *,
        record: bool = True,
        note: str | None = None,
    ) -> ToolResultBlock:
        """Call the graph's tool ``name`` directly, outside the model loop; its result.

        With ``record`` the call and its result are a turn of the thread
        (after ``note``, a user message saying why, when given); without, the
        tool only runs and the thread is untouched. A tool that fails gives a
        result with ``is_error`` (as the model would see it); arguments that
        do not fit the tool are refused (422) before anything is recorded,
        and a recorded call while a run is on the thread is a 409.
        """
        body: dict[str, Any] = {"args": args or {}, "record": record}
        if note is not None:
            body["note"] = note
        path = f"/threads/{segment(thread_id)}/tools/{segment(name)}"
        return ToolResultBlock.model_validate(await self._post(path, body))

    async def rollback(self, thread_id: str) -> bool:
        """Discard the thread's unfinished turn (failed, stopped or paused); True if one was.

        A completed last turn stays (False). While a run is on the thread the
        server answers 409: cancel it with ``runs.cancel(..., action="rollback")``,
        which stops it and discards its turn.
        """
        answer = await self._post(f"/threads/{segment(thread_id)}/rollback", {})
        return bool(answer.get("discarded"))

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self._transport.request("POST", path, json_body=body)
        return result
