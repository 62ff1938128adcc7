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

from tenxgraph.core.state.ids import DEFAULT_USER, ThreadKey, check_id
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import _sqlite_leases as leases
from tenxgraph.storage.checkpointer._codec import (
    EncodedWrite,
    check_stop_request,
    check_window,
    decode_checkpoint,
    decode_joined_thread,
    decode_message_page,
    decode_thread,
    decode_window,
    decode_window_messages,
    encode_json,
    encode_write,
    stamp_of,
    thread_not_found,
    window_size,
)
from tenxgraph.storage.checkpointer._listing import list_threads
from tenxgraph.storage.checkpointer._media import (
    after_save,
    delete_with_media,
    media_policy,
    offload,
)
from tenxgraph.storage.checkpointer._sqlite_load import CHUNKED_AT, decode_packed, read_chunks
from tenxgraph.storage.checkpointer._sqlite_rows import (
    MESSAGE_BODY,
    PACKED_COLUMNS,
    inflate_checkpoint,
    message_parts,
)
from tenxgraph.storage.checkpointer._sqlite_save import SqliteSaves, stored_stamp
from tenxgraph.storage.checkpointer._sqlite_schema import THREADS
from tenxgraph.storage.checkpointer.base import (
    Checkpoint,
    Checkpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
    ThreadStamp,
    ThreadWrite,
    Window,
    check_keep,
    check_limit,
    check_page,
)
from tenxgraph.storage.leases import ThreadLeases
from tenxgraph.storage.sql import SqliteDatabase
from tenxgraph.storage.sql._sqlite import transaction

if TYPE_CHECKING:
    from tenxgraph.storage.media.base import MediaStore
    from tenxgraph.storage.media.offload import MediaPolicy

__all__ = ["SqliteCheckpointer"]

R = TypeVar("R")

INLINE_MESSAGES = 64
"""A save of more messages, or a page of more rows, runs in a worker thread.

At 64 short messages a save takes about 0.6 ms and a page read 0.3 ms; at 256,
about 4 ms each: too long to hold the event loop."""

_WINDOW_RANGES = """json_each(?) AS w CROSS JOIN messages AS m
    WHERE m.tid = ?
      AND m.seq >= json_extract(w.value, '$[0]') AND m.seq < json_extract(w.value, '$[1]')"""
"""The window's rows in window order, unsorted: CROSS JOIN scans each range in turn."""

_WINDOW_QUERY = f"SELECT m.seq, {MESSAGE_BODY} FROM {_WINDOW_RANGES}"
"""The window's rows one by one (``decode_window_messages`` checks their order)."""

_WINDOW_JOINED = f"SELECT count(*), group_concat({MESSAGE_BODY}) FROM {_WINDOW_RANGES}"
"""The window's rows as their count and one text: ``group_concat`` adds each row as the
loop above makes it, so in window order. As the primary key holds each seq once, a count
equal to the window's size is every seq of it."""

_WINDOW_PACKED = f"SELECT {PACKED_COLUMNS} FROM {_WINDOW_RANGES}"
"""What a load reads first: the window's rows packed (``join_packed``), one row of five
values instead of a tuple and a string per row, and no string function run per row."""


_TID = "SELECT id FROM threads WHERE user_id = ? AND thread_id = ?"
"""The thread's row id, the key of its messages and checkpoints."""


