"""Backends for the conformance suite: memory, SQLite, Postgres, Postgres + Redis.

``make_checkpointer(**options)`` opens a checkpointer of the parametrized
kind; the durable instances made in one test share their storage (SQLite
file, Postgres schema, Redis prefix), all of it created for the test and
removed afterwards, so the suite can run again and again against the shared servers.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.storage.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    SqliteCheckpointer,
)
from tests.storage.servers import PrivatePostgres, PrivateRedis

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"

BACKENDS = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis]),
]

MakeCheckpointer = Callable[..., Checkpointer]


async def drop_schema(schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def drop_redis_keys(prefix: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
def pg_schema() -> str:
    return f"tg_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def redis_prefix() -> str:
    return f"tg-test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_checkpointer(
    backend: str, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[MakeCheckpointer]:
    made: list[Checkpointer] = []

    def make(**options: Any) -> Checkpointer:
        checkpointer: Checkpointer
        if backend == "memory":
            checkpointer = InMemoryCheckpointer(**options)
        elif backend == "sqlite":
            checkpointer = SqliteCheckpointer(tmp_path / "threads.db", **options)
        else:
            from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

            redis = RedisThreadCache(REDIS_URL, prefix=redis_prefix) if "redis" in backend else None
            checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema, redis=redis, **options)
        made.append(checkpointer)
        return checkpointer

    yield make
    for checkpointer in made:
        await checkpointer.aclose()
    if backend.startswith("postgres"):
        await drop_schema(pg_schema)
    if "redis" in backend:
        await drop_redis_keys(redis_prefix)


@pytest.fixture
def checkpointer(make_checkpointer: MakeCheckpointer) -> Checkpointer:
    return make_checkpointer()


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    """A Redis of the test's own on a spare port, to pause or kill (never the shared one)."""
    server = PrivateRedis()
    server.start()
    yield server
    server.kill()


@pytest.fixture(scope="session")
def _private_postgres_cluster() -> Iterator[PrivatePostgres]:
    root = Path(tempfile.mkdtemp(prefix="tg-private-pg-"))  # not under pytest's 0700 tmp dirs
    server = PrivatePostgres(root)
    try:
        server.init()
        yield server
    finally:
        server.remove()


@pytest.fixture
def private_postgres(_private_postgres_cluster: PrivatePostgres) -> PrivatePostgres:
    """A PostgreSQL of the session's own on a spare port, running when the test starts."""
    if not _private_postgres_cluster.running:
        _private_postgres_cluster.start()
    return _private_postgres_cluster


@asynccontextmanager
async def process_spec(
    kind: str, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[dict[str, Any]]:
    """What a child process needs to open backend ``kind`` (plain data, so it pickles);
    the Postgres schema and Redis keys are dropped afterwards."""
    if kind == "sqlite":
        yield {"kind": kind, "path": str(tmp_path / "threads.db")}
        return
    yield {
        "kind": kind,
        "dsn": PG_DSN,
        "schema": pg_schema,
        "redis_url": REDIS_URL,
        "prefix": redis_prefix,
    }
    await drop_schema(pg_schema)
    if kind == "postgres+redis":
        await drop_redis_keys(redis_prefix)


async def run_child(target: Any, spec: dict[str, Any], work: Path) -> int | None:
    """Run ``target(spec, work)`` in a fresh (spawned) process; its exit code.

    A negative code is the signal that ended it (``-SIGKILL`` for a kill test's
    victim). A child still running after 120 s is killed and fails the test.
    """
    child = multiprocessing.get_context("spawn").Process(target=target, args=(spec, str(work)))
    child.start()
    await asyncio.to_thread(child.join, 120)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail(f"{target.__name__} did not end in 120 s")
    return child.exitcode
