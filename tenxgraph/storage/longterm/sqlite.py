"""``SqliteMemoryStore``: long-term memory in a SQLite file, searched through FTS5.

Tables (the ``memory`` component, migrated on its own schedule, so the
store can share the checkpointer's file): ``memory_items`` (one row per
tenant, namespace and key; the value as JSON text) and ``memory_fts``, an
FTS5 table whose rowid is the item's id, holding the value's string leaves
(column ``text``, ``porter unicode61`` tokenizer: English stemming, case and
accents folded) and *scope words* (column ``scope``: one number per tenant
and namespace prefix the item is under, a hash of both). A put replaces
item and index row in one transaction. A search asks FTS5 for the scope
word of its tenant and prefix AND any of the query's words, so the index
itself keeps other tenants' matches out (before, a common word made every
tenant's matches be joined and dropped: 40 ms instead of 10 at 100,000
items); the join with the item rows checks tenant, prefix and expiry
exactly and the results are ordered by BM25 on ``text``. Where a scope
holds most of the table its word is left out (``_sqlite_scopes``: walking
its rows was most of a search), and only the best-scored matches are
joined with their items (``_best_candidates``), falling back to joining
every match when checks drop too many of them: both return exactly what
the plain plan returns.

With an embedder and the extra ``vectors``, vectors are also kept in a
``sqlite-vec`` index beside the file (``_sqlite_vec``).

Namespace prefixes are range conditions on the stored text (``ns = p OR
(ns >= 'p/' AND ns < 'p0')``, ``0`` following ``/``), so the unique index
on ``(user_id, namespace, key)`` serves them. Filters use ``json_each``
at the filtered path (``_filters.sqlite_where``), comparing JSON types as the contract says.

Short calls (get, put, delete) run inline when nothing has to wait (see
``tenxgraph.storage.sql.SqliteDatabase``); searches, listings and purges,
whose cost grows with the data, run in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from tenxgraph.errors import ConfigError
from tenxgraph.storage.longterm import _sqlite_scopes as scopes
from tenxgraph.storage.longterm._checks import MAX_VALUE_BYTES
from tenxgraph.storage.longterm._filters import sqlite_where as filters
from tenxgraph.storage.longterm._hybrid import best_first
from tenxgraph.storage.longterm._sqlite_scopes import scope_token, scope_tokens
from tenxgraph.storage.longterm._sqlite_vec import (
    IndexRow,
    VecIndex,
    check_available,
    covers,
    index_path,
)
from tenxgraph.storage.longterm.base import MemoryStore, Row, SearchRequest
from tenxgraph.storage.longterm.embedding import Embedder
from tenxgraph.storage.sql import Component, SqliteDatabase
from tenxgraph.storage.sql._sqlite import transaction

__all__ = ["MEMORY", "SqliteMemoryStore"]

P = ParamSpec("P")
R = TypeVar("R")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE memory_items (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            namespace TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            expires_at REAL,
            UNIQUE (user_id, namespace, key)
        )""",
        "CREATE INDEX memory_items_recent ON memory_items (user_id, updated_at)",
        "CREATE INDEX memory_items_expiry ON memory_items (expires_at) "
        "WHERE expires_at IS NOT NULL",
        "CREATE VIRTUAL TABLE memory_fts USING fts5("
        "scope, text, tokenize = 'porter unicode61 remove_diacritics 2')",
    ),
    ("ALTER TABLE memory_items ADD COLUMN vector BLOB",),
    (
        "CREATE TABLE memory_scope_sizes (token TEXT PRIMARY KEY, items INTEGER NOT NULL) "
        "WITHOUT ROWID",
    ),
    (
        "ALTER TABLE memory_items ADD COLUMN ttl REAL",  # what a read's refresh starts again
        "UPDATE memory_items SET ttl = expires_at - updated_at WHERE expires_at IS NOT NULL",
    ),
)
"""Ordered schema changes of the ``memory`` component. Append only."""

