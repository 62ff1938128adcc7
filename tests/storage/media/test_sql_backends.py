"""The SQL stores' own promises: chunk rows, space given back, damage found, a shared database.

SQLite is a real file; Postgres the shared server, in a schema of the test's
own (dropped afterwards).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tenxgraph.core.state import Message
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.storage.media import MediaStore, SqliteMediaStore
from tenxgraph.testing.media_stores import sample
from tests.storage.conftest import PG_DSN, drop_schema


def sqlite_rows(path: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


async def pg_rows(schema: str, query: str) -> list[tuple[object, ...]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
        cursor = await conn.execute(query.format(s=f'"{schema}"'))
        return await cursor.fetchall() if cursor.description is not None else []


@pytest.fixture
async def pg_store(pg_schema: str) -> AsyncIterator[MediaStore]:
    from tenxgraph.storage.media import PgMediaStore

    store = PgMediaStore(PG_DSN, schema=pg_schema, chunk_size=1024)
    yield store
    await store.aclose()
    await drop_schema(pg_schema)


async def test_sqlite_keeps_fixed_size_chunks_and_gives_them_back(tmp_path: Path) -> None:
    path = tmp_path / "media.db"
    store = SqliteMediaStore(path, chunk_size=1024)
    ref = await store.aput(sample(5000), "image/png")
    await store.aput(sample(5000), "image/png")  # the same bytes: their staged copy is dropped
    sizes = sqlite_rows(path, "SELECT length(data) FROM media_chunks ORDER BY seq")
    assert [size for (size,) in sizes] == [1024, 1024, 1024, 1024, 904]
    assert await store.adelete(ref)
    assert sqlite_rows(path, "SELECT count(*) FROM media_chunks") == [(0,)]
    assert sqlite_rows(path, "SELECT count(*) FROM media_uploads") == [(0,)]
    await store.aclose()


async def test_sqlite_media_shares_a_file_with_the_checkpointer(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    checkpointer = SqliteCheckpointer(path)
    store = SqliteMediaStore(path)
    ref = await store.aput(sample(3000), "image/png")
    config = {"thread_id": "t1"}
    from tenxgraph.core.graph import StateGraph
    from tenxgraph.core.state import AgentState

    graph = StateGraph(AgentState)
    graph.add_node("echo", lambda state: [Message.text_message("ok", role="assistant")])
    graph.set_entry_point("echo")
    app = graph.compile(checkpointer=checkpointer)
    await app.ainvoke({"messages": [Message.text_message("hi")]}, config=config)
    assert await store.aget(ref) == sample(3000)
    components = sqlite_rows(path, "SELECT DISTINCT component FROM schema_versions")
    assert sorted(name for (name,) in components) == ["media", "threads"]
    await store.aclose()
    await checkpointer.aclose()


async def test_sqlite_a_damaged_chunk_fails_the_check(tmp_path: Path) -> None:
    path = tmp_path / "media.db"
    store = SqliteMediaStore(path, chunk_size=1024)
    ref = await store.aput(sample(5000), "image/png")
    await store.aclose()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE media_chunks SET data = zeroblob(1024) WHERE seq = 2")
    store = SqliteMediaStore(path, chunk_size=1024)
    with pytest.raises(CorruptRecordError, match="SHA-256 is not the key"):
        await store.aget(ref)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM media_chunks WHERE seq = 4")
    with pytest.raises(CorruptRecordError, match="its piece 4 is missing"):
        await store.aget(ref)
    await store.aclose()


@pytest.mark.postgres
async def test_postgres_keeps_chunks_out_of_line_and_gives_them_back(
    pg_store: MediaStore, pg_schema: str
) -> None:
    ref = await pg_store.aput(sample(5000), "image/png")
    sizes = await pg_rows(pg_schema, "SELECT length(data) FROM {s}.media_chunks ORDER BY seq")
    assert [size for (size,) in sizes] == [1024, 1024, 1024, 1024, 904]
    storage = await pg_rows(
        pg_schema,
        "SELECT attstorage FROM pg_attribute WHERE attrelid = '{s}.media_chunks'::regclass "
        "AND attname = 'data'",
    )
    assert storage == [("e",)]  # EXTERNAL: out of line, not compressed
    assert await pg_store.adelete(ref)
    assert await pg_rows(pg_schema, "SELECT count(*) FROM {s}.media_chunks") == [(0,)]


@pytest.mark.postgres
async def test_postgres_a_second_store_on_the_schema_sees_and_dedupes(
    pg_store: MediaStore, pg_schema: str
) -> None:
    from tenxgraph.storage.media import PgMediaStore

    data = sample(7000, seed=5)
    ref = await pg_store.aput(data, "image/png", user_id="alice")
    other = PgMediaStore(PG_DSN, schema=pg_schema, chunk_size=4096)
    try:
        assert await other.aget(ref, user_id="alice") == data  # chunks of another size read fine
        assert (await other.aput(data, "image/png", user_id="alice")).url == ref.url
        assert await pg_rows(pg_schema, "SELECT count(DISTINCT blob) FROM {s}.media_chunks") == [
            (1,)
        ]
    finally:
        await other.aclose()


@pytest.mark.postgres
async def test_postgres_a_damaged_chunk_fails_the_check(
    pg_store: MediaStore, pg_schema: str
) -> None:
    ref = await pg_store.aput(sample(5000), "image/png")
    await pg_rows(pg_schema, "UPDATE {s}.media_chunks SET data = '\\x00' WHERE seq = 1")
    with pytest.raises(CorruptRecordError, match="is damaged: its piece 5 is missing"):
        await pg_store.aget(ref)
