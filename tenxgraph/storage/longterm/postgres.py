"""``PgMemoryStore``: long-term memory in PostgreSQL, searched through ``tsvector``.

One table, ``memory_items`` (the ``memory`` component): the value as
``jsonb``, the indexed text beside it and a stored generated column
``to_tsvector('english', text)`` under a GIN index. A search turns the
query's words into ``websearch_to_tsquery('english', 'w1 or w2 ...')`` (it
never raises on user text), keeps the tenant's live rows under the
namespace prefix that match, and orders by ``ts_rank``. The ``english``
configuration stems words and drops stop words: a query of stop words
alone matches nothing.

The namespace column uses the ``C`` collation, so a prefix is a range
(``ns = p OR (ns >= 'p/' AND ns < 'p0')``) the primary key's index serves,
whatever the database's collation. Filters compare the ``jsonb`` at the
filtered path (``_filters.postgres_where``: numbers as numbers, ``true``
apart from 1, strings ordered by code point).

Connections, the schema, migrations and the private I/O loop are
``tenxgraph.storage.sql.PgDatabase``'s; the same DSN and schema may serve
the checkpointer and the media store too (their components are apart).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph.errors import ConfigError
from tenxgraph.storage.longterm import _pgvector as pgvector
from tenxgraph.storage.longterm._checks import MAX_VALUE_BYTES
from tenxgraph.storage.longterm._filters import postgres_where as filters
from tenxgraph.storage.longterm.base import MemoryStore, Row, SearchRequest
from tenxgraph.storage.longterm.embedding import Embedder
from tenxgraph.storage.sql import Component
from tenxgraph.storage.sql._postgres import PgDatabase

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["MEMORY", "PgMemoryStore"]

R = TypeVar("R")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE {schema}.memory_items (
            user_id text NOT NULL,
            namespace text COLLATE "C" NOT NULL,
            key text NOT NULL,
            value jsonb NOT NULL,
            text text NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            expires_at double precision,
            PRIMARY KEY (user_id, namespace, key)
        )""",
        "CREATE INDEX memory_items_tsv ON {schema}.memory_items USING gin (tsv)",
        "CREATE INDEX memory_items_recent ON {schema}.memory_items (user_id, updated_at)",
        "CREATE INDEX memory_items_expiry ON {schema}.memory_items (expires_at) "
        "WHERE expires_at IS NOT NULL",
    ),
    ("ALTER TABLE {schema}.memory_items ADD COLUMN vector bytea",),
    (
        "ALTER TABLE {schema}.memory_items ADD COLUMN ttl double precision",
        "UPDATE {schema}.memory_items SET ttl = expires_at - updated_at "
        "WHERE expires_at IS NOT NULL",
    ),
)
"""Ordered schema changes of the ``memory`` component (``{schema}``: the quoted schema).
Append only."""

MEMORY = Component("memory", MIGRATIONS)
"""The memory tables, recorded in ``schema_versions`` as component ``memory``."""

_COLUMNS = "namespace, key, value, created_at, updated_at, expires_at"

_UPSERT = (
    "INSERT INTO {s}.memory_items AS m (user_id, namespace, key, value, text, "
    "created_at, updated_at, expires_at, vector, ttl) "
    "VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s::float8 - %s::float8) "
    "ON CONFLICT (user_id, namespace, key) DO UPDATE SET value = excluded.value, "
    "vector = excluded.vector, ttl = excluded.ttl, "
    "text = excluded.text, updated_at = excluded.updated_at, "
    "expires_at = excluded.expires_at, created_at = CASE WHEN m.expires_at IS NOT NULL "
    "AND m.expires_at <= excluded.updated_at THEN excluded.created_at "
    "ELSE m.created_at END RETURNING created_at"
)
"""Insert or replace an item; returns its created_at (a put over an expired item starts afresh)."""


