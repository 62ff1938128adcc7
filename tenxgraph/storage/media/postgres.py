"""``PgMediaStore``: media as chunked ``bytea`` rows in PostgreSQL (the ``media`` component).

The tables and the protocol are ``SqliteMediaStore``'s (see there): chunks
staged under a blob id listed in ``media_uploads``, published by one
transaction that turns the upload into a ``media_objects`` row, read back
one chunk per query, so neither a put nor a read holds more than one chunk
in memory or a connection between chunks.

Decision: chunked ``bytea`` rather than large objects. Large objects live
outside any schema (dropping the schema leaves them behind), need their
own clean-up (``lo_unlink``) and a transaction held open across a streamed
read; rows are scoped by the schema like every other table, deleted with
it, and a read that pauses between chunks holds nothing. The chunk column
is stored ``EXTERNAL`` (out of line, not compressed: images and audio are
compressed already). Chunks travel in binary (no hex text doubling them).

Connections, the schema, migrations and the private I/O loop are
``tenxgraph.storage.sql.PgDatabase``'s, as for ``PgCheckpointer``; the
same DSN and schema may serve both (their components are apart).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph.errors import StorageError
from tenxgraph.storage.media.base import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_BYTES,
    MediaInfo,
    MediaStore,
    Upload,
    lost_piece,
)
from tenxgraph.storage.sql import Component
from tenxgraph.storage.sql._postgres import PgDatabase

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["MEDIA", "PgMediaStore"]

R = TypeVar("R")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE {schema}.media_objects (
            user_id text NOT NULL,
            key text NOT NULL,
            blob text NOT NULL,
            size bigint NOT NULL,
            mime_type text NOT NULL,
            created_at double precision NOT NULL,
            PRIMARY KEY (user_id, key)
        )""",
        """CREATE TABLE {schema}.media_chunks (
            blob text NOT NULL,
            seq integer NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (blob, seq)
        )""",
        "ALTER TABLE {schema}.media_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
        """CREATE TABLE {schema}.media_uploads (
            blob text PRIMARY KEY,
            user_id text NOT NULL,
            touched_at double precision NOT NULL
        )""",
    ),
)
"""Ordered schema changes of the ``media`` component (``{schema}``: the quoted schema). Append
only."""

MEDIA = Component("media", MIGRATIONS)
"""The media tables, recorded in ``schema_versions`` as component ``media``."""

_COLUMNS = "user_id, key, size, mime_type, created_at, blob"


class PgMediaStore(MediaStore):
    """Media in PostgreSQL, in chunk rows; safe across processes and machines."""

    def __init__(
        self,
        conninfo: str | AsyncConnectionPool,
        *,
        schema: str = "tenxgraph",
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        connect_timeout: float = 5.0,
        pool_min_size: int = 1,
        pool_size: int = 10,
    ) -> None:
        """Connect with a DSN (an owned pool) or an ``AsyncConnectionPool`` (the caller's).

        ``schema`` holds the tables; ``connect_timeout`` (seconds) bounds each
        wait for a connection (``StorageUnavailableError`` past it).
        """
        super().__init__(max_bytes=max_bytes, chunk_size=chunk_size)
        self._db = PgDatabase(
            conninfo,
            components=[MEDIA],
            schema=schema,
            connect_timeout=connect_timeout,
            pool_min_size=pool_min_size,
            pool_size=pool_size,
        )
        self.schema = schema
        self._s = self._db.s

    async def _run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Await ``coroutine`` where the database work runs (see ``PgDatabase.run``)."""
        return await self._db.run(coroutine)

    async def _execute(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One statement in its own transaction, in binary; its rows (none for a plain write)."""
        async with self._db.connection() as conn:
            cursor = await conn.execute(query.format(s=self._s), params, binary=True)
            return await cursor.fetchall() if cursor.description is not None else []

    async def _begin(self, user_id: str) -> Upload:
        blob = uuid.uuid4().hex
        await self._run(
            self._execute(
                "INSERT INTO {s}.media_uploads (blob, user_id, touched_at) VALUES (%s, %s, %s)",
                (blob, user_id, time.time()),
            )
        )
        return _RowUpload(self, blob, user_id)

    async def _stat(self, user_id: str, key: str) -> MediaInfo | None:
        rows = await self._run(
            self._execute(
                f"SELECT {_COLUMNS} FROM {{s}}.media_objects WHERE user_id = %s AND key = %s",
                (user_id, key),
            )
        )
        return MediaInfo(*rows[0]) if rows else None

    async def _read(self, info: MediaInfo) -> AsyncIterator[bytes]:
        seq, read = 0, 0
        while read < info.size:
            rows = await self._run(
                self._execute(
                    "SELECT data FROM {s}.media_chunks WHERE blob = %s AND seq = %s",
                    (info.location, seq),
                )
            )
            if not rows:
                raise await lost_piece(self, info, seq)  # deleted while being read, or damaged
            chunk = bytes(rows[0][0])
            read += len(chunk)
            seq += 1
            yield chunk

    async def _delete(self, user_id: str, key: str) -> bool:
        rows = await self._run(
            self._execute(
                "WITH gone AS (DELETE FROM {s}.media_objects WHERE user_id = %s AND key = %s "
                "RETURNING blob), chunks AS (DELETE FROM {s}.media_chunks WHERE blob IN "
                "(SELECT blob FROM gone)) SELECT count(*) FROM gone",
                (user_id, key),
            )
        )
        return bool(rows[0][0])

    async def _list(self, user_id: str, after: str | None, limit: int | None) -> list[MediaInfo]:
        rows = await self._run(
            self._execute(
                f"SELECT {_COLUMNS} FROM {{s}}.media_objects WHERE user_id = %s AND key > %s "
                "ORDER BY key LIMIT %s",
                (user_id, after or "", limit),
            )
        )
        return [MediaInfo(*row) for row in rows]

    async def _tenants(self) -> list[str]:
        rows = await self._run(self._execute("SELECT DISTINCT user_id FROM {s}.media_objects", ()))
        return [row[0] for row in rows]

    async def _purge(self, started_before: float) -> int:
        rows = await self._run(
            self._execute(
                "WITH gone AS (DELETE FROM {s}.media_uploads WHERE touched_at < %s "
                "RETURNING blob), chunks AS (DELETE FROM {s}.media_chunks WHERE blob IN "
                "(SELECT blob FROM gone)) SELECT count(*) FROM gone",
                (started_before,),
            )
        )
        return int(rows[0][0])

    async def aclose(self) -> None:
        """Close the pool if it is owned (a later call opens a new one)."""
        await self._db.aclose()


