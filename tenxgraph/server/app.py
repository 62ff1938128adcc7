"""The FastAPI application: ``create_app(graph, ...)`` and ``app_from_env`` for uvicorn workers.

The app is assembled from one router per concern (threads, assistants,
runs, store, tenxgraph's extras) over one ``ServerContext`` on
``app.state.context``. Health endpoints and the web page need no key;
everything else runs as the user the authenticate function returns.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from tenxgraph.errors import ConfigError
from tenxgraph.server._context import (
    MAX_BODY_BYTES,
    Authenticate,
    Context,
    ServerContext,
    ServerSettings,
)
from tenxgraph.server._limits import (
    MAX_CONTENT_BLOCKS,
    MAX_DEPTH,
    MAX_KEYS,
    MAX_MESSAGES,
    BodyLimit,
    JsonLimits,
)
from tenxgraph.server._web_origin import SecurityHeaders, mount_docs
from tenxgraph.server.auth import no_auth
from tenxgraph.server.http_errors import install_error_handlers

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.storage.longterm.base import MemoryStore
    from tenxgraph.storage.media.base import MediaStore

__all__ = ["app_from_env", "create_app"]

STATIC = Path(__file__).parent / "static"
"""The built-in web page (``index.html`` served at ``/``, the folder at ``/static``)."""


def create_app(
    graph: CompiledGraph[Any],
    *,
    graph_id: str | None = None,
    authenticate: Authenticate | None = None,
    memory: MemoryStore | None = None,
    media: MediaStore | None = None,
    cors_origins: Sequence[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
    max_messages: int = MAX_MESSAGES,
    max_content_blocks: int = MAX_CONTENT_BLOCKS,
    max_keys: int = MAX_KEYS,
    max_depth: int = MAX_DEPTH,
    extra_settings: dict[str, Any] | None = None,
    keep_traces: int | None = None,
) -> FastAPI:
    """The HTTP API serving ``graph``, whose checkpointer holds the threads.

    ``graph_id`` names the graph (and its one assistant; default the graph's
    name, else ``"agent"``). ``authenticate(request) -> user id | None`` (sync
    or async) decides who is calling; None means no auth (everyone is the
    ``"default"`` user). ``memory`` serves ``/store``; ``media`` serves
    ``/media``. ``cors_origins`` lists the origins browsers may call from
    (``"*"`` for any). Bodies over ``max_body_bytes`` get 413, as do JSON
    bodies with more than ``max_messages`` messages, a message with more
    than ``max_content_blocks`` content blocks, an object with more than
    ``max_keys`` keys, or nesting deeper than ``max_depth`` (see
    ``tenxgraph.server._limits.JsonLimits``). ``keep_traces`` is how many recent
    traces the server keeps for ``/threads/{id}/runs/{run_id}/trace`` (0: none;
    None: only when an OpenTelemetry SDK tracer provider is already set).
    """
    if graph.checkpointer is None:
        raise ConfigError("the served graph needs a checkpointer: compile it with one")
    if max_body_bytes <= 0:
        raise ConfigError(f"max_body_bytes must be positive, got {max_body_bytes}")
    context = ServerContext(
        graph=graph,
        graph_id=graph_id or _graph_name(graph),
        authenticate=authenticate or no_auth,
        memory=memory,
        media=media,
        settings=ServerSettings(
            max_body_bytes=max_body_bytes,
            json_limits=JsonLimits(max_messages, max_content_blocks, max_keys, max_depth),
            cors_origins=tuple(cors_origins),
            extra=dict(extra_settings or {}),
        ),
    )
    app = FastAPI(
        title="tenxgraph",
        summary="Threads, runs and memory of a tenxgraph graph (LangGraph-compatible API).",
        lifespan=_lifespan,
        docs_url=None,  # served by mount_docs from packaged assets, not a CDN
        redoc_url=None,
    )
    app.state.context = context
    from tenxgraph.server.traces import keep_traces as keep

    keep(keep_traces)
    from tenxgraph.server._run_parts import install_registry

    install_registry(context)
    _start_crons(context)
    install_error_handlers(app)
    _include_routers(app)
    _serve_toolsets(app, context)
    _mount_web_page(app)
    mount_docs(app)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if context.settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(context.settings.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["content-location", "location", "x-pagination-total"],
        )
    app.add_middleware(SecurityHeaders)  # outermost: every answer carries nosniff and a CSP
    return app


def _start_crons(context: ServerContext) -> None:
    """Run the cron scheduler with the server, over whichever registry it ends up with."""
    from tenxgraph.server.crons import open_crons

    context.on_startup.append(lambda: open_crons(context))


def _serve_toolsets(app: FastAPI, context: ServerContext) -> None:
    """Open the graph's toolsets (MCP servers) with the app, close them with it; serve /mcp."""
    from tenxgraph.server.mcp_endpoint import install_mcp

    for toolset in context.graph.toolsets():
        context.on_startup.append(toolset.aprepare)
        context.on_shutdown.append(toolset.aclose)
    install_mcp(app, context)


