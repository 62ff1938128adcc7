"""The server's Server-Sent Events response: frames the routes encoded, written as they come.

Every stream route encodes its own frames (``id:``, ``event:``, ``data:``
lines; the pings are comment lines from the event log's heartbeat), so the
response only writes bytes. It answers with the headers sse-starlette sends
(``Cache-Control: no-store``, ``Connection: keep-alive``,
``X-Accel-Buffering: no``, ``text/event-stream; charset=utf-8``).

Decision: this response rather than sse-starlette's ``EventSourceResponse``.
That one starts an anyio task group per response (the stream, a disconnect
listener, a shutdown listener) and takes a lock and a cancel scope for each
write: an eighth of the server's instructions per streamed run, for features
these routes do not use (its pings, encoding, send timeouts). What they
need is kept:

- **A client that goes away stops the stream at once**, whatever the stream
  waits for (the next event of a run that waits for a person, a slow socket):
  uvicorn (ASGI 2.3) does not fail a write to a closed connection, so one
  task per response waits for ``http.disconnect`` and cancels the stream.
  The frames' generator is closed either way, so its ``finally`` runs (a
  run started with ``on_disconnect="cancel"`` is cancelled there).
- **HEAD** answers the headers and an empty body; the stream never starts.
- **Shutdown**: uvicorn gives open streams its graceful-shutdown time, then
  cancels them (the client reconnects with ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from datetime import UTC, datetime

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse", "LastFrame", "comment"]

_HEADERS = {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def comment(label: str) -> bytes:
    """A comment frame ``: <label> - <now>``: the stream's ping, as sse-starlette writes one."""
    return f": {label} - {datetime.now(UTC)}\r\n\r\n".encode()


class LastFrame(bytes):
    """A frame its generator ends right after (without waiting): written with the stream's end.

    uvicorn then writes the frame and the chunked body's terminator in one
    write to the socket, not two. Should the generator yield again after
    all, the frame goes out first, as any other.
    """


class EventStreamResponse(Response):
    """A ``text/event-stream`` answer that writes each frame ``frames`` yields, then ends."""

    media_type = "text/event-stream"

    def __init__(
        self, frames: AsyncGenerator[bytes, None], headers: Mapping[str, str] | None = None
    ) -> None:
        self.frames = frames
        self.status_code = 200
        self.background = None
        self.init_headers({**headers, **_HEADERS} if headers else _HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the headers, then the frames until the last or until the client goes."""
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            last = (
                b""
                if scope.get("method") == "HEAD"
                else await _streamed(self.frames, receive, send)
            )
            if last is not None:
                await send({"type": "http.response.body", "body": last, "more_body": False})
        finally:
            await self.frames.aclose()


async def _streamed(
    frames: AsyncGenerator[bytes, None], receive: Receive, send: Send
) -> bytes | None:
    """Write the frames but the last; that one (``b""`` unless a ``LastFrame``), None if gone."""
    watch = _DisconnectWatch(receive)
    held = b""
    try:
        async for frame in frames:
            if held:
                await send({"type": "http.response.body", "body": held, "more_body": True})
                held = b""
            if type(frame) is LastFrame:
                held = frame
            else:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
    except asyncio.CancelledError:
        if not watch.stop():
            raise  # the server's, not the watch's
    finally:
        gone = watch.stop()
    if gone:  # the watch cancelled the stream (or the generator swallowed that)
        watch.task.uncancel()  # so the request's task carries no cancellation of it
        return None
    return bytes(held)


class _DisconnectWatch:
    """A task that cancels the streaming task when the client disconnects."""

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None  # an ASGI app runs in a task
        self.task, self.gone, self._stopped = task, False, False
        self._watcher = asyncio.get_running_loop().create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if not self._stopped:
            self.gone = True
            self.task.cancel()

    def stop(self) -> bool:
        """Stop watching; True if the client went away (the stream was cancelled for it)."""
        self._stopped = True
        self._watcher.cancel()
        return self.gone
