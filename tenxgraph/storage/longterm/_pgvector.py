"""pgvector for ``PgMemoryStore``: nearest vectors through an HNSW index, when the server has it.

Detection, once per store, on its first vector operation: the extension
``vector`` is used if it is in the database, or if ``CREATE EXTENSION IF
NOT EXISTS vector`` succeeds (it fails where the server does not ship it,
as on this project's Debian machines, or without the privilege). Otherwise
the store scores vectors by brute force like every backend (``_hybrid``);
``vector_index=True`` turns that into a ``ConfigError`` naming the reason.

With pgvector, vectors live in one table per length (``memory_vectors_256``
...) keyed like ``memory_items``, whose rows it follows by a cascading
foreign key; ``expires_at`` is copied so KNN filters on one table. Puts
write both rows in one transaction. Items that got a vector while pgvector
was not used are copied over at detection. A search orders by cosine
distance under an HNSW index (``vector_cosine_ops``); from pgvector 0.8
``hnsw.iterative_scan`` lets the scan go on until ``k`` rows pass the
tenant and prefix filter (older versions may return fewer).

Not exercised by this project's CI: its Postgres has no pgvector. The
detection and the fallback are tested; this path is written against the
pgvector documentation.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from tenxgraph.errors import ConfigError
from tenxgraph.storage.longterm._hybrid import best_first

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["detect", "expire", "literal", "nearest", "write"]

logger = logging.getLogger("tenxgraph.storage")

_UPSERT = (
    "INSERT INTO {table} (user_id, namespace, key, expires_at, updated_at, embedding) "
    "VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT (user_id, namespace, key) "
    "DO UPDATE SET expires_at = excluded.expires_at, updated_at = excluded.updated_at, "
    "embedding = excluded.embedding"
)
"""Insert or replace a vector row (``{table}``: the qualified vector table)."""


def literal(vector: bytes) -> str:
    """The pgvector text form of a packed float32 vector (``[0.1,0.2,...]``)."""
    values = struct.unpack(f"<{len(vector) // 4}f", vector)
    return "[" + ",".join(repr(value) for value in values) + "]"


async def detect(
    conn: AsyncConnection[Any], s: str, dimensions: int, wanted: bool | None
) -> str | None:
    """The pgvector version this store uses (tables ready), or None (brute force)."""
    import psycopg

    if wanted is False:
        return None
    version = await _version(conn)
    if version is None:
        try:
            async with conn.transaction():
                await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0]
            if wanted:
                raise ConfigError(f"vector_index=True needs pgvector: {reason}") from exc
            logger.info("pgvector is not available (%s): vectors are scored in process", reason)
            return None
        version = await _version(conn)
    table = f"{s}.memory_vectors_{dimensions}"
    async with conn.transaction():
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (user_id text NOT NULL, "
            'namespace text COLLATE "C" NOT NULL, key text NOT NULL, '
            "expires_at double precision, updated_at double precision NOT NULL, "
            f"embedding vector({dimensions}) NOT NULL, PRIMARY KEY (user_id, namespace, key), "
            f"FOREIGN KEY (user_id, namespace, key) REFERENCES {s}.memory_items ON DELETE CASCADE)"
        )
        await conn.execute(
            f"CREATE INDEX IF NOT EXISTS memory_vectors_{dimensions}_hnsw ON {table} "
            "USING hnsw (embedding vector_cosine_ops)"
        )
    await _backfill(conn, s, table, dimensions)
    return version


async def _version(conn: AsyncConnection[Any]) -> str | None:
    cursor = await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def _backfill(conn: AsyncConnection[Any], s: str, table: str, dimensions: int) -> None:
    """Copy the vectors (and restarted expiries) of items written while pgvector was not used."""
    cursor = await conn.execute(
        f"SELECT m.user_id, m.namespace, m.key, m.expires_at, m.updated_at, m.vector "
        f"FROM {s}.memory_items m LEFT JOIN {table} v USING (user_id, namespace, key) "
        "WHERE m.vector IS NOT NULL AND length(m.vector) = %s "
        "AND (v.key IS NULL OR v.updated_at <> m.updated_at "
        "OR v.expires_at IS DISTINCT FROM m.expires_at)",
        (4 * dimensions,),
    )
    rows = await cursor.fetchall()
    if rows:
        async with conn.transaction(), conn.cursor() as batch:
            await batch.executemany(
                _UPSERT.format(table=table),
                [(*item, literal(bytes(vector))) for *item, vector in rows],
            )


async def write(
    conn: AsyncConnection[Any],
    table: str,
    item: tuple[str, str, str],
    expires_at: float | None,
    updated_at: float,
    vector: bytes | None,
) -> None:
    """Insert, replace or (``vector`` None) delete the item's vector row."""
    if vector is None:
        await conn.execute(
            f"DELETE FROM {table} WHERE user_id = %s AND namespace = %s AND key = %s", item
        )
        return
    await conn.execute(
        _UPSERT.format(table=table), (*item, expires_at, updated_at, literal(bytes(vector)))
    )


async def expire(
    conn: AsyncConnection[Any],
    table: str,
    user_id: str,
    expiries: list[tuple[str, str, float]],
) -> None:
    """Copy refreshed expiries (``(namespace, key, expires_at)`` of ``user_id``'s items)."""
    async with conn.cursor() as batch:
        await batch.executemany(
            f"UPDATE {table} SET expires_at = %s WHERE user_id = %s AND namespace = %s "
            "AND key = %s",
            [(expires, user_id, namespace, key) for namespace, key, expires in expiries],
        )


async def nearest(
    conn: AsyncConnection[Any],
    table: str,
    version: str,
    where: tuple[str, list[Any]],
    query: bytes,
    k: int,
) -> list[tuple[float, str, str]]:
    """``(cosine, namespace, key)`` of the ``k`` nearest rows passing ``where``, best first."""
    conditions, params = where
    async with conn.transaction():
        if tuple(int(part) for part in version.split(".")[:2]) >= (0, 8):
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        vector = literal(query)
        cursor = await conn.execute(
            f"SELECT 1 - (embedding <=> %s::vector), namespace, key FROM {table} "
            f"WHERE {conditions} ORDER BY embedding <=> %s::vector LIMIT %s",
            [vector, *params, vector, k],
        )
        rows = await cursor.fetchall()
    hits = ((float(score), str(ns), str(key)) for score, ns, key in rows)
    return best_first(hits)  # relaxed order: sort again
