"""Postgres specifics: pgvector detection and the fallback where the server has none.

This project's server has no pgvector (Debian's postgresql-15 does not ship
it), so what runs here is detection failing cleanly: the store keeps
scoring vectors in process, and ``vector_index=True`` names the reason.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import AsyncIterator

import psycopg
import pytest

from tenxgraph.errors import ConfigError
from tenxgraph.storage.longterm import HashingEmbedder, PgMemoryStore
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
