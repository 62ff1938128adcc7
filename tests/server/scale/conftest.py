"""Shared pieces of the scale-out tests: a private Postgres schema and Redis key prefix per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.storage.servers import PrivateRedis

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