class PgMemoryStore(MemoryStore):
    """Long-term memory in PostgreSQL; safe across processes and machines."""

    def __init__(
        self,
        conninfo: str | AsyncConnectionPool,
        *,
        schema: str = "tenxgraph",
        default_ttl: float | None = None,
        max_value_bytes: int = MAX_VALUE_BYTES,
        embedder: Embedder | None = None,
        vector_scan: int = 20_000,
        connect_timeout: float = 5.0,
        pool_min_size: int = 1,
        pool_size: int = 10,
        vector_index: bool | None = None,
        refresh_on_read: bool = True,
        sweep_interval: float | None = None,
        sweep_limit: int = 1_000,
    ) -> None:
        """Connect with a DSN (an owned pool) or an ``AsyncConnectionPool`` (the caller's).

        ``schema`` holds the tables; ``connect_timeout`` (seconds) bounds each
        wait for a connection (``StorageUnavailableError`` past it).
        ``vector_index``: with an embedder, serve vector search from pgvector
        (``_pgvector``); None when the database has it or lets the store
        create it, False never, True requires it (``ConfigError`` at the
        first vector operation without it, at once without an embedder).
        """
        if vector_index and embedder is None:
            raise ConfigError("vector_index=True needs an embedder")
        if sweep_interval is not None and not isinstance(conninfo, str):
            raise ConfigError(
                "sweep_interval needs a DSN: a pool you pass in belongs to your event loop, "
                "and the sweeper runs in a thread of its own"
            )
        super().__init__(
            default_ttl=default_ttl,
            max_value_bytes=max_value_bytes,
            embedder=embedder,
            vector_scan=vector_scan,
            refresh_on_read=refresh_on_read,
            sweep_interval=sweep_interval,
            sweep_limit=sweep_limit,
        )
        self._db = PgDatabase(
            conninfo,
            components=[MEMORY],
            schema=schema,
            connect_timeout=connect_timeout,
            pool_min_size=pool_min_size,
            pool_size=pool_size,
        )
        self.schema = schema
        self._s = self._db.s
        self._wanted_index = vector_index if embedder is not None else False
        self._pgvector: str | None = None
        self._detected = False

    @property
    def vector_index(self) -> str | None:
        """``"pgvector"`` once a vector operation found it, else None (brute force)."""
        return None if self._pgvector is None else "pgvector"

    @property
    def _vector_table(self) -> str:
        assert self.embedder is not None
        return f"{self._s}.memory_vectors_{self.embedder.dimensions}"

    async def _detect(self) -> str | None:
        """The pgvector version, detected once (on the I/O loop), or None."""
        if not self._detected and self._wanted_index is not False:
            assert self.embedder is not None
            async with self._db.connection() as conn:
                self._pgvector = await pgvector.detect(
                    conn, self._s, self.embedder.dimensions, self._wanted_index
                )
            self._detected = True
        return self._pgvector

    async def _run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        return await self._db.run(coroutine)

    async def _execute(
        self, query: str, params: list[Any] | tuple[Any, ...], prepare: bool | None = None
    ) -> list[Any]:
        """One statement in its own transaction; its rows (none for a plain write).

        ``prepare=False`` for searches: psycopg prepares a statement run five
        times, and Postgres then may plan it once for every parameter value.
        That generic plan does not know how rare the query's words are and
        walks the tenant's rows instead of the GIN index's matches: 44 ms
        instead of 5 (p50, one tenant of 100,000 items). Unprepared, each
        search is planned for its own words (planning costs ~0.3 ms).
        """
        async with self._db.connection() as conn:
            cursor = await conn.execute(query.replace("{s}", self._s), params, prepare=prepare)
            return await cursor.fetchall() if cursor.description is not None else []

    async def _query(
        self, query: str, params: list[Any] | tuple[Any, ...], prepare: bool | None = None
    ) -> list[Any]:
        return await self._run(self._execute(query, params, prepare))

    async def _put(
        self,
        user_id: str,
        namespace: str,
        key: str,
        value: str,
        text: str,
        now: float,
        expires_at: float | None,
        vector: bytes | None,
    ) -> float:
        item = (user_id, namespace, key)
        params = (*item, value, text, now, now, expires_at, vector, expires_at, now)
        if self.embedder is None:
            rows = await self._query(_UPSERT, params)
            return float(rows[0][0])
        return await self._run(self._put_with_vector(params, (item, expires_at, now, vector)))

    async def _put_with_vector(
        self,
        params: tuple[Any, ...],
        vector_row: tuple[tuple[str, str, str], float | None, float, bytes | None],
    ) -> float:
        """The item and, with pgvector, its vector row, in one transaction.

        ``params`` are ``_UPSERT``'s (``_put`` builds them); ``vector_row`` is
        what ``pgvector.write`` takes after the table.
        """
        version = await self._detect()
        async with self._db.connection(transaction=True) as conn:
            cursor = await conn.execute(_UPSERT.replace("{s}", self._s), params)
            row = await cursor.fetchone()
            assert row is not None
            if version is not None:
                await pgvector.write(conn, self._vector_table, *vector_row)
        return float(row[0])

    async def _get(self, user_id: str, namespace: str, key: str, now: float) -> Row | None:
        rows = await self._query(
            f"SELECT {_COLUMNS}, NULL FROM {{s}}.memory_items WHERE user_id = %s "
            "AND namespace = %s AND key = %s AND (expires_at IS NULL OR expires_at > %s)",
            (user_id, namespace, key, now),
        )
        return tuple(rows[0]) if rows else None

    async def _refresh(
        self, user_id: str, items: list[tuple[str, str]], now: float
    ) -> dict[tuple[str, str], float]:
        return await self._run(self._refresh_now(user_id, items, now))

    async def _refresh_now(
        self, user_id: str, items: list[tuple[str, str]], now: float
    ) -> dict[tuple[str, str], float]:
        version = await self._detect()  # before the update: it may be the store's first call
        namespaces, keys = [ns for ns, _ in items], [key for _, key in items]
        async with self._db.connection(transaction=True) as conn:
            cursor = await conn.execute(
                f"UPDATE {self._s}.memory_items m SET expires_at = %s + ttl "
                "FROM unnest(%s::text[], %s::text[]) AS wanted (namespace, key) "
                "WHERE m.user_id = %s AND m.namespace = wanted.namespace "
                "AND m.key = wanted.key AND m.ttl IS NOT NULL AND m.expires_at > %s "
                "RETURNING m.namespace, m.key, m.expires_at",
                (now, namespaces, keys, user_id, now),
            )
            rows = await cursor.fetchall()
            if version is not None and rows:
                await pgvector.expire(conn, self._vector_table, user_id, rows)
        return {(str(ns), str(key)): float(expires) for ns, key, expires in rows}

    async def _delete(self, user_id: str, namespace: str, key: str, now: float) -> bool:
        rows = await self._query(
            "DELETE FROM {s}.memory_items WHERE user_id = %s AND namespace = %s AND key = %s "
            "RETURNING expires_at IS NULL OR expires_at > %s",
            (user_id, namespace, key, now),
        )
        return bool(rows and rows[0][0])

    async def _search(self, request: SearchRequest) -> list[Row]:
        where, params = scope(request.prefix, request.now)
        more, extra = filters(request.filter)
        where, params = f"user_id = %s AND {where}{more}", [request.user_id, *params, *extra]
        page = [request.limit, request.offset]
        if request.terms is None:
            query = (
                f"SELECT {_COLUMNS}, NULL FROM {{s}}.memory_items WHERE {where} "
                "ORDER BY updated_at DESC, namespace, key LIMIT %s OFFSET %s"
            )
        else:
            query = (
                f"SELECT {_COLUMNS}, ts_rank(tsv, q)::float8 AS score FROM {{s}}.memory_items, "
                "websearch_to_tsquery('english', %s) q WHERE tsv @@ q AND "
                f"{where} ORDER BY score DESC, updated_at DESC, namespace, key LIMIT %s OFFSET %s"
            )
            params.insert(0, " or ".join(request.terms))
        rows = await self._query(
            query, [*params, *page], prepare=None if request.terms is None else False
        )
        return [tuple(row) for row in rows]

    async def _nearest(
        self, request: SearchRequest, query: bytes, k: int
    ) -> list[tuple[float, str, str]] | None:
        if request.filter or await self._run(self._detect()) is None:
            return None  # value filters: the exact scan (docs/memory.md)
        return await self._run(self._nearest_now(request, query, k))

    async def _nearest_now(
        self, request: SearchRequest, query: bytes, k: int
    ) -> list[tuple[float, str, str]]:
        assert self._pgvector is not None
        where, params = scope(request.prefix, request.now)
        async with self._db.connection() as conn:
            return await pgvector.nearest(
                conn,
                self._vector_table,
                self._pgvector,
                (f"user_id = %s AND {where}", [request.user_id, *params]),
                query,
                k,
            )

    async def _vectors(self, request: SearchRequest, scan: int) -> list[tuple[str, str, bytes]]:
        where, params = scope(request.prefix, request.now)
        more, extra = filters(request.filter)
        rows = await self._query(
            f"SELECT namespace, key, vector FROM {{s}}.memory_items WHERE user_id = %s AND "
            f"{where}{more} AND vector IS NOT NULL ORDER BY updated_at DESC LIMIT %s",
            [request.user_id, *params, *extra, scan],
        )
        return [(row[0], row[1], bytes(row[2])) for row in rows]

    async def _namespaces(self, user_id: str, prefix: str, now: float) -> list[str]:
        where, params = scope(prefix, now)
        rows = await self._query(
            f"SELECT DISTINCT namespace FROM {{s}}.memory_items WHERE user_id = %s AND {where}",
            [user_id, *params],
        )
        return [row[0] for row in rows]

    async def _tenants(self) -> list[str]:
        rows = await self._query("SELECT DISTINCT user_id FROM {s}.memory_items", ())
        return [row[0] for row in rows]

    async def _purge(self, now: float, limit: int | None) -> int:
        rows = await self._query(
            "WITH gone AS (DELETE FROM {s}.memory_items WHERE (user_id, namespace, key) IN "
            "(SELECT user_id, namespace, key FROM {s}.memory_items WHERE expires_at <= %s "
            "LIMIT %s) RETURNING 1) SELECT count(*) FROM gone",
            (now, limit),
        )
        return int(rows[0][0])

    async def aclose(self) -> None:
        """Stop the sweeper, close the pool if it is owned (a later call opens a new one)."""
        await super().aclose()
        await self._db.aclose()


def scope(prefix: str, now: float) -> tuple[str, list[Any]]:
    """SQL conditions and parameters: live items under the namespace prefix."""
    params: list[Any] = [now]
    where = "(expires_at IS NULL OR expires_at > %s)"
    if prefix:
        where += " AND (namespace = %s OR (namespace >= %s AND namespace < %s))"
        params += [prefix, prefix + "/", prefix + "0"]
    return where, params
