"""Postgres specifics: caller-owned pools, schema names, errors, missing extras."""

from __future__ import annotations

import sys

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError, MissingExtraError, StorageError
from tenxgraph.storage.checkpointer import ThreadWrite
from tenxgraph.testing._checkpointer_base import save
from tests.storage.conftest import PG_DSN, drop_schema

KEY = ThreadKey("t", "alice")


def step(expected: int, text: str) -> ThreadWrite:
    return ThreadWrite(
        expected, [Message.text_message(text)], {}, [(0, expected + 1)], node="n", step=0
    )


@pytest.mark.postgres
async def test_a_caller_pool_without_autocommit_works_and_stays_open(pg_schema: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    from tenxgraph.storage.checkpointer import PgCheckpointer

    pool = AsyncConnectionPool(PG_DSN, min_size=1, max_size=2, open=False)
    await pool.open()
    checkpointer = PgCheckpointer(pool, schema=pg_schema)
    try:
        await save(checkpointer, KEY, step(0, "a"))
        await save(checkpointer, KEY, step(1, "b"))
        with pytest.raises(ConflictError):
            await save(checkpointer, KEY, step(1, "lost"))
        stored = await checkpointer.aload(KEY)
        assert stored is not None
        assert [m.text() for m in stored.context] == ["a", "b"]
        await checkpointer.aclose()
        async with pool.connection() as conn:  # still open: the caller owns it
            cursor = await conn.execute(f'SELECT count(*) FROM "{pg_schema}".messages')
            assert await cursor.fetchone() == (2,)
    finally:
        await pool.close()
        await drop_schema(pg_schema)


@pytest.mark.postgres
async def test_a_newer_schema_is_refused(pg_schema: str) -> None:
    import psycopg

    from tenxgraph.storage.checkpointer import PgCheckpointer

    async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
        await conn.execute(f'CREATE SCHEMA "{pg_schema}"')
        await conn.execute(
            f'CREATE TABLE "{pg_schema}".schema_version (version integer, applied_at float8)'
        )
        await conn.execute(f'INSERT INTO "{pg_schema}".schema_version VALUES (99, 0)')
    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)
    try:
        with pytest.raises(StorageError, match="version 99"):
            await checkpointer.aload(KEY)
    finally:
        await checkpointer.aclose()
        await drop_schema(pg_schema)


async def test_driver_errors_become_storage_errors() -> None:
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    from tenxgraph.storage.checkpointer import PgCheckpointer

    pool = AsyncConnectionPool(
        "postgresql://postgres@127.0.0.1:1/test", min_size=1, open=False, timeout=0.5
    )
    await pool.open(wait=False)
    checkpointer = PgCheckpointer(pool)
    try:
        with pytest.raises(StorageError, match="postgres") as raised:
            await checkpointer.aload(KEY)
        assert isinstance(raised.value.__cause__, psycopg.Error)
    finally:
        await pool.close()


def test_bad_options_are_refused() -> None:
    from tenxgraph.storage.checkpointer import PgCheckpointer

    with pytest.raises(ValueError, match="plain identifier"):
        PgCheckpointer(PG_DSN, schema='x"; DROP TABLE y; --')
    with pytest.raises(ValueError, match="keep_checkpoints"):
        PgCheckpointer(PG_DSN, keep_checkpoints=0)


def test_missing_extras_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    monkeypatch.setitem(sys.modules, "psycopg_pool", None)
    with pytest.raises(MissingExtraError, match=r"tenxgraph\[postgres\]"):
        PgCheckpointer(PG_DSN)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(MissingExtraError, match=r"tenxgraph\[redis\]"):
        RedisThreadCache("redis://127.0.0.1:6379/0")


@pytest.mark.postgres
def test_a_dsn_checkpointer_serves_any_loop_and_closes_from_any(pg_schema: str) -> None:
    import asyncio

    from tenxgraph.storage.checkpointer import PgCheckpointer

    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)
    try:
        assert asyncio.run(checkpointer.aload(KEY)) is None
        asyncio.run(save(checkpointer, KEY, step(0, "a")))  # another loop
        asyncio.run(checkpointer.aclose())  # and another: closing is not bound to a loop
        assert asyncio.run(checkpointer.aversion(KEY)).version == 1  # a later call reopens
    finally:
        checkpointer.close()
        asyncio.run(drop_schema(pg_schema))


@pytest.mark.postgres
def test_a_caller_pool_binds_to_the_loop_that_first_used_it(pg_schema: str) -> None:
    import asyncio

    from psycopg_pool import AsyncConnectionPool

    from tenxgraph.storage.checkpointer import PgCheckpointer

    first = asyncio.new_event_loop()
    pool = AsyncConnectionPool(PG_DSN, min_size=1, max_size=2, open=False)
    first.run_until_complete(pool.open())
    checkpointer = PgCheckpointer(pool, schema=pg_schema)
    try:
        assert first.run_until_complete(checkpointer.aload(KEY)) is None
        with pytest.raises(StorageError, match="event loop"):
            asyncio.run(checkpointer.aload(KEY))
        assert first.run_until_complete(checkpointer.aload(KEY)) is None
    finally:
        first.run_until_complete(checkpointer.aclose())
        first.run_until_complete(pool.close())
        first.close()
        asyncio.run(drop_schema(pg_schema))