MEMORY = Component("memory", MIGRATIONS)
"""The memory tables, recorded in ``schema_versions`` as component ``memory``."""

_COLUMNS = "i.namespace, i.key, i.value, i.created_at, i.updated_at, i.expires_at"


class SqliteMemoryStore(MemoryStore):
    """Long-term memory in one SQLite file; safe across threads and processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        default_ttl: float | None = None,
        max_value_bytes: int = MAX_VALUE_BYTES,
        embedder: Embedder | None = None,
        vector_scan: int = 20_000,
        timeout: float = 30.0,
        vector_index: bool | None = None,
        refresh_on_read: bool = True,
        sweep_interval: float | None = None,
        sweep_limit: int = 1_000,
    ) -> None:
        """Use (and create on first use) the database at ``path``.

        ``timeout`` is how long a write waits for another process's write lock.
        ``vector_index``: with an embedder, serve vector search from a
        ``sqlite-vec`` index (``_sqlite_vec``) in the file ``path + ".vec"``;
        None uses it when the extra ``vectors`` is installed, False never,
        True requires it (``ConfigError`` without it or without an embedder).
        """
        super().__init__(
            default_ttl=default_ttl,
            max_value_bytes=max_value_bytes,
            embedder=embedder,
            vector_scan=vector_scan,
            refresh_on_read=refresh_on_read,
            sweep_interval=sweep_interval,
            sweep_limit=sweep_limit,
        )
        self._db = SqliteDatabase(path, components=[MEMORY], timeout=timeout)
        self.path = self._db.path
        self._index: VecIndex | None = None
        if vector_index and embedder is None:
            raise ConfigError("vector_index=True needs an embedder")
        if embedder is not None and check_available(vector_index):
            self._index = VecIndex(index_path(self.path), embedder.dimensions, timeout)
        self._synced = threading.Lock()
        self._in_sync = False

    @property
    def vector_index(self) -> str | None:
        """``"sqlite-vec"`` when that index serves vector search, else None (brute force)."""
        return None if self._index is None else "sqlite-vec"

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
        item = (user_id, namespace, key, value, text, now, expires_at, vector)
        created, rowid = await self._db.call(_put, item)
        if self._index is not None:
            if vector is None:
                await asyncio.to_thread(self._indexed, self._index.remove, [(rowid, now)])
            else:
                row = (rowid, user_id, namespace, expires_at, now, vector)
                await asyncio.to_thread(self._indexed, self._index.write, [row])
        return created

    async def _get(self, user_id: str, namespace: str, key: str, now: float) -> Row | None:
        return await self._db.call(_get, user_id, namespace, key, now)

    async def _refresh(
        self, user_id: str, items: list[tuple[str, str]], now: float
    ) -> dict[tuple[str, str], float]:
        rows = await self._db.call(_refresh, user_id, items, now)
        if self._index is not None and rows:
            moved = [(rowid, expires) for rowid, _, _, expires in rows]
            await asyncio.to_thread(self._indexed, self._index.expire, moved)
        return {(ns, key): expires for _, ns, key, expires in rows}

    async def _delete(self, user_id: str, namespace: str, key: str, now: float) -> bool:
        live, gone = await self._db.call(_delete, user_id, namespace, key, now)
        if self._index is not None and gone:
            await asyncio.to_thread(self._indexed, self._index.remove, gone)
        return live

    async def _nearest(
        self, request: SearchRequest, query: bytes, k: int
    ) -> list[tuple[float, str, str]] | None:
        if self._index is None or request.filter or not covers(request.prefix):
            return None  # value filters, deep prefixes: the exact scan (docs/memory.md)
        return await asyncio.to_thread(self._nearest_now, request, query, k)

    def _nearest_now(
        self, request: SearchRequest, query: bytes, k: int
    ) -> list[tuple[float, str, str]]:
        assert self._index is not None
        hits = self._indexed(
            self._index.nearest, request.user_id, request.prefix, request.now, query, k
        )
        where, params = scope(request.prefix, request.now)
        marks = ", ".join("?" * len(hits))
        rows = self._db.run(
            lambda conn: conn.execute(
                f"SELECT i.id, i.namespace, i.key FROM memory_items i WHERE i.id IN ({marks}) "
                f"AND i.user_id = ? AND {where}",
                [*(rowid for rowid, _ in hits), request.user_id, *params],
            ).fetchall()
        )
        names = {rowid: (ns, key) for rowid, ns, key in rows}  # an index row may outlive its item
        found = [(score, *names[rowid]) for rowid, score in hits if rowid in names]
        return best_first(found)

    def _indexed(self, method: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Call an index method once the index has caught up with the items (first use)."""
        assert self._index is not None
        if not self._in_sync:
            with self._synced:
                if not self._in_sync:
                    self._index.sync(self._db.run(_vector_stamps), self._index_rows)
                    self._in_sync = True
        return method(*args, **kwargs)

    def _index_rows(self, rowids: list[int]) -> list[IndexRow]:
        marks = ", ".join("?" * len(rowids))
        rows = self._db.run(
            lambda conn: conn.execute(
                "SELECT id, user_id, namespace, expires_at, updated_at, vector FROM memory_items "
                f"WHERE id IN ({marks})",
                rowids,
            ).fetchall()
        )
        return [(*row[:5], bytes(row[5])) for row in rows]

    async def _search(self, request: SearchRequest) -> list[Row]:
        return await asyncio.to_thread(self._db.run, _search, request)

    async def _vectors(self, request: SearchRequest, scan: int) -> list[tuple[str, str, bytes]]:
        return await asyncio.to_thread(self._db.run, _vectors, request, scan)

    async def _namespaces(self, user_id: str, prefix: str, now: float) -> list[str]:
        return await asyncio.to_thread(self._db.run, _namespaces, user_id, prefix, now)

    async def _tenants(self) -> list[str]:
        return await asyncio.to_thread(self._db.run, _tenants)

    async def _purge(self, now: float, limit: int | None) -> int:
        gone = await asyncio.to_thread(self._db.run, _purge, now, limit)
        if self._index is not None and gone:
            await asyncio.to_thread(self._indexed, self._index.remove, gone)
        return len(gone)

    async def aclose(self) -> None:
        """Stop the sweeper, close the connection and the vector index (a later call reopens)."""
        await super().aclose()
        await asyncio.to_thread(self._db.close)
        if self._index is not None:
            await asyncio.to_thread(self._index.close)
            self._in_sync = False


