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
- **Shutdown**: when uvicorn begins to stop (SIGTERM, Ctrl-C), every open
  stream ends cleanly within ``EXIT_POLL_SECONDS`` (the client reconnects,
  with ``Last-Event-ID``, to a server that runs), as sse-starlette's did:
  a thread's stream never ends by itself, and would otherwise hold every
  stop and every ``--reload`` for the whole graceful-shutdown time. One
  task per event loop, only while streams are open, looks for that.
"""

from __future__ import annotations

import asyncio
import signal
import weakref
from collections.abc import AsyncGenerator, Mapping
from datetime import UTC, datetime

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse", "LastFrame", "comment"]

EXIT_POLL_SECONDS = 0.5
"""How often open streams look whether the server began to stop."""

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
        cause = watch.stop()
    if cause:  # the watch cancelled the stream (or the generator swallowed that)
        watch.task.uncancel()  # so the request's task carries no cancellation of it
        return None if cause == "gone" else bytes(held)
    return bytes(held)


class _DisconnectWatch:
    """A task that cancels the streaming task when the client disconnects.

    The loop's ``_OpenStreams`` cancels it too when the server begins to stop.
    """

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None  # an ASGI app runs in a task
        self.task, self.cause, self._stopped = task, "", False
        loop = asyncio.get_running_loop()
        self._watcher = loop.create_task(self._watch(receive))
        self._streams = _OpenStreams.of(loop)
        self._streams.add(self)

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.end("gone")

    def end(self, cause: str) -> None:
        """Cancel the stream: its client is ``"gone"``, or the server is ``"stopping"``."""
        if not self._stopped and not self.cause:
            self.cause = cause
            self.task.cancel()

    def stop(self) -> str:
        """Stop watching; why the stream was cancelled (``"gone"``, ``"stopping"``), or ``""``."""
        if not self._stopped:
            self._stopped = True
            self._watcher.cancel()
            self._streams.discard(self)
        return self.cause


class _OpenStreams:
    """One event loop's open streams, ended when the uvicorn server running them begins to stop."""

    _LOOPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _OpenStreams]
    _LOOPS = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self.open: set[_DisconnectWatch] = set()
        self.task: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _OpenStreams:
        streams = cls._LOOPS.get(loop)
        if streams is None:
            streams = cls._LOOPS[loop] = cls()
        return streams

    def add(self, watch: _DisconnectWatch) -> None:
        self.open.add(watch)
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._end_at_exit())

    def discard(self, watch: _DisconnectWatch) -> None:
        self.open.discard(watch)

    async def _end_at_exit(self) -> None:
        """Until no stream is open: end them all once the server began to stop."""
        try:
            while self.open:
                await asyncio.sleep(EXIT_POLL_SECONDS)
                if _server_stopping():
                    for watch in list(self.open):
                        watch.end("stopping")
        finally:
            self.task = None


def _server_stopping() -> bool:
    """True once uvicorn's server began to stop.

    uvicorn installs its server's ``handle_exit`` as the SIGTERM handler
    and sets the server's public ``should_exit`` in it (sse-starlette finds
    it the same way). Without such a server (another ASGI server, a server
    in a thread) streams end with their requests, as the server decides.
    """
    server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return getattr(server, "should_exit", False) is True
