"""A run's event stream that survives a dropped connection: resume with ``Last-Event-ID``.

The server numbers each event of a run (its SSE ``id``) and keeps them, so a
client that loses the connection asks for the run's stream again
(``GET /threads/{thread_id}/runs/{run_id}/stream``) with the id of the last
event it received, and gets every later event once. The client also drops any
event whose id it has already yielded, so a server that replays too much
never shows the reader a repeat.

A stream that closes cleanly without an ``end`` or ``error`` event looks the
same as one a proxy cut; the client then asks the run's status and resumes
if the run is still pending or running. A resume answered 429, 502, 503 or
504 (a server restarting behind its proxy) counts as one more drop.
Reconnects back off (0.1 s doubling to 2 s) and give up with
``APIConnectionError`` after ``max_reconnects`` attempts in a row that
brought no new event.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from tenxgraph.client._events import MetadataPart, StreamPart, parse_part
from tenxgraph.client._threads import segment
from tenxgraph.client._transport import Transport, _httpx
from tenxgraph.errors import APIConnectionError, APIStatusError

__all__ = ["StreamRequest", "resumable_stream", "run_path"]

_RUN_PATH = re.compile(r"(?:.*)?(/threads/[^/]+/runs/[^/?#]+)")
_ENDING = frozenset({"end", "error"})
_TRANSIENT = frozenset({429, 502, 503, 504})
"""Answers to a resume that mean "try again soon", like a dropped connection."""


@dataclass
class StreamRequest:
    """How to open a run's stream, and what it learned while reading (for a resume)."""

    method: str
    path: str
    body: Any = None
    thread_id: str | None = None
    run_id: str | None = None
    last_event_id: str | None = None
    max_reconnects: int = 5
    seen: set[str] = field(default_factory=set)

    def resume_path(self) -> str | None:
        """The run's stream to rejoin, once the run's id is known."""
        if self.thread_id is None or self.run_id is None:
            return None
        return run_path(self.thread_id, self.run_id, "stream")


async def resumable_stream(
    transport: Transport, request: StreamRequest
) -> AsyncIterator[StreamPart]:
    """Yield the run's events once each, resuming after drops, until it ends."""
    failures = 0
    first = True
    while True:
        ended = False
        try:
            async for part in _read_once(transport, request, first):
                failures = 0
                ended = ended or part.event.split("|", 1)[0] in _ENDING
                yield part
        except APIConnectionError:
            if request.resume_path() is None:
                raise
        except APIStatusError as exc:  # reopening met a server restarting or overloaded
            if first or exc.status not in _TRANSIENT:
                raise
        else:
            if (
                ended
                or request.resume_path() is None
                or not await _still_running(transport, request)
            ):
                return
        first = False
        failures += 1
        if failures > request.max_reconnects:
            raise APIConnectionError(
                f"the stream of run {request.run_id} dropped {failures} times in a row "
                f"without a new event; gave up after event {request.last_event_id}"
            )
        await asyncio.sleep(min(2.0, 0.1 * 2 ** (failures - 1)))


async def _read_once(
    transport: Transport, request: StreamRequest, first: bool
) -> AsyncIterator[StreamPart]:
    """One connection: open it (or reopen the run's stream) and yield its new events."""
    headers = {"Last-Event-ID": request.last_event_id} if request.last_event_id else {}
    if first:
        method, path, body = request.method, request.path, request.body
    else:
        method, path, body = "GET", request.resume_path() or request.path, None
    from httpx_sse import EventSource

    httpx = _httpx()
    async with transport.stream(method, path, json_body=body, headers=headers) as response:
        _learn_run(request, response.headers.get("content-location", ""))
        try:
            async for sse in EventSource(response).aiter_sse():
                if sse.id:
                    if sse.id in request.seen:
                        continue  # already yielded before the drop
                    request.seen.add(sse.id)
                    request.last_event_id = sse.id
                part = parse_part(sse.event, sse.data, sse.id or None)
                if isinstance(part, MetadataPart) and part.run_id:
                    request.run_id = request.run_id or part.run_id
                yield part
        except httpx.TransportError as exc:
            raise APIConnectionError(f"the stream of run {request.run_id} dropped: {exc}") from exc


def run_path(thread_id: str, run_id: str, action: str = "") -> str:
    """The run's URL path (``/threads/{t}/runs/{r}``, then ``/action``), each id one segment."""
    path = f"/threads/{segment(thread_id)}/runs/{segment(run_id)}"
    return f"{path}/{action}" if action else path


def _learn_run(request: StreamRequest, location: str) -> None:
    """Take the thread and run ids from a ``Content-Location: /threads/{t}/runs/{r}``."""
    match = _RUN_PATH.match(location)
    if match is None:
        return
    parts = match.group(1).split("/")
    request.thread_id = request.thread_id or unquote(parts[2])
    request.run_id = request.run_id or unquote(parts[4])


async def _still_running(transport: Transport, request: StreamRequest) -> bool:
    """Whether a stream that closed without ``end`` belongs to a run still going."""
    try:
        assert request.thread_id is not None and request.run_id is not None  # resume_path() is set
        run = await transport.request("GET", run_path(request.thread_id, request.run_id))
    except APIConnectionError:
        return True  # the server is restarting: try the stream again
    return isinstance(run, dict) and run.get("status") in ("pending", "running")
