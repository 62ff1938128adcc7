"""Storage faults caused for real: private Redis and Postgres servers hung, killed, stopped.

The figures these tests measure are recorded in docs/persistence-and-threads.md
("Faults"); each test prints them (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state import ThreadKey
from tenxgraph.errors import StorageUnavailableError
from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache
from tests.storage.conftest import PG_DSN, drop_schema
from tests.storage.servers import PrivatePostgres, PrivateRedis, spare_port

CACHE_LOG = "tenxgraph.storage.checkpointer.redis_cache"
PG_LOG = "tenxgraph.storage.checkpointer.postgres"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every record at WARNING or above, from any logger (the pool's included)."""
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]


async def timed_turn(app: Any, config: dict[str, Any], text: str) -> float:
    started = time.perf_counter()
    result = await app.ainvoke({"messages": [("user", text)]}, config)
    assert result["messages"][-1].text() == "ok"
    return time.perf_counter() - started


@pytest.fixture
async def cached(
    private_redis: PrivateRedis, pg_schema: str
) -> AsyncIterator[tuple[PgCheckpointer, RedisThreadCache]]:
    """A checkpointer on the shared Postgres with its cache on the private Redis."""
    cache = RedisThreadCache(private_redis.url, timeout=0.5, cooldown=0.6)
    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema, redis=cache)
    yield checkpointer, cache
    await checkpointer.aclose()
    await drop_schema(pg_schema)


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_hung_redis_costs_one_timeout_then_is_skipped(
    private_redis: PrivateRedis, pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = RedisThreadCache(private_redis.url, timeout=0.5, cooldown=30)
    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema, redis=cache)
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    config = {"thread_id": "hung-redis"}
    caplog.set_level(logging.INFO)
    try:
        healthy = await timed_turn(app, config, "one")
        private_redis.pause()
        first = await timed_turn(app, config, "two")
        later = [await timed_turn(app, config, f"more {n}") for n in range(3)]
        print(f"\nhealthy turn {healthy:.3f}s, first hung {first:.3f}s, later {max(later):.3f}s")
        assert first < 2 * cache.timeout  # one timed-out read; the rest skipped Redis
        assert max(later) < cache.timeout / 2  # skipped for the cool-down: no wait at all
        assert not cache.available
        state = await app.aget_state(config)
        assert [m.text() for m in state.context if m.role == "user"] == [
            "one",
            "two",
            "more 0",
            "more 1",
            "more 2",
        ]
        (warning,) = warnings_of(caplog)  # one line for the whole outage
        assert warning.startswith(f"{CACHE_LOG}: redis cache ")
        assert warning.endswith(
            "failed (no answer within 0.5s); using Postgres alone, retrying in 30s"
        )
    finally:
        private_redis.resume()
        await checkpointer.aclose()
        await drop_schema(pg_schema)


