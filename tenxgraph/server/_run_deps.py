"""The run routes' FastAPI dependency for the app's context, awaited inline.

``tenxgraph.server._context.get_context`` is a plain function, and FastAPI
runs a sync dependency in its thread pool: a thread hand-off per request,
which was the largest single cost of a streamed run's request. This async
twin returns the same ``ServerContext`` on the event loop.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from tenxgraph.server._context import ServerContext, get_context

__all__ = ["RunContext"]


async def _context(request: Request) -> ServerContext:
    return get_context(request)


RunContext = Annotated[ServerContext, Depends(_context)]
"""A route parameter typed ``RunContext`` receives the app's ``ServerContext``."""
