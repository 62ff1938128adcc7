"""``served(app)``: a real uvicorn server on a free port, for tests that speak HTTP.

The server runs in a thread with its own event loop, so a test (sync or
async) talks to it over real sockets exactly as a client would::

    with served(create_app(graph)) as base_url:
        httpx.get(f"{base_url}/threads/...")

Give it a FastAPI app, or a graph and ``create_app``'s options. The
server stops (and its lifespan shutdown runs) when the block ends. Needs
the ``server`` extra.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tenxgraph.errors import ConfigError, UsageError

__all__ = ["free_port", "served"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def served(
    app: Any, *, host: str = "127.0.0.1", startup_timeout: float = 10.0, **app_options: Any
) -> Iterator[str]:
    """Serve ``app`` (a FastAPI app, or a ``CompiledGraph`` with ``create_app`` options).

    Yields the base URL (``http://127.0.0.1:PORT``). Raises ``UsageError``
    when the server does not start within ``startup_timeout`` seconds.
    """
    import uvicorn

    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.server import KEEP_ALIVE_SECONDS

    if isinstance(app, CompiledGraph):
        from tenxgraph.server.app import create_app

        app = create_app(app, **app_options)
    elif app_options:
        raise ConfigError("app options are for a graph; this is an app already")
    port = free_port(host)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,  # as `tenxgraph serve`: clients' pools close first
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn:{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            raise UsageError(f"the test server on port {port} did not start (see its log above)")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