_Item = tuple[str, str, str, str, str, float, float | None, bytes | None]
"""user_id, namespace, key, value, text, now, expires_at, vector."""


def _put(conn: sqlite3.Connection, item: _Item) -> tuple[float, int]:
    user_id, namespace, key, value, text, now, expires_at, vector = item
    ttl = None if expires_at is None else expires_at - now
    with transaction(conn, "IMMEDIATE"):
        old = conn.execute(
            "SELECT id, created_at, expires_at FROM memory_items "
            "WHERE user_id = ? AND namespace = ? AND key = ?",
            (user_id, namespace, key),
        ).fetchone()
        if old is None:
            (rowid,) = conn.execute(
                "INSERT INTO memory_items (user_id, namespace, key, value, created_at, "
                "updated_at, expires_at, vector, ttl) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "RETURNING id",
                (user_id, namespace, key, value, now, now, expires_at, vector, ttl),
            ).fetchone()
            created = now
            scopes.count(conn, user_id, namespace, 1)
        else:
            rowid, created, old_expiry = old
            if old_expiry is not None and old_expiry <= now:
                created = now  # an expired item is gone: this put starts a new one
            conn.execute(
                "UPDATE memory_items SET value = ?, created_at = ?, updated_at = ?, "
                "expires_at = ?, vector = ?, ttl = ? WHERE id = ?",
                (value, created, now, expires_at, vector, ttl, rowid),
            )
            conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
        conn.execute(
            "INSERT INTO memory_fts (rowid, scope, text) VALUES (?, ?, ?)",
            (rowid, " ".join(scope_tokens(user_id, namespace)), text),
        )
    return float(created), int(rowid)


