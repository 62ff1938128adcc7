"""``SqliteCheckpointer``: the embedded default, one SQLite file in WAL mode.

The file, its connection (one per instance, behind a lock), WAL and the
migrations are ``tenxgraph.storage.sql.SqliteDatabase``'s, and every blocking
sqlite3 call goes through its ``call``, one at a time per instance. The calls
of a turn (take the lease, small saves, renew, release) run on the event
loop's thread when they cannot wait -- that halves a durable turn -- and in a
worker thread when they would wait for another process's lock. Calls whose
size the caller does not bound (a whole thread, a window, unlimited pages,
deleting or rewinding a thread, a save of many messages) always run in a
worker thread, so the loop is never held long. Other processes share the
file safely: every save is one ``BEGIN IMMEDIATE`` transaction that takes
SQLite's write lock (waiting up to ``timeout`` seconds for another writer,
in a worker thread) and then compares versions, so of two processes saving
the same thread exactly one wins. Needs SQLite >= 3.35 (``RETURNING``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import _sqlite_leases as leases
from tenxgraph.storage.checkpointer._codec import (
    EncodedWrite,
    check_keep,
    check_page,
    check_stop_request,
    check_window,
    conflict,
    decode_checkpoint,
    decode_message_page,
    decode_thread,
    decode_window,
    decode_window_messages,
    encode_json,
    encode_write,
    list_threads,
    stamp_of,
    thread_not_found,
)
from tenxgraph.storage.checkpointer._media import (
    after_save,
    delete_with_media,
    media_policy,
    offload,
)
from tenxgraph.storage.checkpointer.base import (
    DEFAULT_USER,
    LEGACY_INCARNATION,
    Checkpoint,
    Checkpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
    ThreadKey,
    ThreadStamp,
    ThreadWrite,
    Window,
    check_id,
)
from tenxgraph.storage.sql import Component, SqliteDatabase
from tenxgraph.storage.sql._sqlite import transaction

if TYPE_CHECKING:
    from tenxgraph.storage.media.base import MediaStore
    from tenxgraph.storage.media.offload import MediaPolicy

__all__ = ["SqliteCheckpointer"]

R = TypeVar("R")

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE threads (
            user_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            log_length INTEGER NOT NULL,
            "values" TEXT NOT NULL,
            "window" TEXT NOT NULL,
            metadata TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, thread_id)
        )""",
        "CREATE INDEX threads_recent ON threads (user_id, updated_at DESC, thread_id)",
        """CREATE TABLE messages (
            user_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            role TEXT NOT NULL,
            usage TEXT,
            body TEXT NOT NULL,
            PRIMARY KEY (user_id, thread_id, seq)
        )""",
        """CREATE TABLE checkpoints (
            user_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            node TEXT NOT NULL,
            step INTEGER NOT NULL,
            log_length INTEGER NOT NULL,
            "values" TEXT NOT NULL,
            "window" TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (user_id, thread_id, version)
        )""",
    ),
    (  # 2: thread identity; threads stored before it share the incarnation 'legacy'
        f"ALTER TABLE threads ADD COLUMN incarnation TEXT NOT NULL DEFAULT '{LEGACY_INCARNATION}'",
    ),
    (leases.LEASES_TABLE,),  # 3: one run per thread at a time
)
"""Ordered schema changes of the ``threads`` component (recorded in ``schema_versions``).

Append only."""

THREADS = Component("threads", MIGRATIONS, legacy_table="schema_version")
"""The thread tables; ``schema_version`` recorded them before ``schema_versions``."""

INLINE_MESSAGES = 64
"""A save of more messages, or a page of more rows, runs in a worker thread.

At 64 short messages a save takes about 0.6 ms and a page read 0.3 ms; at 256,
about 4 ms each: too long to hold the event loop."""

_WINDOW_QUERY = """
    SELECT m.seq, m.body FROM json_each(?) AS w CROSS JOIN messages AS m
    WHERE m.user_id = ? AND m.thread_id = ?
      AND m.seq >= json_extract(w.value, '$[0]') AND m.seq < json_extract(w.value, '$[1]')
"""
"""The window's rows: CROSS JOIN makes the ranges the outer loop and each range an index
scan, so rows come in window order without a sort (``decode_window_messages`` checks it)."""