@pytest.mark.slow
@pytest.mark.postgres
async def test_after_a_hang_the_cache_serves_again_and_never_stale(
    cached: tuple[PgCheckpointer, RedisThreadCache],
    private_redis: PrivateRedis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from redis.asyncio import Redis

    checkpointer, cache = cached
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    config = {"thread_id": "stale"}
    key = ThreadKey("stale")
    caplog.set_level(logging.INFO)
    await timed_turn(app, config, "before")
    old = (await checkpointer.aload(key)).version  # the entry Redis holds
    private_redis.pause()
    await timed_turn(app, config, "during")  # Postgres moves on; the entry cannot follow
    private_redis.resume()
    await asyncio.sleep(cache.cooldown)
    stored = await checkpointer.aload(key)  # the old entry is still in Redis, and not served
    assert stored.version > old
    assert [m.text() for m in stored.context if m.role == "user"] == ["before", "during"]
    client = Redis.from_url(private_redis.url)
    try:  # refilled: a change made in Redis alone is what the next load returns
        await client.hset(cache.keys(key)[0], "values", b'{"served": "from redis"}')
        assert (await checkpointer.aload(key)).values == {"served": "from redis"}
    finally:
        await client.aclose()
    assert [r.levelname for r in caplog.records if r.name == CACHE_LOG] == ["WARNING", "INFO"]


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_killed_redis_is_skipped_and_a_restarted_one_used_again(
    cached: tuple[PgCheckpointer, RedisThreadCache],
    private_redis: PrivateRedis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    checkpointer, cache = cached
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    config = {"thread_id": "killed"}
    caplog.set_level(logging.INFO)
    await timed_turn(app, config, "one")
    private_redis.kill()
    down = await timed_turn(app, config, "two")  # refused at once: no timeout to wait
    private_redis.start()  # empty, same port
    await asyncio.sleep(cache.cooldown)
    started = time.perf_counter()
    await timed_turn(app, config, "three")
    recovered = time.perf_counter() - started
    print(f"\nturn with Redis dead {down:.3f}s, first turn after restart {recovered:.3f}s")
    assert down < cache.timeout
    assert cache.available
    state = await app.aget_state(config)
    assert [m.text() for m in state.context if m.role == "user"] == ["one", "two", "three"]
    # The app's process holds the thread warm and never reads it back; a load is
    # what fills an entry, as another process's would after the restart.
    loaded = await checkpointer.aload(ThreadKey("killed"))
    assert [m.text() for m in loaded.context if m.role == "user"] == ["one", "two", "three"]
    state_key, _ = cache.keys(ThreadKey("killed"))
    from redis.asyncio import Redis

    client = Redis.from_url(cache_url := f"redis://127.0.0.1:{private_redis.port}/0")
    try:
        assert await client.exists(state_key) == 1, cache_url  # filled again
    finally:
        await client.aclose()
    assert [r.levelname for r in caplog.records if r.name == CACHE_LOG] == ["WARNING", "INFO"]


@pytest.mark.slow
async def test_a_postgres_stopped_past_outage_timeout_fails_once_logged_and_recovers(
    private_postgres: PrivatePostgres, caplog: pytest.LogCaptureFixture
) -> None:
    checkpointer = PgCheckpointer(private_postgres.dsn, connect_timeout=2.0, outage_timeout=1.0)
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    config = {"thread_id": "pg-down"}
    caplog.set_level(logging.INFO)
    try:
        await timed_turn(app, config, "one")
        private_postgres.stop()
        costs = []
        for _ in range(3):
            started = time.perf_counter()
            with pytest.raises(StorageUnavailableError, match="unreachable for") as raised:
                await app.ainvoke({"messages": [("user", "lost")]}, config)
            costs.append(time.perf_counter() - started)
            assert "\n" not in str(raised.value)
        private_postgres.start()
        started = time.perf_counter()
        await timed_turn(app, config, "two")  # no user action: the next call works
        recovered = time.perf_counter() - started
        print(
            f"\nPostgres down: the first call failed in {costs[0]:.3f}s (outage_timeout 1s), "
            f"later ones in {max(costs[1:]):.3f}s; first turn after {recovered:.3f}s"
        )
        # the first call waits out the bound; once the outage is older, calls fail at once
        assert 1.0 <= costs[0] < 1.0 + checkpointer._db.connect_timeout + 0.5
        assert max(costs[1:]) < checkpointer._db.connect_timeout + 0.5
        assert [m.text() for m in (await app.aget_state(config)).context if m.role == "user"] == [
            "one",
            "two",
        ]
        assert len(warnings_of(caplog)) == 1, warnings_of(caplog)
        assert warnings_of(caplog)[0].startswith(f"{PG_LOG}: postgres at 127.0.0.1:")
        assert any(r.getMessage().endswith("is available again") for r in caplog.records)
    finally:
        await checkpointer.aclose()


@pytest.mark.slow
async def test_a_postgres_restart_between_calls_goes_unnoticed(
    private_postgres: PrivatePostgres, caplog: pytest.LogCaptureFixture
) -> None:
    checkpointer = PgCheckpointer(private_postgres.dsn, pool_min_size=2, pool_size=4)
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    config = {"thread_id": "pg-restart"}
    caplog.set_level(logging.WARNING)
    try:
        await timed_turn(app, config, "one")
        private_postgres.stop()
        private_postgres.start()  # every pooled connection is now dead
        started = time.perf_counter()
        await timed_turn(app, config, "two")
        print(f"\nfirst turn after a Postgres restart {time.perf_counter() - started:.3f}s")
        assert warnings_of(caplog) == []
    finally:
        await checkpointer.aclose()


async def test_a_server_that_never_answers_fails_within_connect_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        dsn = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/test"
        checkpointer = PgCheckpointer(dsn, connect_timeout=0.5)
        started = time.perf_counter()
        with pytest.raises(StorageUnavailableError, match=r"no answer within 0\.5s"):
            await checkpointer.aload(ThreadKey("t"))
        elapsed = time.perf_counter() - started
        await checkpointer.aclose()
    assert 0.5 <= elapsed < 1.0
    assert len(warnings_of(caplog)) == 1


@pytest.mark.postgres
@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://postgres@127.0.0.1:{spare_port()}/test",  # nothing listens
        "postgresql://postgres@127.0.0.1:5432/no_such_database",
    ],
)
async def test_a_wrong_dsn_fails_in_seconds_with_one_line(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    checkpointer = PgCheckpointer(dsn)
    started = time.perf_counter()
    for _ in range(2):
        with pytest.raises(StorageUnavailableError) as raised:
            await checkpointer.aload(ThreadKey("t"))
        assert "\n" not in str(raised.value)
    await checkpointer.aclose()
    assert time.perf_counter() - started < 1.0
    assert len(warnings_of(caplog)) == 1, warnings_of(caplog)  # once, however many calls
