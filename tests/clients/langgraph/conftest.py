"""One server per backend for the LangGraph-client checks (issue #33).

``langgraph_server`` (module scope, parametrized by backend) serves
``graph.build`` with a memory store (for ``store.*``) and CORS open to any
origin (the ``useStream`` page is served from another port), on SQLite and
on Postgres + Redis (a fresh schema and key prefix, dropped afterwards).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tenxgraph.testing.server import served
from tests.clients.langgraph.graph import GRAPH_ID, build
from tests.server.conftest import _checkpointer, _memory_store

BACKENDS = [
    "sqlite",
    pytest.param(
        "postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
    ),
]
"""Every check runs on both; Postgres + Redis is the slow half."""


@pytest.fixture(scope="module", params=BACKENDS)
def langgraph_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The base URL of a server of the scripted graph on the backend of the parameter."""
    from tenxgraph.server.app import create_app

    backend: str = request.param
    folder = tmp_path_factory.mktemp(f"langgraph-{backend.replace('+', '-')}")
    name = uuid.uuid4().hex[:12]
    cleanups: list[Callable[[], None]] = []
    checkpointer = _checkpointer(backend, folder, name, cleanups)
    store: Any = _memory_store(backend, folder, name)
    app = create_app(build(checkpointer), graph_id=GRAPH_ID, memory=store, cors_origins=["*"])
    app.state.context.on_shutdown.extend([checkpointer.aclose, store.aclose])
    try:
        with served(app) as url:
            yield url
    finally:
        for cleanup in cleanups:
            cleanup()
