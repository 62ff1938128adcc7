"""What every endpoint needs: the served graph, its stores, the settings, and the caller.

``create_app`` puts one ``ServerContext`` on ``app.state.context``; endpoints
receive it through the ``get_context`` dependency and the caller's tenant
through ``current_user``. Nothing here is global: two apps in one process
serve two graphs with their own settings (invariant 5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends
from starlette.requests import Request

from tenxgraph.server._limits import JsonLimits
from tenxgraph.server._message_format import MessageEncoder, message_encoder

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.storage.longterm.base import MemoryStore
    from tenxgraph.storage.media.base import MediaStore

__all__ = [
    "Authenticate",
    "Caller",
    "Context",
    "RunCaller",
    "ServerContext",
    "ServerSettings",
    "User",
    "current_user",
    "get_context",
    "thread_config",
]

Authenticate = Callable[["Request"], "str | Awaitable[str | None] | None"]
"""Maps a request to the caller's user id (the tenant of its threads); None refuses it (401)."""

MAX_BODY_BYTES = 10 << 20
"""The largest request body accepted by default (10 MiB); larger ones get 413."""


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Limits and options of one server."""

    max_body_bytes: int = MAX_BODY_BYTES
    """Request bodies over this many bytes are refused with 413 before they are read whole."""
    json_limits: JsonLimits = field(default_factory=JsonLimits)
    """Counts a JSON body may not pass (messages, content blocks, keys, depth): 413 over them."""
    cors_origins: tuple[str, ...] = ()
    """Origins browsers may call the API from (``"*"``: any); empty turns CORS off."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Settings of other server parts (runs, remote tools), by name."""


@dataclass(slots=True)
class ServerContext:
    """The served graph and its stores; one per app, on ``app.state.context``."""

    graph: CompiledGraph[Any]
    """The graph every run of this server runs; threads are read and written through its
    thread operations (``aget_state``, ``athread_info``, ``alist_threads``...), never
    through its checkpointer."""
    graph_id: str
    """The graph's id, which is also the one assistant's id (``assistant_id``)."""
    authenticate: Authenticate
    """Who is calling (see ``tenxgraph.server.auth``)."""
    memory: MemoryStore | None = None
    """The long-term memory store behind ``/store``; None answers those routes with 404."""
    media: MediaStore | None = None
    """The media store behind ``/media``; None answers those routes with 404."""
    settings: ServerSettings = field(default_factory=ServerSettings)
    state: dict[str, Any] = field(default_factory=dict)
    """Room for other server parts (the run manager keeps itself here under ``"runs"``)."""
    on_startup: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """Awaited in order when the server starts (before it accepts requests)."""
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """Awaited in reverse order when the server stops (after the last request)."""


def get_context(request: Request) -> ServerContext:
    """FastAPI dependency: the app's ``ServerContext``."""
    context: ServerContext = request.app.state.context
    return context


async def current_user(request: Request) -> str:
    """FastAPI dependency: the caller's user id, from the app's authenticate function.

    Every thread, run and store item is scoped to it: another user's thread
    is answered with 404, as if it did not exist. A request the function
    refuses gets 401. The answer is kept on ``request.state.user`` for the
    rest of the request.
    """
    known: str | None = getattr(request.state, "user", None)
    if known is not None:
        return known
    from fastapi import HTTPException

    from tenxgraph.server.auth import authenticated_user

    user = await authenticated_user(get_context(request).authenticate, request)
    if user is None:
        raise HTTPException(
            401,
            "missing or unknown API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    request.state.user = user
    return user


def thread_config(thread_id: str, user: str, **extra: Any) -> dict[str, Any]:
    """The run config naming ``thread_id`` in ``user``'s tenant."""
    return {"thread_id": thread_id, "user_id": user, **extra}


async def _awaited_context(request: Request) -> ServerContext:
    # FastAPI runs a sync dependency in its thread pool: a thread hand-off per
    # request, once the largest single cost of a streamed run's request.
    return get_context(request)


Context = Annotated[ServerContext, Depends(_awaited_context)]
"""A route parameter typed ``Context`` receives the app's ``ServerContext`` (on the event loop)."""

User = Annotated[str, Depends(current_user)]
"""A route parameter typed ``User`` receives the caller's user id (401 when refused)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """What a run route needs of its request: the app's context, the caller, the message format."""

    context: ServerContext
    user: str
    """The caller's user id (``current_user``: 401 when refused)."""
    encode: MessageEncoder
    """How the messages of the answer are written (``X-Message-Format``)."""


async def _caller(request: Request) -> Caller:
    # One dependency where ``Context``, ``User`` and ``Encode`` were three: FastAPI
    # solves each one with a pass of its own (its parameters, its cache key), which
    # every streamed run paid three times. Same checks, same order, same errors.
    return Caller(get_context(request), await current_user(request), message_encoder(request))


RunCaller = Annotated[Caller, Depends(_caller)]
"""A route parameter typed ``RunCaller`` receives a ``Caller`` (401 when refused)."""