class SqliteCheckpointer(Checkpointer):
    """Durable threads in one SQLite file, safe across threads and processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        keep_checkpoints: int | None = None,
        timeout: float = 30.0,
        media: MediaStore | MediaPolicy | bool | None = None,
    ) -> None:
        """Use (and create on first use) the database at ``path``.

        ``keep_checkpoints`` keeps only the newest N checkpoints per thread;
        ``timeout`` is how long a save waits for another process's write lock.
        ``media``: a media store (or ``MediaPolicy``) that large inline media
        move to on save; True for the filesystem store beside the file
        (``<path>-media``, see ``FilesystemMediaStore.next_to``).
        """
        check_keep(keep_checkpoints)
        self._db = SqliteDatabase(path, components=[THREADS], timeout=timeout)
        self.path = self._db.path
        self._keep = keep_checkpoints
        if media is True:
            from tenxgraph.storage.media.filesystem import FilesystemMediaStore

            media = FilesystemMediaStore.next_to(self.path)
        self.media = media_policy(media or None)

    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        """The thread's incarnation and version: one indexed one-row query."""
        return await self._db.call(_stamp, key)

    async def aload(self, key: ThreadKey) -> StoredThread | None:
        """One query for the state row, one for the window's messages (one read snapshot).

        In a worker thread: the thread's size is unbounded (decoded off the lock).
        """
        return await asyncio.to_thread(self._load, key)

    def _load(self, key: ThreadKey) -> StoredThread | None:
        found = self._db.run(_thread_rows, key)
        return None if found is None else decode_thread(key, *found)

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        """One ``BEGIN IMMEDIATE`` transaction: CAS the state row, append, record a checkpoint.

        Encoded first, so an inline attempt that meets a lock is retried in a
        worker thread without encoding again.
        """
        write, offloaded = await offload(self.media, key, write)
        if len(write.new_messages) > INLINE_MESSAGES:  # encoding and inserting them may take long
            stamp = await asyncio.to_thread(self._save, key, write)
        else:
            stamp = await self._db.call(self._write, key, write, encode_write(key, write))
        await after_save(self.media, key, offloaded)
        return stamp

    def _save(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        return self._db.run(self._write, key, write, encode_write(key, write))

    def _write(
        self, conn: sqlite3.Connection, key: ThreadKey, write: ThreadWrite, encoded: EncodedWrite
    ) -> ThreadStamp:
        added = len(encoded.messages)
        version = write.expected_version + 1
        now = time.time()
        user, thread = key.user_id, key.thread_id
        with transaction(conn, "IMMEDIATE"):
            leases.check_lease(conn, key, write.lease)
            if write.expected_version == 0:
                inserted = conn.execute(
                    "INSERT INTO threads (user_id, thread_id, incarnation, version, log_length, "
                    '"values", "window", metadata, created_at, updated_at) '
                    "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        user,
                        thread,
                        encoded.incarnation,
                        added,
                        encoded.values,
                        encoded.window,
                        encoded.metadata or "{}",
                        now,
                        now,
                    ),
                ).rowcount
                if not inserted:
                    raise conflict(key, write, encoded.incarnation, _stamp(conn, key))
                base = 0
            else:
                row = conn.execute(
                    "UPDATE threads SET version = version + 1, log_length = log_length + ?, "
                    '"values" = ?, "window" = ?, metadata = coalesce(?, metadata), updated_at = ? '
                    "WHERE user_id = ? AND thread_id = ? AND incarnation = ? AND version = ? "
                    "RETURNING log_length",
                    (
                        added,
                        encoded.values,
                        encoded.window,
                        encoded.metadata,
                        now,
                        user,
                        thread,
                        encoded.incarnation,
                        write.expected_version,
                    ),
                ).fetchone()
                if row is None:
                    raise conflict(key, write, encoded.incarnation, _stamp(conn, key))
                base = row[0] - added
            check_window(key, write.window, base + added)
            conn.executemany(
                "INSERT INTO messages (user_id, thread_id, seq, message_id, role, usage, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (user, thread, base + index, r.message_id, r.role, r.usage, r.body)
                    for index, r in enumerate(encoded.messages)
                ],
            )
            conn.execute(
                "INSERT INTO checkpoints (user_id, thread_id, version, node, step, log_length, "
                '"values", "window", created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (
                    user,
                    thread,
                    version,
                    write.node,
                    write.step,
                    base + added,
                    encoded.values,
                    encoded.window,
                    now,
                ),
            )
            self._after_write(conn, key, write, version)
        return ThreadStamp(encoded.incarnation, version)

    def _after_write(
        self, conn: sqlite3.Connection, key: ThreadKey, write: ThreadWrite, version: int
    ) -> None:
        """In the save's transaction: drop checkpoints past retention, give the lease up."""
        if self._keep is not None:
            conn.execute(
                "DELETE FROM checkpoints WHERE user_id = ? AND thread_id = ? AND version <= ?",
                (key.user_id, key.thread_id, version - self._keep),
            )
        if write.release_lease and write.lease is not None:
            leases.release(conn, key, write.lease)

    async def alist_messages(
        self, key: ThreadKey, *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """The whole log in seq order, paginated by seq; empty for an unknown thread."""
        check_page(offset, limit)
        if _small(limit):
            return decode_message_page(key, await self._db.call(_message_rows, key, offset, limit))
        return await asyncio.to_thread(self._list_messages, key, offset, limit)

    def _list_messages(self, key: ThreadKey, offset: int, limit: int | None) -> list[StoredMessage]:
        return decode_message_page(key, self._db.run(_message_rows, key, offset, limit))

    async def alist_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """The tenant's threads, most recently updated first.

        The metadata filter (``jsonb @>`` containment) runs in Python over the
        tenant's threads; without a filter, paging happens in SQL. A damaged
        row is left out and logged (see ``_codec.list_threads``).
        """
        check_id("user_id", user_id)
        check_page(offset, limit)
        wanted = metadata or None
        if wanted is None and _small(limit):
            rows = await self._db.call(_thread_list_rows, user_id, None, offset, limit)
            return list_threads(user_id, rows, None, 0, None)
        return await asyncio.to_thread(self._list_threads, user_id, wanted, offset, limit)

    def _list_threads(
        self, user_id: str, wanted: Mapping[str, Any] | None, offset: int, limit: int | None
    ) -> list[ThreadInfo]:
        rows = self._db.run(_thread_list_rows, user_id, wanted, offset, limit)
        if wanted is None:
            offset, limit = 0, None  # paged in SQL
        return list_threads(user_id, rows, wanted, offset, limit)

    async def athread_info(self, key: ThreadKey) -> ThreadInfo | None:
        """One thread's listing line, by its key (one indexed row)."""
        rows = await self._db.call(_thread_info_rows, key)
        found = list_threads(key.user_id, rows)
        return found[0] if found else None

    async def adelete_thread(self, key: ThreadKey) -> bool:
        """Delete the state row, the log and the checkpoints in one transaction.

        In a worker thread: the log's size is unbounded. With ``media``, the
        media only this thread referenced are deleted after it.
        """
        return await delete_with_media(self, self.media, key, self._delete)

    async def _delete(self, key: ThreadKey) -> bool:
        return await asyncio.to_thread(self._db.run, _delete, key)

    async def arewind(
        self, key: ThreadKey, stamp: ThreadStamp, to_version: int, *, lease: str | None = None
    ) -> ThreadStamp | None:
        """One write transaction: CAS on ``stamp``, then cut the log and checkpoints back.

        In a worker thread: the part cut off may be any length.
        """
        return await asyncio.to_thread(
            self._db.run, _in_write, leases.rewind, key, stamp, to_version, lease
        )

    async def atake_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Take the lease in one write transaction (an upsert guarded by owner and expiry)."""
        return await self._db.call(_in_write, leases.take, key, owner, seconds)

    async def atake_thread(
        self, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None]:
        """Take the lease and read the stamp in one write transaction."""
        return await self._db.call(_in_write, _take_thread, key, owner, seconds)

    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Extend the lease; return the stop request made of it."""
        return await self._db.call(_in_write, leases.renew, key, owner, seconds)

    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        """Delete the lease row if ``owner`` holds it."""
        await self._db.call(_in_write, leases.release, key, owner)

    async def arequest_stop(self, key: ThreadKey, request: str) -> str | None:
        """Mark the unexpired lease with ``request``; return its holder."""
        check_stop_request(request)
        return await self._db.call(_in_write, leases.request_stop, key, request)

    async def alist_checkpoints(
        self, key: ThreadKey, *, limit: int | None = None
    ) -> Sequence[Checkpoint]:
        """The thread's checkpoints, newest first."""
        check_page(0, limit)
        if _small(limit):
            rows = await self._db.call(_checkpoint_rows, key, limit)
            return [decode_checkpoint(key, *row) for row in rows]
        return await asyncio.to_thread(self._list_checkpoints, key, limit)

    def _list_checkpoints(self, key: ThreadKey, limit: int | None) -> list[Checkpoint]:
        rows = self._db.run(_checkpoint_rows, key, limit)
        return [decode_checkpoint(key, *row) for row in rows]

    async def aload_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        """The log messages of ``window``, in window order."""
        return await asyncio.to_thread(self._load_messages, key, window)

    def _load_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        return decode_window_messages(key, window, self._db.run(_window_rows, key, window))

    async def aclose(self) -> None:
        """Close the connection (after the call in progress); a later call opens it again."""
        await asyncio.to_thread(self._db.close)


def _small(limit: int | None) -> bool:
    """A page small enough to read and decode on the event loop's thread."""
    return limit is not None and limit <= INLINE_MESSAGES


def _in_write(
    conn: sqlite3.Connection, statement: Callable[..., R], key: ThreadKey, *args: Any
) -> R:
    """Run ``statement(conn, key, *args)`` in one write transaction."""
    with transaction(conn, "IMMEDIATE"):
        return statement(conn, key, *args)


def _thread_rows(conn: sqlite3.Connection, key: ThreadKey) -> tuple[Any, Window, list[Any]] | None:
    """The state row, its window and the window's message rows, in one read snapshot."""
    with transaction(conn, "DEFERRED"):
        row = conn.execute(
            'SELECT version, log_length, "values", "window", metadata, incarnation '
            "FROM threads WHERE user_id = ? AND thread_id = ?",
            (key.user_id, key.thread_id),
        ).fetchone()
        if row is None:
            return None
        window = decode_window(key, row[3], row[1])
        rows = conn.execute(_WINDOW_QUERY, (row[3], key.user_id, key.thread_id)).fetchall()
    return row, window, rows


def _window_rows(conn: sqlite3.Connection, key: ThreadKey, window: Window) -> list[Any]:
    window_text = encode_json("the window", [[start, end] for start, end in window])
    with transaction(conn, "DEFERRED"):
        check_window(key, window, _log_length(conn, key))
        return conn.execute(_WINDOW_QUERY, (window_text, key.user_id, key.thread_id)).fetchall()


def _message_rows(
    conn: sqlite3.Connection, key: ThreadKey, offset: int, limit: int | None
) -> list[Any]:
    return conn.execute(
        "SELECT seq, body FROM messages WHERE user_id = ? AND thread_id = ? AND seq >= ? "
        "ORDER BY seq LIMIT ?",
        (key.user_id, key.thread_id, offset, -1 if limit is None else limit),
    ).fetchall()


def _thread_list_rows(
    conn: sqlite3.Connection,
    user_id: str,
    wanted: Mapping[str, Any] | None,
    offset: int,
    limit: int | None,
) -> list[Any]:
    """The tenant's thread rows, paged in SQL unless a metadata filter runs in Python."""
    query = (
        "SELECT thread_id, version, log_length, metadata, created_at, updated_at FROM threads "
        "WHERE user_id = ? ORDER BY updated_at DESC, thread_id"
    )
    params: tuple[Any, ...] = (user_id,)
    if wanted is None:
        query += " LIMIT ? OFFSET ?"
        params += (-1 if limit is None else limit, offset)
    return conn.execute(query, params).fetchall()


def _thread_info_rows(conn: sqlite3.Connection, key: ThreadKey) -> list[Any]:
    return conn.execute(
        "SELECT thread_id, version, log_length, metadata, created_at, updated_at FROM threads "
        "WHERE user_id = ? AND thread_id = ?",
        (key.user_id, key.thread_id),
    ).fetchall()


def _checkpoint_rows(conn: sqlite3.Connection, key: ThreadKey, limit: int | None) -> list[Any]:
    return conn.execute(
        'SELECT version, node, step, log_length, "values", "window", created_at '
        "FROM checkpoints WHERE user_id = ? AND thread_id = ? "
        "ORDER BY version DESC LIMIT ?",
        (key.user_id, key.thread_id, -1 if limit is None else limit),
    ).fetchall()


def _delete(conn: sqlite3.Connection, key: ThreadKey) -> bool:
    where = (key.user_id, key.thread_id)
    with transaction(conn, "IMMEDIATE"):
        conn.execute("DELETE FROM messages WHERE user_id = ? AND thread_id = ?", where)
        conn.execute("DELETE FROM checkpoints WHERE user_id = ? AND thread_id = ?", where)
        deleted = conn.execute("DELETE FROM threads WHERE user_id = ? AND thread_id = ?", where)
        return deleted.rowcount > 0


def _take_thread(
    conn: sqlite3.Connection, key: ThreadKey, owner: str, seconds: float
) -> tuple[str | None, ThreadStamp | None]:
    holder = leases.take(conn, key, owner, seconds)
    return holder, None if holder is not None else _stamp(conn, key)


def _stamp(conn: sqlite3.Connection, key: ThreadKey) -> ThreadStamp | None:
    return stamp_of(
        conn.execute(
            "SELECT incarnation, version FROM threads WHERE user_id = ? AND thread_id = ?",
            (key.user_id, key.thread_id),
        ).fetchone()
    )


def _log_length(conn: sqlite3.Connection, key: ThreadKey) -> int:
    row = conn.execute(
        "SELECT log_length FROM threads WHERE user_id = ? AND thread_id = ?",
        (key.user_id, key.thread_id),
    ).fetchone()
    if row is None:
        raise thread_not_found(key)
    return int(row[0])
