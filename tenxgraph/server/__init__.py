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

__all__ = ["ServerSettings", "create_app"]

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
