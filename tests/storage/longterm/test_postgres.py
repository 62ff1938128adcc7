"""Postgres specifics: pgvector detection and the fallback where the server has none.

This project's server has no pgvector (Debian's postgresql-15 does not ship
it), so what runs here is detection failing cleanly: the store keeps
scoring vectors in process, and ``vector_index=True`` names the reason.
The vector table's writes (not its search) also run against a stand-in:
a ``vector`` domain over text in the test's schema.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from tenxgraph.errors import ConfigError
from tenxgraph.storage.longterm import HashingEmbedder, PgMemoryStore
from tenxgraph.storage.longterm import _pgvector as pgvector
from tenxgraph.storage.longterm._pgvector import literal
from tests.storage.conftest import PG_DSN, drop_schema

pytestmark = pytest.mark.postgres


@pytest.fixture
async def schema(pg_schema: str) -> AsyncIterator[str]:
    yield pg_schema
    await drop_schema(pg_schema)


async def _has_pgvector() -> bool:
    async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
        cursor = await conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return await cursor.fetchone() is not None


async def test_without_pgvector_vectors_are_scored_in_process(
    schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    if await _has_pgvector():
        pytest.skip("this server ships pgvector: the fallback is not what runs")
    store = PgMemoryStore(PG_DSN, schema=schema, embedder=HashingEmbedder(64))
    try:
        with caplog.at_level(logging.INFO, logger="tenxgraph.storage"):
            await store.aput(("m",), "tea", {"text": "green tea"})
        assert store.vector_index is None
        assert "pgvector is not available" in caplog.text
        found = await store.asearch(query="green tea", mode="vector")
        assert [item.key for item in found] == ["tea"]
    finally:
        await store.aclose()


async def test_vector_index_true_names_what_is_missing(schema: str) -> None:
    if await _has_pgvector():
        pytest.skip("this server ships pgvector")
    store = PgMemoryStore(PG_DSN, schema=schema, embedder=HashingEmbedder(64), vector_index=True)
    try:
        with pytest.raises(ConfigError, match=r"vector_index=True needs pgvector: .*vector"):
            await store.aput(("m",), "tea", {"text": "green tea"})
        assert await store.asearch() == []  # nothing was stored
    finally:
        await store.aclose()
    with pytest.raises(ConfigError, match="needs an embedder"):
        PgMemoryStore(PG_DSN, schema=schema, vector_index=True)


def test_vector_literal_round_trips_float32() -> None:
    packed = struct.pack("<3f", 0.5, -1.25, 3e-8)
    assert [float(x) for x in literal(packed)[1:-1].split(",")] == list(
        struct.unpack("<3f", packed)
    )


async def test_searches_are_planned_for_their_own_words(
    schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query search is never prepared: a generic plan ignores how rare its words are."""
    seen: list[tuple[str, bool | None]] = []
    real = PgMemoryStore._execute

    async def execute(
        self: PgMemoryStore, query: str, params: object, prepare: bool | None = None
    ) -> list[object]:
        seen.append((query.split()[0], prepare))
        return await real(self, query, params, prepare)  # type: ignore[arg-type]

    monkeypatch.setattr(PgMemoryStore, "_execute", execute)
    store = PgMemoryStore(PG_DSN, schema=schema)
    try:
        await store.aput(("m",), "tea", {"text": "green tea"})
        seen.clear()
        for _ in range(7):  # past psycopg's prepare threshold (5)
            assert [item.key for item in await store.asearch(query="tea")] == ["tea"]
        assert seen == [("SELECT", False)] * 7
    finally:
        await store.aclose()


