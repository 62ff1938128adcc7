"""Servers for the HTTP tests: a graph over SQLite (or Postgres + Redis) behind real uvicorn.

``serve(graph=None, backend="sqlite", **create_app_options)`` starts a server
and returns its base URL; the checkpointer (and the memory store, when
``memory=True``) are made for the test, closed by the server's shutdown and
removed afterwards. ``make_graph(checkpointer)`` is the default graph: an
agent answering "echo: <last user text>" with one tool, ``add``.
Tests of other server parts reuse these fixtures.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import CompiledGraph, create_agent, tool
from tenxgraph.core.llm import FunctionModel
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer
from tenxgraph.testing.server import served

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"

BACKENDS = [
    "sqlite",
    pytest.param("postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis]),
]
"""The main thread tests run on both; other tests use SQLite."""

Serve = Callable[..., str]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def echo(request: Any) -> str:
    """The test model: answers with the last user text."""
    texts = [m.text() for m in request.messages if m.role == "user"]
    return f"echo: {texts[-1] if texts else ''}"


def make_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """The default served graph."""
    return create_agent(FunctionModel(echo), tools=[add], checkpointer=checkpointer)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """Start servers for the test; each call returns a new base URL."""
    cleanups: list[Callable[[], None]] = []
    with ExitStack() as stack:

        def start(
            graph: Callable[[Checkpointer], CompiledGraph[Any]] = make_graph,
            backend: str = "sqlite",
            memory: bool = False,
            **options: Any,
        ) -> str:
            from tenxgraph.server.app import create_app

            name = uuid.uuid4().hex[:12]
            checkpointer = _checkpointer(backend, tmp_path, name, cleanups)
            store = _memory_store(backend, tmp_path, name) if memory else None
            app = create_app(graph(checkpointer), memory=store, **options)
            app.state.context.on_shutdown.append(checkpointer.aclose)
            if store is not None:
                app.state.context.on_shutdown.append(store.aclose)
            return stack.enter_context(served(app))

        yield start
    for cleanup in cleanups:
        cleanup()


@pytest.fixture
def serve_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The variables ``tenxgraph serve`` sets, for a graph module written in ``tmp_path``."""
    module = f"served_graph_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "from tenxgraph.core.graph import create_agent\n"
        "from tenxgraph.core.llm import FunctionModel\n"
        "graph = create_agent(FunctionModel(lambda request: 'hi'))\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return {
        "TENXGRAPH_SERVE_GRAPH": f"{module}:graph",
        "TENXGRAPH_SERVE_DB": str(tmp_path / "threads.sqlite"),
        "TENXGRAPH_SERVE_NO_AUTH": "1",
    }


def _checkpointer(
    backend: str, tmp_path: Path, name: str, cleanups: list[Callable[[], None]]
) -> Checkpointer:
    if backend == "sqlite":
        return SqliteCheckpointer(str(tmp_path / f"{name}.sqlite"))
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

    schema, prefix = f"tg_srv_{name}", f"tg-srv-{name}:"
    cleanups.append(lambda: _drop(schema, prefix))
    return PgCheckpointer(PG_DSN, schema=schema, redis=_redis_cache(prefix), pool_size=4)


def _redis_cache(prefix: str) -> Any:
    from tenxgraph.storage.checkpointer.redis_cache import RedisThreadCache

    return RedisThreadCache(REDIS_URL, prefix=prefix)


def _memory_store(backend: str, tmp_path: Path, name: str) -> Any:
    if backend == "sqlite":
        from tenxgraph.storage.longterm import SqliteMemoryStore

        return SqliteMemoryStore(str(tmp_path / f"{name}-memory.sqlite"))
    from tenxgraph.storage.longterm import PgMemoryStore

    return PgMemoryStore(PG_DSN, schema=f"tg_srv_{name}", pool_size=2)  # dropped with the threads


def _drop(schema: str, prefix: str) -> None:
    import psycopg
    import redis

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def langchain_message(message: Any) -> Any:
    """``message`` (a dict the server sent) checked as a LangChain message, loaded by
    langchain_core: the shape the LangGraph SDKs read (``type``, ``id``, ``content``,
    ``tool_calls``)."""
    from langchain_core.messages import messages_from_dict

    assert isinstance(message, dict), message
    assert message["type"] in ("human", "ai", "tool", "system", "AIMessageChunk"), message
    assert isinstance(message["id"], str) and message["id"], message
    assert isinstance(message["content"], str | list), message
    if message["type"] in ("ai", "AIMessageChunk"):
        assert all(call["type"] == "tool_call" for call in message["tool_calls"]), message
    (loaded,) = messages_from_dict([{"type": message["type"], "data": message}])
    return loaded


def message_text(message: dict[str, Any]) -> str:
    """The text of a LangChain message dict the server sent (checked as one)."""
    return str(langchain_message(message).text)
