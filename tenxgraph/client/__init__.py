"""The Python client of a tenxgraph server: ``Client`` (async) and ``SyncClient``.

It speaks the LangGraph server API that ``tenxgraph serve`` implements:
threads, their state and history; runs streamed (typed parts, messages as
``Message`` objects, resumed after a dropped connection with
``Last-Event-ID``), waited for, or started in the background and joined or
cancelled; remote tools run by handlers in the client. It also speaks
tenxgraph's own routes, the ones the web page uses: a thread's whole log
beside its context window, direct tool calls, the rollback of an unfinished
turn, the graph's tools, and media. Errors are
``tenxgraph.errors.ClientError`` subclasses carrying the server's detail.

Needs the ``client`` extra (httpx, httpx-sse), imported on the first request.
See docs/clients.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "Client",
    "ContextWindow",
    "EndPart",
    "ErrorPart",
    "LogPage",
    "MessagePart",
    "MetadataPart",
    "RemoteToolCallPart",
    "StreamPart",
    "SyncClient",
    "ThreadState",
    "ToolHandler",
    "UpdatesPart",
    "ValuesPart",
    "messages_in",
]

if TYPE_CHECKING:
    from tenxgraph.client._client import Client
    from tenxgraph.client._events import (
        EndPart,
        ErrorPart,
        MessagePart,
        MetadataPart,
        RemoteToolCallPart,
        StreamPart,
        UpdatesPart,
        ValuesPart,
        messages_in,
    )
    from tenxgraph.client._remote import ToolHandler
    from tenxgraph.client._sync_client import SyncClient
    from tenxgraph.client._threads import ContextWindow, LogPage, ThreadState
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.client._client": ("Client",),
            "tenxgraph.client._events": (
                "EndPart",
                "ErrorPart",
                "MessagePart",
                "MetadataPart",
                "RemoteToolCallPart",
                "StreamPart",
                "UpdatesPart",
                "ValuesPart",
                "messages_in",
            ),
            "tenxgraph.client._remote": ("ToolHandler",),
            "tenxgraph.client._sync_client": ("SyncClient",),
            "tenxgraph.client._threads": ("ContextWindow", "LogPage", "ThreadState"),
        },
    )
