"""A TCP proxy in front of a test server that cuts a run's stream after some bytes.

The clients' resume is tested against a real dropped connection: the proxy
forwards bytes both ways and, on a connection whose request asked for a run's
stream (``.../runs/stream`` or ``.../runs/{id}/stream``), closes both sockets
once ``cut_after`` bytes of the answer went through (``cuts`` times in all).
It records each request's head so a test can check the client came back with
``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tenxgraph.testing.server import free_port

_UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b'content-length: 33\r\nconnection: close\r\n\r\n{"detail": "restarting, retry"}\r\n'
)
_STREAM_REQUEST = re.compile(rb"^(GET|POST) \S*/runs/(?:[^/\s]+/)?stream\b", re.MULTILINE)


@dataclass
class CuttingProxy:
    """Forwards 127.0.0.1:``port`` to ``target_port``; cuts stream answers ``cuts`` times."""

    target_port: int
    cut_after: int
    cuts: int = 1
    port: int = 0
    heads: list[str] = field(default_factory=list)
    """The head of every request that asked for a stream, in order."""
    cut: int = 0
    """How many connections were cut so far."""
    refuse_resumes: int = 0
    """How many resumes (``GET .../stream``) to answer 503 before letting one through."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers = [writer]
        tasks: list[asyncio.Future[None]] = []
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            writers.append(up_writer)
            armed = asyncio.Event()
            tasks += [
                asyncio.ensure_future(self._upward(reader, writer, up_writer, armed)),
                asyncio.ensure_future(self._downward(up_reader, writer, armed)),
            ]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the proxy stops: every socket is closed, never left to the GC
            for task in tasks:
                task.cancel()
            for stream_writer in writers:
                stream_writer.close()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _upward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_writer: asyncio.StreamWriter,
        armed: asyncio.Event,
    ) -> None:
        while data := await reader.read(65536):
            match = _STREAM_REQUEST.search(data)
            if match:
                self.heads.append(data.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
            if match and match.group(1) == b"GET" and self.refuse_resumes > 0:
                self.refuse_resumes -= 1
                writer.write(_UNAVAILABLE)
                await writer.drain()
                return
            if match and self.cut < self.cuts and not armed.is_set():
                armed.set()
            up_writer.write(data)
            await up_writer.drain()

    async def _downward(
        self, up_reader: asyncio.StreamReader, writer: asyncio.StreamWriter, armed: asyncio.Event
    ) -> None:
        sent = 0
        while data := await up_reader.read(1024):
            if armed.is_set():
                if sent + len(data) > self.cut_after:
                    writer.write(data[: max(0, self.cut_after - sent)])
                    await writer.drain()
                    self.cut += 1
                    return
                sent += len(data)
            writer.write(data)
            await writer.drain()


@contextmanager
def cutting_proxy(
    target_url: str, cut_after: int, cuts: int = 1, refuse_resumes: int = 0
) -> Iterator[CuttingProxy]:
    """Run a ``CuttingProxy`` in front of ``target_url`` in its own thread and loop."""
    port = int(target_url.rsplit(":", 1)[1])
    proxy = CuttingProxy(port, cut_after, cuts, free_port(), refuse_resumes=refuse_resumes)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    server: list[asyncio.Server] = []

    async def serve() -> None:
        server.append(await asyncio.start_server(proxy._handle, "127.0.0.1", proxy.port))
        started.set()

    thread = threading.Thread(target=loop.run_forever, name=f"proxy:{proxy.port}", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(5)
    started.wait(5)

    async def stop() -> None:
        server[0].close()
        await server[0].wait_closed()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.05)  # the closed transports release their sockets on the loop

    try:
        yield proxy
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
