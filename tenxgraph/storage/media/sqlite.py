"""``SqliteMediaStore``: media as chunked blob rows in a SQLite file (the ``media`` component).

For an app that wants one file to copy or back up, this store can share
the checkpointer's file (``SqliteMediaStore("threads.db")`` next to
``SqliteCheckpointer("threads.db")``): its tables are the ``media``
component, migrated on their own schedule; each store opens its own
connection (``tenxgraph.storage.sql.SqliteDatabase``: WAL, a busy timeout,
short calls inline on the event loop when they cannot wait).

Tables: ``media_objects`` (one row per tenant and key: the blob id, size,
type, time), ``media_chunks`` (``chunk_size`` bytes per row, numbered from 0
per blob) and ``media_uploads`` (blobs being staged, with the time they were
last written). A put writes its chunks under a fresh blob id listed in
``media_uploads``, so no reader can reach them; the commit is one
transaction that removes the upload row and inserts the object row (or, when
the tenant already has those bytes, deletes the staged chunks). A read looks
the object up once, then fetches one chunk per query until it has the
recorded size: memory stays at one chunk whatever the file's size. An
object deleted while being read ends the read with ``MediaNotFoundError``.

Each chunk is one short transaction (large media are never written in one
long transaction holding the write lock); commits, deletes and purges,
whose size the caller does not bound, run in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator

from tenxgraph.errors import StorageError
from tenxgraph.storage.media.base import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_BYTES,
    MediaInfo,
    MediaStore,
    Upload,
    lost_piece,
)
from tenxgraph.storage.sql import Component, SqliteDatabase
from tenxgraph.storage.sql._sqlite import transaction

__all__ = ["MEDIA", "SqliteMediaStore"]

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE media_objects (
            user_id TEXT NOT NULL,
            key TEXT NOT NULL,
            blob TEXT NOT NULL,
            size INTEGER NOT NULL,
            mime_type TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (user_id, key)
        )""",
        """CREATE TABLE media_chunks (
            blob TEXT NOT NULL,
            seq INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (blob, seq)
        )""",
        """CREATE TABLE media_uploads (
            blob TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            touched_at REAL NOT NULL
        )""",
    ),
)
"""Ordered schema changes of the ``media`` component. Append only."""

MEDIA = Component("media", MIGRATIONS)
"""The media tables, recorded in ``schema_versions`` as component ``media``."""

_COLUMNS = "user_id, key, size, mime_type, created_at, blob"