def _get(
    conn: sqlite3.Connection, user_id: str, namespace: str, key: str, now: float
) -> Row | None:
    row = conn.execute(
        f"SELECT {_COLUMNS}, NULL FROM memory_items i WHERE i.user_id = ? AND i.namespace = ? "
        "AND i.key = ? AND (i.expires_at IS NULL OR i.expires_at > ?)",
        (user_id, namespace, key, now),
    ).fetchone()
    return None if row is None else tuple(row)


def _refresh(
    conn: sqlite3.Connection, user_id: str, items: list[tuple[str, str]], now: float
) -> list[tuple[int, str, str, float]]:
    """Start the ttls of the live items again; ``(rowid, namespace, key, expires_at)`` of each."""
    with transaction(conn, "IMMEDIATE"):
        return [
            (row[0], row[1], row[2], row[3])
            for namespace, key in items
            for row in conn.execute(
                "UPDATE memory_items SET expires_at = ? + ttl WHERE user_id = ? AND namespace = ? "
                "AND key = ? AND ttl IS NOT NULL AND expires_at > ? "
                "RETURNING id, namespace, key, expires_at",
                (now, user_id, namespace, key, now),
            ).fetchall()
        ]


def _delete(
    conn: sqlite3.Connection, user_id: str, namespace: str, key: str, now: float
) -> tuple[bool, list[tuple[int, float]]]:
    """Whether a live item was there, and ``(rowid, updated_at)`` of the deleted row."""
    with transaction(conn, "IMMEDIATE"):
        row = conn.execute(
            "DELETE FROM memory_items WHERE user_id = ? AND namespace = ? AND key = ? "
            "RETURNING id, expires_at, updated_at",
            (user_id, namespace, key),
        ).fetchone()
        if row is None:
            return False, []
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (row[0],))
        scopes.count(conn, user_id, namespace, -1)
    return row[1] is None or bool(row[1] > now), [(row[0], row[2])]


def scope(prefix: str, now: float) -> tuple[str, list[Any]]:
    """SQL conditions (on ``i``) and parameters: live items under the namespace prefix."""
    params: list[Any] = [now]
    where = "(i.expires_at IS NULL OR i.expires_at > ?)"
    if prefix:
        where += " AND (i.namespace = ? OR (i.namespace >= ? AND i.namespace < ?))"
        params += [prefix, prefix + "/", prefix + "0"]
    return where, params


def _search(conn: sqlite3.Connection, request: SearchRequest) -> list[Row]:
    where, params = scope(request.prefix, request.now)
    more, extra = filters(request.filter)
    where, params = f"i.user_id = ? AND {where}{more}", [request.user_id, *params, *extra]
    page = [request.limit, request.offset]
    if request.terms is None:
        query = (
            f"SELECT {_COLUMNS}, NULL FROM memory_items i WHERE {where} "
            "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT ? OFFSET ?"
        )
        return [tuple(row) for row in conn.execute(query, [*params, *page])]
    words = " OR ".join(f'"{term}"' for term in request.terms)
    match = f"text:({words})"
    token = scope_token(request.user_id, request.prefix)
    if scopes.use_scope_word(conn, token):
        match = f'scope:"{token}" AND {match}'
    found = _best_candidates(conn, request, match, (where, params))
    if found is not None:
        return found
    query = (
        f"SELECT {_COLUMNS}, -bm25(memory_fts, 0.0, 1.0) AS score FROM memory_fts "
        f"JOIN memory_items i ON i.id = memory_fts.rowid WHERE memory_fts MATCH ? AND {where} "
        "ORDER BY score DESC, i.updated_at DESC, i.namespace, i.key LIMIT ? OFFSET ?"
    )
    return [tuple(row) for row in conn.execute(query, [match, *params, *page])]


