"""``tenxgraph serve``: the HTTP API over a compiled graph (the ``server`` extra).

``create_app(graph, ...)`` builds the FastAPI application: threads, state
and history, assistants, runs and streaming, the long-term memory store,
health endpoints and OpenAPI at ``/openapi.json``. Its routes follow
LangGraph's server API where it speaks, so the official ``langgraph-sdk``
client works against it; tenxgraph's own additions are extra endpoints in
the same style. See docs/server.md.

Importing this package imports nothing heavy; ``create_app`` imports FastAPI
when called, so ``tenxgraph --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["KEEP_ALIVE_SECONDS", "ServerSettings", "create_app"]

KEEP_ALIVE_SECONDS = 75
"""How long the server keeps an idle connection open (``tenxgraph serve --keep-alive``).

Longer than clients keep idle connections for reuse (httpx 5 s, Node's fetch 4 s,
aiohttp 15 s, a proxy's upstream pool often 60 s). A server that closes first
(uvicorn's own default is 5 s, as is httpx's) races a client that sends its next
request on the closing connection: the request fails with a read error though the
server did nothing wrong, and a POST is not retried.
"""

if TYPE_CHECKING:
    from tenxgraph.server._context import ServerSettings
    from tenxgraph.server.app import create_app


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from tenxgraph.server.app import create_app

        return create_app
    if name == "ServerSettings":
        from tenxgraph.server._context import ServerSettings

        return ServerSettings
    raise AttributeError(f"module 'tenxgraph.server' has no attribute {name!r}")