class SqliteCheckpointer(Checkpointer, ThreadLeases):
    """Durable threads and their leases in one SQLite file, safe across threads and processes."""

    saves_take_leases = True  # a warm thread's turn commits twice (its input, its end)

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
        self._saves = SqliteSaves(keep_checkpoints)
        if media is True:
            from tenxgraph.storage.media.filesystem import FilesystemMediaStore

            media = FilesystemMediaStore.next_to(self.path)
        self.media = media_policy(media or None)

    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        """The thread's incarnation and version: one indexed one-row query."""
        return await self._db.call(stored_stamp, key)

    async def aload(self, key: ThreadKey) -> StoredThread | None:
        """One query for the state row, one for the window's messages (one read snapshot).

        In a worker thread: the thread's size is unbounded (decoded off the lock).
        """
        return await asyncio.to_thread(self._load, key)

    def _load(self, key: ThreadKey) -> StoredThread | None:
        found = self._db.run(_thread_rows, key, _WINDOW_PACKED, chunked=True)
        if found is None:
            return None
        loaded = decode_packed(key, *found)
        if loaded is not None:
            return loaded
        # a row in an older form, missing or damaged (or the thread changed since)
        found = self._db.run(_thread_rows, key, _WINDOW_JOINED)
        if found is None:
            return None
        state, window, ((count, joined),) = found
        loaded = decode_joined_thread(key, state, window, count, joined)
        if loaded is not None:
            return loaded
        # a row missing or damaged: read the rows one by one, which names it
        found = self._db.run(_thread_rows, key, _WINDOW_QUERY)
        return None if found is None else decode_thread(key, *found)

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        """One ``BEGIN IMMEDIATE`` transaction: CAS the state row, append, record a checkpoint.

        Encoded first, so an inline attempt that meets a lock is retried in a
        worker thread without encoding again.
        """
        offloaded = None
        if self.media is not None:
            write, offloaded = await offload(self.media, key, write)
        if len(write.new_messages) > INLINE_MESSAGES:  # encoding and inserting them may take long
            stamp = await asyncio.to_thread(self._save, key, write)
        else:
            stamp = await self._db.call(self._saves.write, key, write, _encode(key, write))
        if offloaded is not None:
            await after_save(self.media, key, offloaded)
        return stamp

    def _save(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        return self._db.run(self._saves.write, key, write, _encode(key, write))

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
        row is left out and logged (see ``_listing.list_threads``).
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

    async def alist_tenants(self) -> dict[str, int]:
        """Each user_id holding threads, with how many (one grouped query)."""
        rows = await self._db.call(_tenant_rows)
        return {str(user): int(count) for user, count in rows}

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
        """Take the lease and read the stamp: one statement when the lease is free."""
        return await self._db.call(_take_thread, key, owner, seconds)

    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Extend the lease; return the stop request made of it."""
        return await self._db.call(_in_write, leases.renew, key, owner, seconds)

    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        """Delete the lease row if ``owner`` holds it."""
        await self._db.call(_in_write, leases.release, key, owner)

    async def arequest_stop(
        self, key: ThreadKey, request: str, *, owner_prefix: str | None = None
    ) -> str | None:
        """Mark the unexpired lease (``owner_prefix``'s, if given) with ``request``; its holder."""
        check_stop_request(request)
        return await self._db.call(_in_write, leases.request_stop, key, request, owner_prefix)

    async def alist_checkpoints(
        self, key: ThreadKey, *, limit: int | None = None
    ) -> Sequence[Checkpoint]:
        """The thread's checkpoints, newest first."""
        check_limit(limit)
        if _small(limit):
            rows = await self._db.call(_checkpoint_rows, key, limit)
            return [decode_checkpoint(key, *inflate_checkpoint(key, row)) for row in rows]
        return await asyncio.to_thread(self._list_checkpoints, key, limit)

    def _list_checkpoints(self, key: ThreadKey, limit: int | None) -> list[Checkpoint]:
        rows = self._db.run(_checkpoint_rows, key, limit)
        return [decode_checkpoint(key, *inflate_checkpoint(key, row)) for row in rows]

    async def aget_checkpoint(self, key: ThreadKey, version: int) -> Checkpoint | None:
        """Checkpoint ``version``: one row by its primary key."""
        row = await self._db.call(_checkpoint_row, key, version)
        return None if row is None else decode_checkpoint(key, *inflate_checkpoint(key, row))

    async def aload_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        """The log messages of ``window``, in window order."""
        return await asyncio.to_thread(self._load_messages, key, window)

    def _load_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        return decode_window_messages(key, window, self._db.run(_window_rows, key, window))

    async def aclose(self) -> None:
        """Close the connection (after the call in progress); a later call opens it again."""
        await asyncio.to_thread(self._db.close)


def _encode(key: ThreadKey, write: ThreadWrite) -> EncodedWrite:
    """The write's columns, each message as its row's parts (``_sqlite_rows``)."""
    return encode_write(key, write, usages=False, dump=message_parts)


def _small(limit: int | None) -> bool:
    """A page small enough to read and decode on the event loop's thread."""
    return limit is not None and limit <= INLINE_MESSAGES


def _in_write(
    conn: sqlite3.Connection, statement: Callable[..., R], key: ThreadKey, *args: Any
) -> R:
    """Run ``statement(conn, key, *args)`` in one write transaction."""
    with transaction(conn, "IMMEDIATE"):
        return statement(conn, key, *args)


def _thread_rows(
    conn: sqlite3.Connection, key: ThreadKey, query: str, *, chunked: bool = False
) -> tuple[Any, Window, Any] | None:
    """The state row, its window and its rows by ``query`` in one snapshot (or ``read_chunks``)."""
    with transaction(conn, "DEFERRED"):
        row = conn.execute(
            'SELECT version, log_length, "values", "window", metadata, incarnation, id '
            "FROM threads WHERE user_id = ? AND thread_id = ?",
            (key.user_id, key.thread_id),
        ).fetchone()
        if row is None:
            return None
        window = decode_window(key, row[3], row[1])
        if chunked and window_size(window) >= CHUNKED_AT:
            return row[:6], window, read_chunks(conn, query, row[6], window)
        rows = conn.execute(query, (row[3], row[6])).fetchall()
    return row[:6], window, rows


def _window_rows(conn: sqlite3.Connection, key: ThreadKey, window: Window) -> list[Any]:
    window_text = encode_json("the window", [[start, end] for start, end in window])
    with transaction(conn, "DEFERRED"):
        tid, log_length = _log_length(conn, key)
        check_window(key, window, log_length)
        return conn.execute(_WINDOW_QUERY, (window_text, tid)).fetchall()


def _message_rows(
    conn: sqlite3.Connection, key: ThreadKey, offset: int, limit: int | None
) -> list[Any]:
    return conn.execute(
        f"SELECT m.seq, {MESSAGE_BODY} FROM messages AS m WHERE m.tid = ({_TID}) "
        "AND m.seq >= ? ORDER BY m.seq LIMIT ?",
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


_CHECKPOINT_ROW = 'version, node, step, log_length, "values", "window", created_at, parent_version'


def _checkpoint_rows(conn: sqlite3.Connection, key: ThreadKey, limit: int | None) -> list[Any]:
    return conn.execute(
        f"SELECT {_CHECKPOINT_ROW} "
        f"FROM checkpoints WHERE tid = ({_TID}) ORDER BY version DESC LIMIT ?",
        (key.user_id, key.thread_id, -1 if limit is None else limit),
    ).fetchall()


def _checkpoint_row(conn: sqlite3.Connection, key: ThreadKey, version: int) -> Any:
    return conn.execute(
        f"SELECT {_CHECKPOINT_ROW} FROM checkpoints WHERE tid = ({_TID}) AND version = ?",
        (key.user_id, key.thread_id, version),
    ).fetchone()


def _delete(conn: sqlite3.Connection, key: ThreadKey) -> bool:
    with transaction(conn, "IMMEDIATE"):
        row = conn.execute(
            "DELETE FROM threads WHERE user_id = ? AND thread_id = ? RETURNING id",
            (key.user_id, key.thread_id),
        ).fetchone()
        if row is None:
            return False
        leases.delete_log(conn, row[0])
        return True


def _take_thread(
    conn: sqlite3.Connection, key: ThreadKey, owner: str, seconds: float
) -> tuple[str | None, ThreadStamp | None]:
    """Take the lease and read the stamp: one statement, its own transaction, when it is free.

    When another run holds it, a write transaction names the holder (or takes
    the lease, if the holder gave it up in between).
    """
    now = time.time()
    taken = conn.execute(  # fetchall: the statement runs to its end, so it has committed
        leases.TAKE_THREAD, (key.user_id, key.thread_id, owner, now + seconds, now)
    ).fetchall()
    if taken:
        return None, None if taken[0][0] is None else stamp_of(key, taken[0])
    with transaction(conn, "IMMEDIATE"):
        holder = leases.take(conn, key, owner, seconds)
        return holder, None if holder is not None else stored_stamp(conn, key)


def _tenant_rows(conn: sqlite3.Connection) -> list[Any]:
    return conn.execute(
        "SELECT user_id, COUNT(*) FROM threads GROUP BY user_id ORDER BY user_id"
    ).fetchall()


def _log_length(conn: sqlite3.Connection, key: ThreadKey) -> tuple[int, int]:
    """The thread's row id and log length."""
    row = conn.execute(
        "SELECT id, log_length FROM threads WHERE user_id = ? AND thread_id = ?",
        (key.user_id, key.thread_id),
    ).fetchone()
    if row is None:
        raise thread_not_found(key)
    return int(row[0]), int(row[1])
