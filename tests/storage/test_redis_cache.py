"""The Redis cache in front of Postgres: used when it matches, never trusted when it does not."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError
from tenxgraph.storage.checkpointer import ThreadKey, ThreadWrite
from tests.storage.conftest import PG_DSN, REDIS_URL, drop_redis_keys, drop_schema

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

KEY = ThreadKey("cached", "alice")


@pytest.fixture
async def stores(pg_schema: str, redis_prefix: str) -> AsyncIterator[tuple[Any, Any, Any]]:
    """A cached checkpointer, an uncached one on the same schema, and a raw Redis client."""
    from redis.asyncio import Redis

    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    client = Redis.from_url(REDIS_URL)
    cached = PgCheckpointer(
        PG_DSN, schema=pg_schema, redis=RedisThreadCache(client, prefix=redis_prefix)
    )
    direct = PgCheckpointer(PG_DSN, schema=pg_schema)
    yield cached, direct, client
    await cached.aclose()
    await direct.aclose()
    await client.aclose()
    await drop_schema(pg_schema)
    await drop_redis_keys(redis_prefix)


def entry_key(cached: Any) -> str:
    return str(cached._cache.key(KEY))


def step(
    expected: int, texts: list[str], window: list[tuple[int, int]], **values: Any
) -> ThreadWrite:
    messages = [Message.text_message(text) for text in texts]
    return ThreadWrite(expected, messages, dict(values), window, node="n", step=expected)


async def test_saves_write_through(stores: tuple[Any, Any, Any]) -> None:
    cached, _, client = stores
    await cached.asave(KEY, step(0, ["a", "b"], [(0, 2)], n=1))
    entry = await client.hgetall(entry_key(cached))
    assert int(entry[b"version"]) == 1
    assert entry[b"context"].count(b"\x00") == 1  # two bodies
    await cached.asave(KEY, step(1, ["c"], [(1, 3)], n=2))
    entry = await client.hgetall(entry_key(cached))
    assert (int(entry[b"version"]), int(entry[b"log_length"])) == (2, 3)
    assert entry[b"window"] == b"[[1,3]]"
    assert [Message.model_validate_json(b).text() for b in entry[b"context"].split(b"\x00")] == [
        "b",
        "c",
    ]
    stored = await cached.aload(KEY)
    assert (stored.version, stored.values, [m.text() for m in stored.context]) == (
        2,
        {"n": 2},
        ["b", "c"],
    )


async def test_a_matching_entry_is_served_and_a_stale_one_is_not(
    stores: tuple[Any, Any, Any],
) -> None:
    cached, direct, client = stores
    await cached.asave(KEY, step(0, ["a"], [(0, 1)], n=1))
    # Same version as Postgres: the entry is what a load returns (proof the cache is used).
    await client.hset(entry_key(cached), "values", b'{"served": "from redis"}')
    assert (await cached.aload(KEY)).values == {"served": "from redis"}
    # Another writer moves Postgres on: the entry no longer matches and is not trusted.
    await direct.asave(KEY, step(1, ["b"], [(0, 2)], n=2))
    stored = await cached.aload(KEY)
    assert (stored.version, stored.values) == (2, {"n": 2})
    assert [m.text() for m in stored.context] == ["a", "b"]
    assert int((await client.hgetall(entry_key(cached)))[b"version"]) == 2  # refilled


async def test_a_recreated_thread_is_not_confused_with_the_old_one(
    stores: tuple[Any, Any, Any],
) -> None:
    cached, direct, _ = stores
    await cached.asave(KEY, step(0, ["old"], [(0, 1)]))
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["old"]
    await direct.adelete_thread(KEY)
    await direct.asave(KEY, step(0, ["new"], [(0, 1)]))  # version 1 again
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["new"]


async def test_conflict_and_delete_evict(stores: tuple[Any, Any, Any]) -> None:
    cached, direct, client = stores
    await cached.asave(KEY, step(0, ["a"], [(0, 1)]))
    await direct.asave(KEY, step(1, ["b"], [(0, 2)]))
    assert await client.exists(entry_key(cached)) == 1
    with pytest.raises(ConflictError):
        await cached.asave(KEY, step(1, ["lost"], [(0, 2)]))
    assert await client.exists(entry_key(cached)) == 0
    assert (await cached.aload(KEY)).version == 2
    assert await client.exists(entry_key(cached)) == 1
    assert await cached.adelete_thread(KEY) is True
    assert await client.exists(entry_key(cached)) == 0
    assert await cached.aload(KEY) is None


async def test_a_save_the_entry_cannot_follow_evicts(stores: tuple[Any, Any, Any]) -> None:
    cached, _, client = stores
    await cached.asave(KEY, step(0, ["a", "b", "c"], [(2, 3)]))
    # the new window reaches back to messages the cached context does not hold
    await cached.asave(KEY, step(1, [], [(0, 3)]))
    assert await client.exists(entry_key(cached)) == 0
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["a", "b", "c"]


async def test_postgres_keeps_working_when_redis_is_down(
    pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    checkpointer = PgCheckpointer(
        PG_DSN, schema=pg_schema, redis=RedisThreadCache("redis://127.0.0.1:1/0")
    )
    caplog.set_level(logging.WARNING)
    try:
        await checkpointer.asave(KEY, step(0, ["a"], [(0, 1)]))
        await checkpointer.asave(KEY, step(1, ["b"], [(0, 2)]))
        stored = await checkpointer.aload(KEY)
        assert [m.text() for m in stored.context] == ["a", "b"]
        assert await checkpointer.adelete_thread(KEY) is True
    finally:
        await checkpointer.aclose()
        await drop_schema(pg_schema)
    assert "redis cache" in caplog.text


async def test_a_plain_redis_client_is_used_and_left_open(pg_schema: str) -> None:
    from redis.asyncio import Redis

    from tenxgraph.storage.checkpointer import PgCheckpointer

    client = Redis.from_url(REDIS_URL)
    key = ThreadKey(f"plain-client-{uuid.uuid4().hex}", "alice")
    name = f"tenxgraph:thread:5:alice:{key.thread_id}"  # the default prefix
    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema, redis=client)
    try:
        await checkpointer.asave(key, step(0, ["a"], [(0, 1)]))
        assert await client.exists(name) == 1
        await checkpointer.aclose()
        assert await client.ping() is True  # not closed: the caller owns it
    finally:
        await client.delete(name)
        await client.aclose()
        await drop_schema(pg_schema)
