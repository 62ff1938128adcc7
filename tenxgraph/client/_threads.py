"""Threads: create, read, search and delete conversations, and read their state.

The paths and bodies are the LangGraph server API's (``POST /threads``,
``GET /threads/{id}/state``...), so a thread made by this client is the same
thread the official LangGraph SDK sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tenxgraph.client._events import messages_in
from tenxgraph.client._transport import Transport
from tenxgraph.core.state.message import Message

__all__ = ["ThreadState", "Threads", "segment"]


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

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self._transport.request("POST", path, json_body=body)
        return result
