"""Custom stream data: a node or a tool streams what it likes with ``get_stream_writer()``.

``get_stream_writer()`` returns a function; each call of it adds a
``CustomEvent(node, data)`` to the run's stream (LangGraph's
``stream_mode="custom"``). The writer lives in the node's ``InterruptScope``
(the one context variable a running node already has), so it reaches sync
code on worker threads and each tool of a ``ToolNode`` too.

The run loop takes what was written whenever it yields: before each event a
streaming node (an ``Agent``, a ``ToolNode``) yields, and at the end of each
step, before the step's own events. A function node that takes a ``writer``
parameter gets the writer there and streams: what it writes is yielded as it
is written. A run nothing streams (``invoke``) has no reader: its writers
discard what they get.

The same sink carries, when the stream yields subgraphs' events, the events
of a graph that code runs itself (a graph a node invokes, an agent tool's
agent, see ``_agent_tools``), as ``SubgraphEvent``s whose namespace starts
with the node's name (``put``, the scope's ``forward``), and the deltas of a
parallel step's tasks; they are yielded as written data is.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable, Collection
from typing import Any, TypeAlias

from tenxgraph.core.graph._events import CustomEvent, MessageEvent, StreamEvent, SubgraphEvent
from tenxgraph.core.graph._interrupt import _scope
from tenxgraph.errors import UsageError

__all__ = ["CustomSink", "StreamWriter", "get_stream_writer", "with_writer", "written_before"]

StreamWriter: TypeAlias = Callable[[Any], None]
"""``write(data)``: stream ``data`` as a ``CustomEvent`` of the running node."""


class CustomSink:
    """A streamed run's custom data and forwarded events: put from any thread, taken by the loop."""

    __slots__ = ("_items", "_wake")

    def __init__(self) -> None:
        self._items: deque[CustomEvent | MessageEvent | SubgraphEvent] = (
            deque()
        )  # append, popleft: thread-safe
        self._wake: Callable[[], object] | None = None

    def writer(self, node: str) -> StreamWriter:
        """The writer of the code node ``node`` runs."""

        def write(data: Any) -> None:
            self.put(CustomEvent(node, data))

        return write

    def put(self, event: CustomEvent | MessageEvent | SubgraphEvent) -> None:
        """Stream ``event``: a subgraph's (``forward``), a parallel step's task's delta."""
        self._items.append(event)
        wake = self._wake
        if wake is not None:
            wake()

    async def written_or_done(self, tasks: Collection[asyncio.Future[Any]]) -> None:
        """Wait until something is written (on any thread) or one of ``tasks`` is done."""
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        self._wake = lambda: loop.call_soon_threadsafe(wake)  # set before looking: no lost write
        try:
            if not self._items:
                await asyncio.wait((*tasks, woken), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._wake = None
            woken.cancel()

    def take(self) -> list[CustomEvent | MessageEvent | SubgraphEvent]:
        """What was written since the last ``take``, in order."""
        items = self._items
        taken: list[CustomEvent | MessageEvent | SubgraphEvent] = []
        while items:
            taken.append(items.popleft())
        return taken

    def __bool__(self) -> bool:
        return bool(self._items)


def get_stream_writer() -> StreamWriter:
    """The writer of the running node or tool: ``get_stream_writer()({"progress": 0.5})``.

    Each call streams its data as a ``CustomEvent`` (the server's ``custom``
    stream mode). Under ``invoke``, where nothing reads the stream, the data
    is dropped. Only valid inside a node or a tool while a graph runs.
    """
    scope = _scope.get()
    if scope is None:
        raise UsageError("get_stream_writer() can only be called inside a running node or tool")
    return scope.writer or _discard


def with_writer(function: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    """``function`` called with ``writer=get_stream_writer()`` (a node that asks for it)."""
    if is_async:

        @functools.wraps(function)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return await function(*args, writer=get_stream_writer(), **kwargs)

        return call_async

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, writer=get_stream_writer(), **kwargs)

    return call


def _discard(data: Any) -> None:
    """The writer of a run nothing streams."""
    del data


def written_before(sink: CustomSink | None, events: list[StreamEvent]) -> list[StreamEvent]:
    """``events`` after what was written since the last take (a step's events, its end's)."""
    if not sink:
        return events
    return [*sink.take(), *events]