async def test_a_store_whose_first_call_refreshes_detects_pgvector_first(
    schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A get that restarts a ttl looks for pgvector before it writes (here: the fallback)."""
    writer = PgMemoryStore(PG_DSN, schema=schema, embedder=HashingEmbedder(64))
    try:
        put = await writer.aput(("m",), "tea", {"text": "green tea"}, ttl=60)
    finally:
        await writer.aclose()
    detected: list[str] = []
    real = pgvector.detect

    async def detect(*args: Any) -> str | None:
        detected.append(args[1])
        return await real(*args)

    monkeypatch.setattr(pgvector, "detect", detect)
    reader = PgMemoryStore(PG_DSN, schema=schema, embedder=HashingEmbedder(64))
    try:
        got = await reader.aget(("m",), "tea")  # its first call: a get, then the refresh
        assert got is not None and got.expires_at is not None and put.expires_at is not None
        assert got.expires_at > put.expires_at
        assert detected == [f'"{schema}"']
        assert reader.vector_index is None  # no pgvector here: vectors scored in process
        assert [item.key for item in await reader.asearch(query="tea", mode="vector")] == ["tea"]
    finally:
        await reader.aclose()


async def test_vector_rows_follow_backfill_puts_and_refreshes(
    schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vector table's batched writes, against a stand-in for pgvector's type.

    The stand-in ``vector`` is a text domain found through the connection's
    ``search_path``; its table has no HNSW index, so search is not run.
    """
    dsn = f"{PG_DSN}?options=-csearch_path%3D{schema}"
    writer = PgMemoryStore(dsn, schema=schema, embedder=HashingEmbedder(64), vector_index=False)
    try:
        for key in ["tea", "wine"]:  # written while pgvector is not used
            await writer.aput(("m",), key, {"text": f"green {key}"}, ttl=60)
    finally:
        await writer.aclose()
    table = f'"{schema}".memory_vectors_64'

    async def detect(conn: psycopg.AsyncConnection[Any], s: str, dimensions: int, _: object) -> str:
        await conn.execute(f"CREATE DOMAIN {s}.vector AS text")
        await conn.execute(
            f"CREATE TABLE {table} (user_id text, namespace text, key text, "
            f"expires_at float8, updated_at float8, embedding {s}.vector NOT NULL, "
            f"PRIMARY KEY (user_id, namespace, key), FOREIGN KEY (user_id, namespace, key) "
            f"REFERENCES {s}.memory_items ON DELETE CASCADE)"
        )
        await pgvector._backfill(conn, s, table, dimensions)
        return "0.7.0"

    monkeypatch.setattr(pgvector, "detect", detect)

    async def vector_rows() -> list[tuple[str, Any]]:
        """(key, expires_at) of each vector row, checked against its item."""
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            cursor = await conn.execute(
                f"SELECT v.key, v.expires_at, m.expires_at, v.embedding, m.vector FROM {table} v "
                f'JOIN "{schema}".memory_items m USING (user_id, namespace, key) ORDER BY v.key'
            )
            rows = await cursor.fetchall()
        assert all(row[1] == row[2] for row in rows)  # the item's expiry, copied
        assert all(row[3] == literal(bytes(row[4])) for row in rows)
        return [(row[0], row[1]) for row in rows]

    store = PgMemoryStore(dsn, schema=schema, embedder=HashingEmbedder(64))
    try:
        tea = await store.aget(("m",), "tea")  # the first call: detect (and copy), then refresh
        assert tea is not None and store.vector_index == "pgvector"
        copied = dict(await vector_rows())
        assert sorted(copied) == ["tea", "wine"] and copied["tea"] == tea.expires_at
        found = await store.asearch(query="green", mode="lexical")  # refreshes both, one batch
        refreshed = dict(await vector_rows())
        assert refreshed == {item.key: item.expires_at for item in found}
        assert all(refreshed[key] > copied[key] for key in copied)
        await store.aput(("m",), "sky", {"text": "blue sky"})
        assert [key for key, _ in await vector_rows()] == ["sky", "tea", "wine"]
        assert await store.adelete(("m",), "sky")
        assert [key for key, _ in await vector_rows()] == ["tea", "wine"]
    finally:
        await store.aclose()