class SqliteMediaStore(MediaStore):
    """Media in one SQLite file, in chunk rows; safe across threads and processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        timeout: float = 30.0,
    ) -> None:
        """Use (and create on first use) the database at ``path``.

        ``timeout`` is how long a write waits for another process's write lock.
        """
        super().__init__(max_bytes=max_bytes, chunk_size=chunk_size)
        self._db = SqliteDatabase(path, components=[MEDIA], timeout=timeout)
        self.path = self._db.path

    async def _begin(self, user_id: str) -> Upload:
        blob = uuid.uuid4().hex
        await self._db.call(_start_upload, blob, user_id)
        return _RowUpload(self, blob, user_id)

    async def _stat(self, user_id: str, key: str) -> MediaInfo | None:
        return await self._db.call(_stat, user_id, key)

    async def _read(self, info: MediaInfo) -> AsyncIterator[bytes]:
        seq, read = 0, 0
        while read < info.size:
            chunk = await self._db.call(_chunk, info.location, seq)
            if chunk is None:
                raise await lost_piece(self, info, seq)  # deleted while being read, or damaged
            read += len(chunk)
            seq += 1
            yield chunk

    async def _delete(self, user_id: str, key: str) -> bool:
        return await asyncio.to_thread(self._db.run, _delete, user_id, key)

    async def _list(self, user_id: str, after: str | None, limit: int | None) -> list[MediaInfo]:
        if limit is not None and limit <= 256:
            return await self._db.call(_list, user_id, after, limit)
        return await asyncio.to_thread(self._db.run, _list, user_id, after, limit)

    async def _tenants(self) -> list[str]:
        return await asyncio.to_thread(self._db.run, _tenants)

    async def _purge(self, started_before: float) -> int:
        return await asyncio.to_thread(self._db.run, _purge, started_before)

    async def aclose(self) -> None:
        """Close the connection (a later call opens it again)."""
        await asyncio.to_thread(self._db.close)


class _RowUpload(Upload):
    """A put staged as chunk rows under a blob id no object row names yet."""

    def __init__(self, store: SqliteMediaStore, blob: str, user_id: str) -> None:
        self._db = store._db
        self.blob = blob
        self.user_id = user_id
        self.seq = 0

    async def write(self, chunk: bytes) -> None:
        await self._db.call(_write_chunk, self.blob, self.seq, chunk)
        self.seq += 1

    async def commit(self, key: str, size: int, mime_type: str) -> MediaInfo:
        info = MediaInfo(self.user_id, key, size, mime_type, time.time(), self.blob)
        return await asyncio.to_thread(self._db.run, _publish, info)

    async def abort(self) -> None:
        await asyncio.to_thread(self._db.run, _discard, self.blob)


def _start_upload(conn: sqlite3.Connection, blob: str, user_id: str) -> None:
    conn.execute(
        "INSERT INTO media_uploads (blob, user_id, touched_at) VALUES (?, ?, ?)",
        (blob, user_id, time.time()),
    )


def _write_chunk(conn: sqlite3.Connection, blob: str, seq: int, chunk: bytes) -> None:
    with transaction(conn, "IMMEDIATE"):
        touched = conn.execute(
            "UPDATE media_uploads SET touched_at = ? WHERE blob = ?", (time.time(), blob)
        )
        if touched.rowcount == 0:
            raise _purged(blob)
        conn.execute(
            "INSERT INTO media_chunks (blob, seq, data) VALUES (?, ?, ?)", (blob, seq, chunk)
        )


def _publish(conn: sqlite3.Connection, info: MediaInfo) -> MediaInfo:
    """Make the staged blob the tenant's object, or drop it when the tenant has the bytes."""
    with transaction(conn, "IMMEDIATE"):
        if conn.execute("DELETE FROM media_uploads WHERE blob = ?", (info.location,)).rowcount == 0:
            raise _purged(info.location)
        inserted = conn.execute(
            f"INSERT INTO media_objects ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (info.user_id, info.key, info.size, info.mime_type, info.created_at, info.location),
        )
        if inserted.rowcount == 1:
            return info
        conn.execute("DELETE FROM media_chunks WHERE blob = ?", (info.location,))
        existing = _stat(conn, info.user_id, info.key)
        assert existing is not None  # the conflicting row, read in the same transaction
        return existing


def _discard(conn: sqlite3.Connection, blob: str) -> None:
    with transaction(conn, "IMMEDIATE"):
        conn.execute("DELETE FROM media_chunks WHERE blob = ?", (blob,))
        conn.execute("DELETE FROM media_uploads WHERE blob = ?", (blob,))


def _stat(conn: sqlite3.Connection, user_id: str, key: str) -> MediaInfo | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM media_objects WHERE user_id = ? AND key = ?", (user_id, key)
    ).fetchone()
    return None if row is None else MediaInfo(*row)


def _chunk(conn: sqlite3.Connection, blob: str, seq: int) -> bytes | None:
    row = conn.execute(
        "SELECT data FROM media_chunks WHERE blob = ? AND seq = ?", (blob, seq)
    ).fetchone()
    return None if row is None else bytes(row[0])


def _delete(conn: sqlite3.Connection, user_id: str, key: str) -> bool:
    with transaction(conn, "IMMEDIATE"):
        row = conn.execute(
            "DELETE FROM media_objects WHERE user_id = ? AND key = ? RETURNING blob",
            (user_id, key),
        ).fetchone()
        if row is None:
            return False
        conn.execute("DELETE FROM media_chunks WHERE blob = ?", (row[0],))
        return True


def _list(
    conn: sqlite3.Connection, user_id: str, after: str | None, limit: int | None
) -> list[MediaInfo]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM media_objects WHERE user_id = ? AND key > ? ORDER BY key LIMIT ?",
        (user_id, after or "", -1 if limit is None else limit),
    ).fetchall()
    return [MediaInfo(*row) for row in rows]


def _tenants(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT DISTINCT user_id FROM media_objects")]


def _purge(conn: sqlite3.Connection, started_before: float) -> int:
    with transaction(conn, "IMMEDIATE"):
        blobs = conn.execute(
            "DELETE FROM media_uploads WHERE touched_at < ? RETURNING blob", (started_before,)
        ).fetchall()
        conn.executemany("DELETE FROM media_chunks WHERE blob = ?", blobs)
    return len(blobs)


def _purged(blob: str) -> StorageError:
    return StorageError(
        f"media upload {blob} was discarded while in progress (purge_uploads found it idle); "
        "nothing was stored, put the media again"
    )
