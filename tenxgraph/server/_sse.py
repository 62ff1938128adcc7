"""A lean Server-Sent Events response: encoded events to the socket, pings, and the client leaving.

``EventStreamResponse`` is a plain ASGI response for the run streams. It
sends what its chunk iterator yields as it comes (one ``send`` per chunk,
the last chunk together with the end of the body), a comment line every
``ping_seconds`` so proxies keep an idle stream open, and stops following
when the client disconnects: the iterator is closed (its ``finally`` runs),
the run it follows goes on unless that ``finally`` stops it.

One watcher task per response listens for the disconnect and sends the
pings; the chunks are sent from the request's own task. sse-starlette's
response, which this replaces on the run routes, ran four tasks in an anyio
task group and a cancel scope per write: about a sixth (16 %) of the server's
instructions per streamed run (5.98M with it, 5.03M without; ``bench/README.md``, W9).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

__all__ = ["Chunks", "EventStreamResponse"]

Chunks = AsyncGenerator[tuple[bytes, bool], None]
"""Encoded SSE events, each chunk with whether more follow (False on the last one)."""

_PING = {"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True}
_HEADERS = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
)


class EventStreamResponse(Response):
    """``text/event-stream`` of ``chunks`` until the last one, or until the client leaves.

    A ``Response`` for FastAPI (a route returning one has no response model),
    with none of its body handling: ``__call__`` is all of it.
    """

    status_code = 200

    def __init__(
        self,
        chunks: Chunks,
        *,
        headers: Mapping[str, str],
        ping_seconds: float = 15.0,
    ) -> None:
        self.chunks = chunks
        self.ping_seconds = ping_seconds
        extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        self.raw_headers = [*_HEADERS, *extra]
        self.background = None
        self._gone = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the stream; return when it ended, the client left or the server exits."""
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        stream = asyncio.current_task()
        assert stream is not None
        watcher = asyncio.get_running_loop().create_task(self._watch(receive, send, stream))
        open_streams = _open_streams()
        open_streams[self] = stream
        try:
            async with contextlib.aclosing(self.chunks) as chunks:
                async for chunk, more in chunks:
                    if not more:
                        watcher.cancel()  # no ping after the body's end
                    await send({"type": "http.response.body", "body": chunk, "more_body": more})
                    if not more:
                        return
            watcher.cancel()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not self._gone:  # a cancel that is not leave()'s (the server's own): not ours
                raise
            stream.uncancel()
        finally:
            watcher.cancel()
            open_streams.pop(self, None)

    async def _watch(self, receive: Receive, send: Send, stream: asyncio.Task[object]) -> None:
        """Ping every ``ping_seconds``; cancel ``stream`` when the client disconnects.

        This task only runs while ``stream`` waits (one thread), so the
        cancel lands at one of ``stream``'s awaits in ``__call__``, and
        ``__call__`` cancels this task before it sends the body's end.
        """
        while True:
            try:
                async with asyncio.timeout(self.ping_seconds):
                    message = await receive()
            except TimeoutError:
                await send(_PING)
                continue
            if message["type"] == "http.disconnect":
                self.leave(stream)
                return

    def leave(self, stream: asyncio.Task[Any]) -> None:
        """Stop sending: the client left, or the server exits (the response stays unfinished).

        Once only: the watcher and the shutdown poller (every half second, for
        as long as the stream is open) may both call it, and a second cancel
        would land in the chunks' ``finally`` (which may await, e.g. cancel the run).
        """
        if self._gone:
            return
        self._gone = True
        stream.cancel()


class _OpenStreams(dict[EventStreamResponse, "asyncio.Task[Any]"]):
    """The open streams of this thread, ended when uvicorn is told to exit (Ctrl-C, SIGTERM).

    uvicorn waits for open connections before it shuts the app down (and
    with it the runs), so a stream of a long run would hold the exit. Its
    exit flag is read from its signal handler, a bound method of its
    ``Server``, every half second while streams are open (as sse-starlette
    does). So this works only where uvicorn's ``Server`` runs in the main
    thread, which is where it installs that handler (``tenxgraph serve``, or
    ``uvicorn.run`` called from the main thread). Elsewhere (uvicorn in
    another thread, another server or process manager) an open stream holds
    the exit until its run ends, or until the server's own graceful-shutdown
    timeout (uvicorn's ``timeout_graceful_shutdown``), when one is set.
    """

    poller: asyncio.Task[None] | None = None

    async def poll(self) -> None:
        try:
            while self:
                await asyncio.sleep(0.5)
                server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
                if getattr(server, "should_exit", False) is True:
                    for response, stream in list(self.items()):
                        response.leave(stream)
        finally:
            self.poller = None


_local = threading.local()


def _open_streams() -> _OpenStreams:
    streams: _OpenStreams | None = getattr(_local, "streams", None)
    if streams is None:
        streams = _local.streams = _OpenStreams()
    if streams.poller is None or streams.poller.get_loop() is not asyncio.get_running_loop():
        streams.poller = asyncio.get_running_loop().create_task(streams.poll())
    return streams