def _graph_name(graph: CompiledGraph[Any]) -> str:
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name else "agent"


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    context: ServerContext = app.state.context
    for start in context.on_startup:
        await start()
    try:
        yield
    finally:
        for stop in reversed(context.on_shutdown):
            await stop()


def _include_routers(app: FastAPI) -> None:
    from tenxgraph.server import (
        _metrics,
        assistants,
        crons,
        extras,
        remote_tools,
        store,
        thread_protocol,
        thread_stream,
        threads,
        traces,
    )
    from tenxgraph.server.runs import router as runs_router

    # Routes are matched in order, so the run routes, which every streamed run hits, come
    # first. Recent FastAPI (0.165 here) keeps each included router whole and tries them one
    # by one; older FastAPI copies their routes into the app's own list, in the same
    # order: first either way. No path of another router matches theirs, so the order
    # changes nothing else.
    app.include_router(runs_router)
    # an included router costs more to try than a route: the tool results route comes
    # after the run routes every streamed run has to pass
    app.include_router(remote_tools.router)
    app.include_router(_health_router())
    app.include_router(_metrics.router)
    app.include_router(assistants.router)
    app.include_router(threads.router)
    app.include_router(thread_stream.router)
    app.include_router(thread_protocol.router)
    app.include_router(crons.router)
    app.include_router(store.router)
    app.include_router(extras.router)
    app.include_router(traces.router)


def _health_router() -> Any:
    from fastapi import APIRouter

    router = APIRouter(tags=["health"])

    @router.get("/ok")
    @router.get("/health")
    async def health() -> dict[str, bool]:
        """Liveness: the process answers (no key needed)."""
        return {"ok": True}

    @router.get("/ready")
    async def ready(context: Context) -> JSONResponse:
        """Readiness: the checkpointer answers a query in time (503 otherwise)."""
        try:
            await context.graph.athread_info({"thread_id": "__ready__", "user_id": "__ready__"})
        except Exception as exc:  # any failure means not ready; say which
            detail = f"storage not ready: {type(exc).__name__}: {exc}"
            return JSONResponse({"ok": False, "detail": detail}, status_code=503)
        for name, check in context.state.get("ready_checks", ()):  # the run queue, Redis
            try:
                await check()
            except Exception as exc:
                detail = f"{name} not ready: {type(exc).__name__}: {exc}"
                return JSONResponse({"ok": False, "detail": detail}, status_code=503)
        return JSONResponse({"ok": True})

    @router.get("/info")
    async def info(context: Context) -> dict[str, Any]:
        """What this server serves (no key needed)."""
        from tenxgraph import __version__

        return {
            "version": __version__,
            "graph_id": context.graph_id,
            "flags": {"assistants": True, "crons": True, "store": context.memory is not None},
        }

    return router


def _mount_web_page(app: FastAPI) -> None:
    index = STATIC / "index.html"
    if not index.is_file():
        return
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def web_page() -> FileResponse:
        return FileResponse(index)


def app_from_env(environ: dict[str, str] | None = None) -> FastAPI:
    """The app ``tenxgraph serve`` describes in environment variables (for uvicorn workers).

    uvicorn starts each worker process from an import string, so the
    command's options travel as ``TENXGRAPH_SERVE_*`` variables (see
    ``tenxgraph.cli.serve``), read here once per process (from ``os.environ``
    unless ``environ`` is given).
    """
    from tenxgraph.server._from_env import settings_from_env

    settings = settings_from_env(environ)
    app = create_app(settings.graph, **settings.options)
    settings.attach(app)
    context: ServerContext = app.state.context
    collector = _Collector()
    context.on_startup.append(collector.tune)  # last: after the stores' start-up
    context.on_shutdown.insert(0, collector.restore)
    return app


class _Collector:
    """The garbage collector's settings for a serving process (``app_from_env``'s app).

    What start-up built (modules, the graph, schemas, pools) lives as long as
    the process, yet each full collection walked it all: about 200,000 objects
    and 100 ms a pass in a W10 worker (three passes in 300 runs). It is frozen
    (``gc.freeze``, after collecting the garbage start-up left). With 100 runs
    in flight most young objects outlive 700 allocations (the default first
    threshold), so the young passes walked them again and again: 7,000 makes a
    tenth of the passes, each a few ms. Measured in W10's worker: the
    collector's CPU 1.7 ms a run -> 0.25 ms.
    """

    YOUNG = 7_000

    def __init__(self) -> None:
        self.threshold = gc.get_threshold()

    async def tune(self) -> None:
        """Freeze what start-up built; collect the young generation less often."""
        self.threshold = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(max(self.threshold[0], self.YOUNG), *self.threshold[1:])

    async def restore(self) -> None:
        """Hand the frozen objects back and restore the thresholds (a process may go on)."""
        gc.unfreeze()
        gc.set_threshold(*self.threshold)
