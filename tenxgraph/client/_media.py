"""Media: store a file on the server and read it back (tenxgraph's ``/media``).

``put`` sends the bytes as the request body (``POST /media``) and returns the
``MediaRef`` the server made (``url`` is ``graph://media/{key}``): put it in a
message's media block and the graph reads the file from the server's media
store, so a message never carries the bytes. ``get`` reads one back
(``GET /media/{key}``). Media belong to the caller (its API key); both are a
404 when the server has no media store.
"""

from __future__ import annotations

from tenxgraph.client._threads import segment
from tenxgraph.client._transport import Transport
from tenxgraph.core.state.message_block import MediaRef
from tenxgraph.storage.media import media_key

__all__ = ["Media"]


class Media:
    """The ``/media`` endpoints (async)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    async def put(
        self, data: bytes, *, mime_type: str | None = None, filename: str | None = None
    ) -> MediaRef:
        """Store ``data`` and return its reference (the server checks the type against the bytes).

        Without ``mime_type`` the server tells the type from the bytes.
        """
        headers = {"Content-Type": mime_type or "application/octet-stream"}
        response = await self._transport.send(
            "POST",
            "/media",
            content=bytes(data),
            headers=headers,
            params={"filename": filename},
        )
        return MediaRef.model_validate(response.json())

    async def get(self, ref: str | MediaRef) -> bytes:
        """The bytes of a stored media: its ``MediaRef``, its ``graph://media/`` url, or its key.

        A reference that names no media of a media store (an ``https://`` url,
        a malformed key) raises ``InvalidMediaKeyError`` before any request.
        """
        response = await self._transport.send("GET", f"/media/{segment(media_key(ref))}")
        return response.content
