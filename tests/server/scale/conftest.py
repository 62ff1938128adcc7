"""Shared pieces of the scale-out tests: a private Postgres schema and Redis key prefix per test."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.storage.servers import PrivatePostgres, PrivateRedis

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def schema() -> Iterator[str]:
    """A schema of the test's own, dropped after it."""
    import psycopg

    name = f"tg_scale_{uuid.uuid4().hex[:10]}"
    yield name
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def prefix() -> Iterator[str]:
    """A Redis key prefix of the test's own; its keys are deleted after it (never a flush)."""
    import redis

    name = f"tg-scale-{uuid.uuid4().hex[:10]}:"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{name}*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    """A Redis of the test's own on a spare port, to stop, hang or restart (not the shared one)."""
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
    """A PostgreSQL of the session's own on a spare port, to stop and start (not the shared one)."""
    if not _private_postgres_cluster.running:
        _private_postgres_cluster.start()
    return _private_postgres_cluster
