"""The Redis cache in front of Postgres: used when it matches, never trusted when it does not."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError
from tenxgraph.storage.checkpointer import ThreadWrite
from tenxgraph.testing._checkpointer_base import save
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


def entry_keys(cached: Any) -> tuple[str, str]:
    state, context = cached._cache.keys(KEY)
    return str(state), str(context)


async def read_entry(client: Any, cached: Any) -> tuple[dict[bytes, bytes], list[str]]:
    state, context = entry_keys(cached)
    bodies = await client.lrange(context, 0, -1)
    return await client.hgetall(state), [Message.model_validate_json(b).text() for b in bodies]


async def cached_entry_count(client: Any, cached: Any) -> int:
    return int(await client.exists(*entry_keys(cached)))


def step(
    expected: int, texts: list[str], window: list[tuple[int, int]], **values: Any
) -> ThreadWrite:
    messages = [Message.text_message(text) for text in texts]
    return ThreadWrite(expected, messages, dict(values), window, node="n", step=expected)


async def test_saves_write_through(stores: tuple[Any, Any, Any]) -> None:
    cached, _, client = stores
    await save(cached, KEY, step(0, ["a", "b", "c"], [(1, 3)], n=1))
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), int(header[b"log_length"])) == (1, 3)
    assert context == ["b", "c"]
    await save(cached, KEY, step(1, ["d"], [(1, 4)], n=2))  # appends: the entry follows
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), int(header[b"log_length"])) == (2, 4)
    assert header[b"window"] == b"[[1,4]]"
    assert context == ["b", "c", "d"]
    await save(cached, KEY, step(2, ["e", "f"], [(1, 4), (4, 6)], n=3))  # split ranges, same seqs
    header, context = await read_entry(client, cached)
    assert int(header[b"version"]) == 3
    assert context == ["b", "c", "d", "e", "f"]
    stored = await cached.aload(KEY)
    assert (stored.version, stored.values, [m.text() for m in stored.context]) == (
        3,
        {"n": 3},
        ["b", "c", "d", "e", "f"],
    )


async def test_a_matching_entry_is_served_and_a_stale_one_is_not(
    stores: tuple[Any, Any, Any],
) -> None:
    cached, direct, client = stores
    await save(cached, KEY, step(0, ["a"], [(0, 1)], n=1))
    # Same version as Postgres: the entry is what a load returns (proof the cache is used).
    await client.hset(entry_keys(cached)[0], "values", b'{"served": "from redis"}')
    assert (await cached.aload(KEY)).values == {"served": "from redis"}
    # Another writer moves Postgres on: the entry no longer matches and is not trusted.
    await save(direct, KEY, step(1, ["b"], [(0, 2)], n=2))
    stored = await cached.aload(KEY)
    assert (stored.version, stored.values) == (2, {"n": 2})
    assert [m.text() for m in stored.context] == ["a", "b"]
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (2, ["a", "b"])  # refilled


async def test_a_lease_holders_saves_follow_as_one_and_at_once_when_it_lets_go(
    stores: tuple[Any, Any, Any],
) -> None:
    import dataclasses

    cached, _, client = stores
    assert await cached.atake_lease(KEY, "run-1", 30) is None
    leased = {"lease": "run-1"}
    await save(cached, KEY, step(0, ["a"], [(0, 1)], n=1))
    await save(cached, KEY, dataclasses.replace(step(1, ["b"], [(0, 2)], n=2), **leased))
    await save(cached, KEY, dataclasses.replace(step(2, ["c", "d"], [(0, 4)], n=3), **leased))
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (1, ["a"])  # held back: behind, never served
    await cached._cache.flush()  # what ``linger`` seconds after the first would send
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), int(header[b"log_length"])) == (3, 4)
    assert context == ["a", "b", "c", "d"]
    await save(cached, KEY, dataclasses.replace(step(3, ["e"], [(0, 5)], n=4), **leased))
    last = dataclasses.replace(step(4, ["f"], [(0, 6)], n=5), release_lease=True, **leased)
    await save(cached, KEY, last)  # the lease goes: what was held and this follow at once
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (5, ["a", "b", "c", "d", "e", "f"])


async def test_held_follows_go_by_a_timer_that_leaves_no_task_behind(
    stores: tuple[Any, Any, Any],
) -> None:
    import asyncio
    import dataclasses

    cached, _, client = stores
    cached._cache.linger = 0.2
    assert await cached.atake_lease(KEY, "run-1", 30) is None
    await save(cached, KEY, step(0, ["a"], [(0, 1)], n=1))
    before = asyncio.all_tasks()
    await save(cached, KEY, dataclasses.replace(step(1, ["b"], [(0, 2)], n=2), lease="run-1"))
    assert asyncio.all_tasks() == before  # a sync call's loop closes without waiting on it
    assert int((await read_entry(client, cached))[0][b"version"]) == 1
    for _ in range(100):  # the timer sends it about linger seconds later
        await asyncio.sleep(0.05)
        if int((await read_entry(client, cached))[0][b"version"]) == 2:
            break
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (2, ["a", "b"])


async def test_a_load_here_sends_the_held_follow_first(stores: tuple[Any, Any, Any]) -> None:
    import dataclasses

    cached, _, client = stores
    await cached.atake_lease(KEY, "run-1", 30)
    await save(cached, KEY, step(0, ["a"], [(0, 1)], n=1))
    await save(cached, KEY, dataclasses.replace(step(1, ["b"], [(0, 2)], n=2), lease="run-1"))
    context_key = entry_keys(cached)[1]
    first = await client.lindex(context_key, 0)
    await client.lset(context_key, 0, first.replace(b'"a"', b'"from redis"'))
    stored = await cached.aload(KEY)  # the follow went first, then the read: a hit
    assert stored.version == 2
    assert [m.text() for m in stored.context] == ["from redis", "b"]  # not reloaded


async def test_a_late_follow_leaves_a_newer_entry_alone(stores: tuple[Any, Any, Any]) -> None:
    import dataclasses

    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    cached, _, client = stores
    await cached.atake_lease(KEY, "run-1", 30)
    await save(cached, KEY, step(0, ["a"], [(0, 1)], n=1))
    await save(cached, KEY, dataclasses.replace(step(1, ["b"], [(0, 2)], n=2), lease="run-1"))
    await client.delete(*entry_keys(cached))
    other = PgCheckpointer(
        PG_DSN, schema=cached.schema, redis=RedisThreadCache(client, prefix=cached._cache.prefix)
    )
    try:  # another process loads the thread meanwhile and refills the entry: version 2
        assert (await other.aload(KEY)).version == 2
    finally:
        await other.aclose()
    await client.hset(entry_keys(cached)[0], "values", b'{"served": "from redis"}')
    await cached._cache.flush()  # the held follow (1 -> 2) finds version 2: left as it is
    assert (await cached.aload(KEY)).values == {"served": "from redis"}
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (2, ["a", "b"])


async def test_a_recreated_thread_is_not_confused_with_the_old_one(
    stores: tuple[Any, Any, Any],
) -> None:
    cached, direct, _ = stores
    await save(cached, KEY, step(0, ["old"], [(0, 1)]))
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["old"]
    await direct.adelete_thread(KEY)
    await save(direct, KEY, step(0, ["new"], [(0, 1)]))  # version 1 again
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["new"]


async def test_creating_over_a_lingering_entry_replaces_it(stores: tuple[Any, Any, Any]) -> None:
    cached, direct, client = stores
    await save(cached, KEY, step(0, ["old", "older"], [(0, 2)]))
    await direct.adelete_thread(KEY)  # no cache there: the entry lingers
    await save(cached, KEY, step(0, ["new"], [(0, 1)]))
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (1, ["new"])


async def test_conflict_and_delete_evict(stores: tuple[Any, Any, Any]) -> None:
    cached, direct, client = stores
    await save(cached, KEY, step(0, ["a"], [(0, 1)]))
    await save(direct, KEY, step(1, ["b"], [(0, 2)]))
    assert await cached_entry_count(client, cached) == 2
    with pytest.raises(ConflictError):
        await save(cached, KEY, step(1, ["lost"], [(0, 2)]))
    assert await cached_entry_count(client, cached) == 0
    assert (await cached.aload(KEY)).version == 2
    assert await cached_entry_count(client, cached) == 2
    assert await cached.adelete_thread(KEY) is True
    assert await cached_entry_count(client, cached) == 0
    assert await cached.aload(KEY) is None


async def test_a_save_the_entry_cannot_follow_evicts(stores: tuple[Any, Any, Any]) -> None:
    cached, _, client = stores
    await save(cached, KEY, step(0, ["a", "b", "c"], [(0, 3)]))
    assert await cached_entry_count(client, cached) == 2
    await save(cached, KEY, step(1, ["d"], [(0, 1), (2, 4)]))  # a trim: not an append
    assert await cached_entry_count(client, cached) == 0
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["a", "c", "d"]
    assert await cached_entry_count(client, cached) == 2  # the load refilled it
    await client.hset(entry_keys(cached)[0], "incarnation", b"other")  # not the one replaced
    await save(cached, KEY, step(2, ["e"], [(0, 1), (2, 5)]))
    assert await cached_entry_count(client, cached) == 0
    assert [m.text() for m in (await cached.aload(KEY)).context] == ["a", "c", "d", "e"]


async def test_postgres_keeps_working_when_redis_is_down(
    pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    checkpointer = PgCheckpointer(
        PG_DSN, schema=pg_schema, redis=RedisThreadCache("redis://127.0.0.1:1/0")
    )
    caplog.set_level(logging.WARNING)
    try:
        await save(checkpointer, KEY, step(0, ["a"], [(0, 1)]))
        await save(checkpointer, KEY, step(1, ["b"], [(0, 2)]))
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
    names = [f"tenxgraph:{kind}:5:alice:{key.thread_id}" for kind in ("state", "context")]
    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema, redis=client)
    try:
        await save(checkpointer, key, step(0, ["a"], [(0, 1)]))
        assert await client.exists(*names) == 2  # the default prefix
        await checkpointer.aclose()
        assert await client.ping() is True  # not closed: the caller owns it
    finally:
        await client.delete(*names)
        await client.aclose()
        await drop_schema(pg_schema)


async def test_a_follow_of_many_messages_and_a_malformed_entry(
    stores: tuple[Any, Any, Any],
) -> None:
    cached, _, client = stores
    await save(cached, KEY, step(0, ["a"], [(0, 1)]))
    many = [f"m{i}" for i in range(2500)]  # past one script call's 1,000-body pushes
    await save(cached, KEY, step(1, many, [(0, 2501)]))
    header, context = await read_entry(client, cached)
    assert (int(header[b"version"]), context) == (2, ["a", *many])
    assert await client.ttl(entry_keys(cached)[0]) > 0
    await client.hset(entry_keys(cached)[0], "version", b"not a number")
    stored = await cached.aload(KEY)  # a malformed entry: a miss, evicted, then refilled
    assert (stored.version, len(stored.context)) == (2, 2501)
    header, _ = await read_entry(client, cached)
    assert int(header[b"version"]) == 2