def _best_candidates(
    conn: sqlite3.Connection, request: SearchRequest, match: str, checks: tuple[str, list[Any]]
) -> list[Row] | None:
    """The page from the index's best-scored matches alone, or None if they may not hold it.

    FTS5 scores every match, but only the best ``bound`` are joined with
    their items (reading each item's row was a third of a search with a
    common word). Every match scoring above the lowest candidate score is
    a candidate; if enough of those pass the tenant, prefix, expiry and
    filter checks, the page is exact. Else (a filter or many expired items
    dropped them) the caller joins every match.
    """
    need = request.limit + request.offset
    bound = max(64, 4 * need)
    hits = conn.execute(
        "SELECT rowid, -bm25(memory_fts, 0.0, 1.0) AS score FROM memory_fts "
        "WHERE memory_fts MATCH ? ORDER BY score DESC LIMIT ?",
        (match, bound),
    ).fetchall()
    where, params = checks
    rows = conn.execute(
        f"SELECT {_COLUMNS}, h.score FROM (SELECT json_extract(value, '$[0]') AS id, "
        "json_extract(value, '$[1]') AS score FROM json_each(?)) h "
        f"JOIN memory_items i ON i.id = h.id WHERE {where} "
        "ORDER BY h.score DESC, i.updated_at DESC, i.namespace, i.key",
        [json.dumps(hits), *params],
    ).fetchall()
    if len(hits) == bound:  # there may be more matches at or below the lowest score
        rows = [row for row in rows if row[6] > hits[-1][1]]
        if len(rows) < need:
            return None
    return [tuple(row) for row in rows[request.offset : need]]


def _vectors(
    conn: sqlite3.Connection, request: SearchRequest, scan: int
) -> list[tuple[str, str, bytes]]:
    where, params = scope(request.prefix, request.now)
    more, extra = filters(request.filter)
    rows = conn.execute(
        f"SELECT i.namespace, i.key, i.vector FROM memory_items i WHERE i.user_id = ? AND "
        f"{where}{more} AND i.vector IS NOT NULL ORDER BY i.updated_at DESC LIMIT ?",
        [request.user_id, *params, *extra, scan],
    )
    return [(row[0], row[1], bytes(row[2])) for row in rows]


def _namespaces(conn: sqlite3.Connection, user_id: str, prefix: str, now: float) -> list[str]:
    where, params = scope(prefix, now)
    rows = conn.execute(
        f"SELECT DISTINCT i.namespace FROM memory_items i WHERE i.user_id = ? AND {where}",
        [user_id, *params],
    )
    return [row[0] for row in rows]


def _tenants(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT DISTINCT user_id FROM memory_items")]


def _purge(conn: sqlite3.Connection, now: float, limit: int | None) -> list[tuple[int, float]]:
    """``(rowid, updated_at)`` of the expired rows deleted (at most ``limit``, None: all)."""
    with transaction(conn, "IMMEDIATE"):
        gone = conn.execute(
            "DELETE FROM memory_items WHERE id IN (SELECT id FROM memory_items "
            "WHERE expires_at <= ? LIMIT ?) RETURNING id, updated_at, user_id, namespace",
            (now, -1 if limit is None else limit),
        ).fetchall()
        conn.executemany("DELETE FROM memory_fts WHERE rowid = ?", [(row[0],) for row in gone])
        scopes.purged(conn, [(row[2], row[3]) for row in gone])
    return [(row[0], row[1]) for row in gone]


def _vector_stamps(conn: sqlite3.Connection) -> list[tuple[int, float, float | None]]:
    """``(rowid, updated_at, expires_at)`` of every item with a vector: what the index must hold."""
    query = "SELECT id, updated_at, expires_at FROM memory_items WHERE vector IS NOT NULL"
    return [(row[0], row[1], row[2]) for row in conn.execute(query)]
