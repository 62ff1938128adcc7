"""``/mcp``: the served graph as an MCP tool over streamable HTTP, behind the same API keys.

Mounted by ``create_app`` when the ``mcp`` extra is installed. Each request
is authenticated as every other route is (``Authorization: Bearer KEY`` or
``x-api-key``; 401 without a valid key) and the tool runs as that key's
user, so the threads it makes are the user's, readable through the HTTP API
(``tenxgraph.mcp._server`` says how calls map to threads). The SDK's session
manager runs for the life of the app (its lifespan).

**Decision — DNS rebinding protection only without keys.** A server without
keys answers anyone who reaches it, which ``tenxgraph serve`` allows on a
loopback address; there a web page could reach it through a rebound name,
so the SDK's Host and Origin checks are on. With keys, a request without
one is refused anyway and the server may be reached under any name.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tenxgraph.server._context import ServerContext
from tenxgraph.server.auth import authenticated_user, no_auth

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import Context
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MCP_PATH", "install_mcp"]

MCP_PATH = "/mcp"
_USER = "tenxgraph_user"


def install_mcp(app: FastAPI, context: ServerContext) -> bool:
    """Serve ``/mcp`` when the SDK is installed; True if it was installed."""
    try:
        import mcp  # noqa: F401 - only whether the SDK is there
    except ImportError:
        return False
    from tenxgraph.mcp import graph_server

    server = graph_server(
        context.graph, name=context.graph_id, user_of=_user_of, manage_toolsets=False
    )
    endpoint = _Authenticated(context)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))
    stack = AsyncExitStack()

    async def start() -> None:
        # a session manager runs once: each start of the app (a test client's too) gets its own
        endpoint.app = server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            host="127.0.0.1" if context.authenticate is no_auth else "0.0.0.0",
        )
        await stack.enter_async_context(server.session_manager.run())

    async def stop() -> None:
        await stack.aclose()
        endpoint.app = None

    context.on_startup.append(start)
    context.on_shutdown.append(stop)
    return True


def _user_of(ctx: Context) -> str | None:
    request: Any = ctx.request_context.request
    state = getattr(request, "scope", {}).get("state", {})
    user = state.get(_USER)
    return user if isinstance(user, str) else None


class _Authenticated:
    """Lets a request through to the MCP app only with a valid key; notes its user."""

    def __init__(self, context: ServerContext) -> None:
        self.app: ASGIApp | None = None
        """The SDK's app, while the server runs (see ``install_mcp``)."""
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = await authenticated_user(self.context.authenticate, Request(scope))
        if user is None:
            response = JSONResponse(
                {"detail": "missing or invalid API key"},
                status_code=401,
                headers={"www-authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        if self.app is None:  # only between the app's stop and a new start
            await JSONResponse({"detail": "the MCP endpoint is not running"}, 503)(
                scope, receive, send
            )
            return
        scope.setdefault("state", {})[_USER] = user
        await self.app(scope, receive, send)