class _RowUpload(Upload):
    """A put staged as chunk rows under a blob id no object row names yet."""

    def __init__(self, store: PgMediaStore, blob: str, user_id: str) -> None:
        self.store = store
        self.blob = blob
        self.user_id = user_id
        self.seq = 0

    async def write(self, chunk: bytes) -> None:
        """One statement: mark the upload alive and add the chunk (nothing if it was purged)."""
        rows = await self.store._run(
            self.store._execute(
                "WITH touched AS (UPDATE {s}.media_uploads SET touched_at = %s WHERE blob = %s "
                "RETURNING blob) INSERT INTO {s}.media_chunks (blob, seq, data) "
                "SELECT blob, %s, %b FROM touched RETURNING seq",
                (time.time(), self.blob, self.seq, chunk),
            )
        )
        if not rows:
            raise _purged(self.blob)
        self.seq += 1

    async def commit(self, key: str, size: int, mime_type: str) -> MediaInfo:
        info = MediaInfo(self.user_id, key, size, mime_type, time.time(), self.blob)
        return await self.store._run(self._publish(info))

    async def _publish(self, info: MediaInfo) -> MediaInfo:
        """One transaction: end the upload, insert the object or drop the duplicate chunks."""
        s = self.store._s
        async with self.store._db.connection(transaction=True) as conn:
            ended = await conn.execute(
                f"DELETE FROM {s}.media_uploads WHERE blob = %s RETURNING blob", (self.blob,)
            )
            if await ended.fetchone() is None:
                raise _purged(self.blob)
            inserted = await conn.execute(
                f"INSERT INTO {s}.media_objects ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING key",
                (info.user_id, info.key, info.size, info.mime_type, info.created_at, self.blob),
            )
            if await inserted.fetchone() is not None:
                return info
            await conn.execute(f"DELETE FROM {s}.media_chunks WHERE blob = %s", (self.blob,))
            existing = await conn.execute(
                f"SELECT {_COLUMNS} FROM {s}.media_objects WHERE user_id = %s AND key = %s",
                (info.user_id, info.key),
            )
            row = await existing.fetchone()
            assert row is not None  # the conflicting row, committed before our insert
            return MediaInfo(*row)

    async def abort(self) -> None:
        await self.store._run(
            self.store._execute(
                "WITH gone AS (DELETE FROM {s}.media_uploads WHERE blob = %s) "
                "DELETE FROM {s}.media_chunks WHERE blob = %s",
                (self.blob, self.blob),
            )
        )


def _purged(blob: str) -> StorageError:
    return StorageError(
        f"media upload {blob} was discarded while in progress (purge_uploads found it idle); "
        "nothing was stored, put the media again"
    )
