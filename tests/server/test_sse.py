"""The run streams' SSE response, driven as an ASGI app with a fake client."""

from __future__ import annotations

import asyncio
from typing import Any

from tenxgraph.server import _sse
from tenxgraph.server._sse import Chunks, EventStreamResponse

SCOPE = {"type": "http", "method": "GET"}


async def stays_connected() -> dict[str, Any]:
    await asyncio.Event().wait()
    raise AssertionError("never reached")


async def open_streams_closed() -> None:
    """Wait until the shutdown poller saw no stream left and ended (it is the loop's task)."""
    streams = getattr(_sse._local, "streams", None)
    poller = None if streams is None else streams.poller
    if poller is not None:
        await poller


async def test_leave_cancels_the_stream_once_so_the_chunks_finally_runs_to_its_end() -> None:
    cleaning, cleaned, finish = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def chunks() -> Chunks:
        try:
            yield b"data: 1\r\n\r\n", True
            await asyncio.Event().wait()  # the run goes on, no event yet
        finally:  # as on_disconnect=cancel: stopping the run takes a while
            cleaning.set()
            await finish.wait()
            cleaned.set()

    sent: list[dict[str, Any]] = []
    first_event = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message.get("body"):
            first_event.set()

    response = EventStreamResponse(chunks(), headers={"location": "/x"}, ping_seconds=60)
    stream = asyncio.get_running_loop().create_task(response(SCOPE, stays_connected, send))
    await first_event.wait()

    response.leave(stream)  # the client left (the watcher), or the server exits (the poller)
    await cleaning.wait()
    response.leave(stream)  # the poller again, half a second later: the stream is still open
    response.leave(stream)
    finish.set()
    await stream  # ends normally: the cancel was the response's own, taken back

    assert cleaned.is_set()
    assert sent[0]["status"] == 200 and (b"location", b"/x") in sent[0]["headers"]
    assert [m.get("body") for m in sent[1:]] == [b"data: 1\r\n\r\n"]  # left: no end of body
    await open_streams_closed()
