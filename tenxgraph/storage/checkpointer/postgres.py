"""``PgCheckpointer``: threads in PostgreSQL (psycopg 3, async pool), optionally cached in Redis.

The tables and semantics are SQLite's: a state row per thread, one row per
log message, one row per checkpoint, all scoped by ``user_id``. A save is
one transaction whose first statement is the compare-and-swap
``UPDATE ... WHERE incarnation = %s AND version = %s`` (or the ``INSERT`` of
a new thread), so of two concurrent saves of one thread the second finds the
new version and raises ``ConflictError``, and a save based on a thread since
deleted and re-created finds another incarnation. A load reads the state row and the window's
messages in one repeatable-read snapshot. Leases and rewinds are ``pg_leases``'
statements; a save made under a lease claims nothing unless the lease row is
still its owner's (checked inside the same statement).

Connections, transactions, the schema, its migrations (the ``threads``
component) and the private I/O loop that owned connections run on are
``tenxgraph.storage.sql.PgDatabase``'s (see ``sql/_postgres.py`` for where
the work runs and why). Faults: see ``sql/_pg_pool`` (checked connections,
one ``StorageUnavailableError`` within ``connect_timeout`` while the server
is down, recovery without user action) and ``redis_cache`` (timeouts and a
cool-down after a Redis failure).

An outage shorter than ``outage_timeout`` delays what a run depends on
(loads, saves, the lease calls, rewinds, a thread's listing line); it
does not fail them. Those calls are decorated ``@_retried``: run again
with backoff while Postgres is unreachable. A save whose connection broke after it was sent may have
committed: its next attempt first looks for the write it made (the
checkpoint of the version it claimed, with its values and its messages' ids)
and returns that, so a retry never appends the messages twice. A rewind
whose connection broke then is not run again (its outcome cannot be told).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from tenxgraph.core.state.ids import DEFAULT_USER, ThreadKey, check_id
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError
from tenxgraph.storage.checkpointer import pg_leases
from tenxgraph.storage.checkpointer._codec import (
    EncodedWrite,
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
    lease_lost,
    stamp_of,
    thread_not_found,
    window_reach,
)
from tenxgraph.storage.checkpointer._listing import list_threads
from tenxgraph.storage.checkpointer._media import (
    after_save,
    delete_with_media,
    media_policy,
    offload,
)
from tenxgraph.storage.checkpointer._pg_schema import MIGRATIONS, save_statements
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
from tenxgraph.storage.checkpointer.redis_cache import CachedThread, RedisThreadCache
from tenxgraph.storage.leases import ThreadLeases
from tenxgraph.storage.sql import Component
from tenxgraph.storage.sql._pg_pool import on_io_loop
from tenxgraph.storage.sql._postgres import PgDatabase

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

    from tenxgraph.storage.media.base import MediaStore
    from tenxgraph.storage.media.offload import MediaPolicy

__all__ = ["MIGRATIONS", "THREADS", "PgCheckpointer"]

THREADS = Component("threads", MIGRATIONS, legacy_table="schema_version")
"""The thread tables; ``schema_version`` recorded them before ``schema_versions``."""

R = TypeVar("R")
P = ParamSpec("P")

_CHECKPOINT_ROW = (
    'version, node, step, log_length, "values"::text, "window"::text, created_at, parent_version'
)
"""A checkpoint row's columns, in ``decode_checkpoint``'s order."""


def _retried(
    method: Callable[Concatenate[PgCheckpointer, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[PgCheckpointer, P], Coroutine[Any, Any, R]]:
    """Run an idempotent method again through an outage shorter than ``outage_timeout``."""

    async def retried(self: PgCheckpointer, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self._db.retrying(lambda lost: method(self, *args, **kwargs))

    functools.update_wrapper(retried, method)
    return retried


@dataclass(frozen=True, slots=True)
class _Loaded:
    thread: StoredThread
    entry: CachedThread


class PgCheckpointer(Checkpointer, ThreadLeases):
    """Durable threads and leases in PostgreSQL; ``redis`` adds a hot cache of loaded threads."""

    def __init__(
        self,
        conninfo: str | AsyncConnectionPool,
        *,
        redis: str | Any | RedisThreadCache | None = None,
        keep_checkpoints: int | None = None,
        schema: str = "tenxgraph",
        connect_timeout: float = 5.0,
        outage_timeout: float = 30.0,
        pool_min_size: int = 1,
        pool_size: int = 10,
        media: MediaStore | MediaPolicy | None = None,
    ) -> None:
        """Connect with a DSN (an owned pool) or an ``AsyncConnectionPool`` (the caller's).

        ``redis`` is a ``redis://`` URL, a ``redis.asyncio.Redis`` client or a
        configured ``RedisThreadCache``. ``keep_checkpoints`` keeps only the
        newest N checkpoints per thread. ``schema`` holds the tables.
        ``connect_timeout`` (seconds) bounds each wait for a connection, new
        or pooled: past it a call raises ``StorageUnavailableError``.
        ``outage_timeout`` (seconds; 0 turns it off) is how long loads, saves
        and lease calls wait for a Postgres that went away before they raise
        ``StorageUnavailableError``: a shorter outage only delays a run. The
        owned pool keeps ``pool_min_size`` to ``pool_size`` connections.
        ``media``: a media store (or ``MediaPolicy``) that large inline media
        move to on save (a ``PgMediaStore`` may share the schema).
        """
        check_keep(keep_checkpoints)
        owns_redis = (
            redis is None
            or isinstance(redis, str)
            or (isinstance(redis, RedisThreadCache) and redis.owns_client)
        )
        self._db = PgDatabase(
            conninfo,
            components=[THREADS],
            schema=schema,
            connect_timeout=connect_timeout,
            outage_timeout=outage_timeout,
            pool_min_size=pool_min_size,
            pool_size=pool_size,
            private_loop=owns_redis,
            on_close=self._close_cache,
        )
        self._cache = (
            redis
            if redis is None or isinstance(redis, RedisThreadCache)
            else RedisThreadCache(redis)
        )
        self._keep = keep_checkpoints
        self.media = media_policy(media)
        self.schema = schema
        self.conninfo = conninfo
        """The database (a DSN or pool): stores kept beside the threads connect to it."""
        self._s = self._db.s
        self._statements = save_statements(self._s, keep_checkpoints)

    async def use_running_loop(self) -> None:
        """Work on the running loop from now on, not a thread's: ``IoLoop.lend`` (a server's)."""
        await self._db.use_running_loop()

    async def _run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Await ``coroutine`` where the database work runs (see ``PgDatabase.run``)."""
        return await self._db.run(coroutine)

    @on_io_loop
    @_retried
    async def aload(self, key: ThreadKey) -> StoredThread | None:
        """The state row and window messages, from Redis when it matches Postgres' stamp."""
        if self._cache is None or not self._cache.available:
            loaded = await self._load(key)
            return None if loaded is None else loaded.thread
        await self._cache.settle(key)  # a follow held back (``linger``) goes first
        cached, identity = await asyncio.gather(self._cache.get(key), self._identity(key))
        if identity is None:
            if cached is not None:
                await self._cache.evict(key)
            return None
        if cached is not None and cached.stamp == identity:
            thread = cached.decode(key)
            if thread is not None:
                return thread
        loaded = await self._load(key)
        if loaded is None:
            return None
        await self._cache.put(key, loaded.entry)
        return loaded.thread

    @on_io_loop
    @_retried
    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        """The thread's stamp from Postgres (the source of truth): one one-row query."""
        return await self._identity(key)

    async def _identity(self, key: ThreadKey) -> ThreadStamp | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT incarnation, version FROM {self._s}.threads "
                "WHERE user_id = %s AND thread_id = %s",
                (key.user_id, key.thread_id),
            )
            return stamp_of(key, await cursor.fetchone())

    async def _load(self, key: ThreadKey) -> _Loaded | None:
        async with self._db.connection(snapshot=True) as conn:
            cursor = await conn.execute(
                'SELECT version, log_length, "values"::text, "window"::text, metadata::text, '
                f"incarnation FROM {self._s}.threads WHERE user_id = %s AND thread_id = %s",
                (key.user_id, key.thread_id),
            )
            row = await cursor.fetchone()
            if row is None:
                return None
            version, log_length, values, window_text, metadata, incarnation = row
            window = decode_window(key, window_text, log_length)
            rows = await self._window_rows(conn, key, window)
        thread = decode_thread(key, row, window, rows)
        entry = CachedThread(
            version=version,
            incarnation=incarnation,
            log_length=log_length,
            values=values.encode(),
            window=window_text.encode(),
            metadata=metadata.encode(),
            bodies=[body.encode() for _, body in rows],
        )
        return _Loaded(thread, entry)

    async def _window_rows(
        self, conn: AsyncConnection[Any], key: ThreadKey, window: Window
    ) -> list[tuple[int, str]]:
        cursor = await conn.execute(
            "SELECT m.seq, m.body::text "
            "FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS w(lo, hi, i) "
            f"JOIN {self._s}.messages AS m ON m.user_id = %s AND m.thread_id = %s "
            "AND m.seq >= w.lo AND m.seq < w.hi ORDER BY w.i, m.seq",
            (
                [start for start, _ in window],
                [end for _, end in window],
                key.user_id,
                key.thread_id,
            ),
        )
        return await cursor.fetchall()

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        """One statement: CAS the state row, append the messages, record the checkpoint.

        With ``media``, large inline media go to the store first, outside it.
        """
        write, offloaded = await offload(self.media, key, write)
        stamp = await self._save(key, write)
        await after_save(self.media, key, offloaded)
        return stamp

    @on_io_loop
    async def _save(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        encoded = encode_write(key, write)
        try:
            base = await self._db.retrying(lambda lost: self._write(key, write, encoded, lost))
        except ConflictError:
            if self._cache is not None:
                await self._cache.evict(key)
            raise
        if self._cache is not None:
            await self._cache.after_save(key, write, encoded, base)
        return ThreadStamp(encoded.incarnation, write.expected_version + 1)

    async def _write(
        self, key: ThreadKey, write: ThreadWrite, encoded: EncodedWrite, lost: bool
    ) -> int:
        """Apply the write as one statement; return the log length before it.

        One statement is one transaction and one round trip: the ``claimed``
        CTE is the compare-and-swap, and the inserts read from it, so when it
        claims nothing they write nothing. ``lost``: an earlier attempt's
        connection broke after sending it, so it may have committed; if it
        did, its result is returned (and the lease released if asked).
        """
        added = len(encoded.messages)
        reach = window_reach(key, write.window)
        if write.expected_version == 0:
            check_window(key, write.window, added)
        params = {
            "user": key.user_id,
            "thread": key.thread_id,
            "incarnation": encoded.incarnation,
            "expected": write.expected_version,
            "version": write.expected_version + 1,
            "added": added,
            "reach": reach,
            "values": encoded.values,
            "window": encoded.window,
            "metadata": encoded.metadata,
            "now": time.time(),
            "node": write.node,
            "step": write.step,
            "message_ids": [row.message_id for row in encoded.messages],
            "roles": [row.role for row in encoded.messages],
            "usages": [row.usage for row in encoded.messages],
            "bodies": [row.body for row in encoded.messages],
            "prune_upto": write.expected_version + 1 - (self._keep or 0),
            "lease": write.lease,
            "parent": encoded.parent,
        }
        release = write.release_lease and write.lease is not None
        statement = self._statements[write.expected_version == 0, release]
        async with self._db.connection() as conn:
            row = await self._landed(conn, params) if lost else None
            if row is not None and release:  # landed before: its lease goes now
                await pg_leases.release(conn, self._s, key, str(write.lease))
            if row is None:
                cursor = await conn.execute(statement, params)
                row = await cursor.fetchone()
            if row is not None:
                return int(row[0])
            if write.lease is not None:
                cursor = await conn.execute(
                    f"SELECT owner FROM {self._s}.leases WHERE user_id = %s AND thread_id = %s",
                    (key.user_id, key.thread_id),
                )
                holder = await cursor.fetchone()
                if holder is None or holder[0] != write.lease:
                    raise lease_lost(key, write.lease)
            cursor = await conn.execute(
                f"SELECT incarnation, version, log_length FROM {self._s}.threads "
                "WHERE user_id = %s AND thread_id = %s",
                (key.user_id, key.thread_id),
            )
            found = await cursor.fetchone()
        stamp = None if found is None else ThreadStamp(str(found[0]), int(found[1]))
        if found is not None and stamp == (encoded.incarnation, write.expected_version):
            check_window(key, write.window, int(found[2]) + added)  # the window did not fit
        raise conflict(key, write, encoded.incarnation, stamp)

    async def _landed(
        self, conn: AsyncConnection[Any], params: dict[str, Any]
    ) -> tuple[int] | None:
        """``(base,)`` when the write of ``params`` is stored (an attempt whose reply was lost).

        Its checkpoint (the version it claimed, with its node, step, values
        and window) and the messages just before that checkpoint's log length
        (its messages' ids, in order) identify it; a thread re-created since
        has another incarnation.
        """
        cursor = await conn.execute(
            f"SELECT c.log_length - %(added)s FROM {self._s}.checkpoints AS c "
            f"JOIN {self._s}.threads AS t USING (user_id, thread_id) "
            "WHERE c.user_id = %(user)s AND c.thread_id = %(thread)s AND c.version = %(version)s "
            "AND t.incarnation = %(incarnation)s AND c.node = %(node)s AND c.step = %(step)s "
            'AND c."values" = %(values)s::jsonb AND c."window" = %(window)s::jsonb '
            "AND c.parent_version IS NOT DISTINCT FROM %(parent)s::bigint "
            f"AND ARRAY(SELECT m.message_id FROM {self._s}.messages AS m "
            "WHERE m.user_id = %(user)s AND m.thread_id = %(thread)s "
            "AND m.seq >= c.log_length - %(added)s AND m.seq < c.log_length ORDER BY m.seq) "
            "= %(message_ids)s::text[]",
            params,
        )
        row = await cursor.fetchone()
        return None if row is None else (int(row[0]),)

    @on_io_loop
    async def arewind(
        self, key: ThreadKey, stamp: ThreadStamp, to_version: int, *, lease: str | None = None
    ) -> ThreadStamp | None:
        """One transaction: lock the thread row, check the stamp (and lease), cut, then evict."""

        async def attempt(lost: bool) -> ThreadStamp | None:
            async with self._db.connection(transaction=True) as conn:
                return await pg_leases.rewind(conn, self._s, key, stamp, to_version, lease)

        try:
            return await self._db.retrying(attempt, resend=False)
        finally:
            if self._cache is not None:
                await self._cache.evict(key)

    @on_io_loop
    @_retried
    async def atake_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Take the lease if free, expired or ``owner``'s (database clock); else the holder."""
        async with self._db.connection() as conn:
            return await pg_leases.take(conn, self._s, key, owner, seconds)

    @on_io_loop
    @_retried
    async def atake_thread(
        self, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None]:
        """Take the lease, then read the stamp on the same connection (one hop, two queries)."""
        async with self._db.connection() as conn:
            holder = await pg_leases.take(conn, self._s, key, owner, seconds)
            if holder is not None:
                return holder, None
            return None, await pg_leases.stamp(conn, self._s, key)

    @on_io_loop
    @_retried
    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Extend ``owner``'s lease; return the stop request made of it, if any."""
        async with self._db.connection() as conn:
            return await pg_leases.renew(conn, self._s, key, owner, seconds)

    @on_io_loop
    @_retried
    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        """Drop the lease if ``owner`` still holds it."""
        async with self._db.connection() as conn:
            await pg_leases.release(conn, self._s, key, owner)

    @on_io_loop
    @_retried
    async def arequest_stop(
        self, key: ThreadKey, request: str, *, owner_prefix: str | None = None
    ) -> str | None:
        """Mark the unexpired lease (``owner_prefix``'s, if given) with ``request``; its holder."""
        check_stop_request(request)
        async with self._db.connection() as conn:
            return await pg_leases.request_stop(conn, self._s, key, request, owner_prefix)

    @on_io_loop
    async def alist_messages(
        self, key: ThreadKey, *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """The whole log in seq order, paginated by seq; empty for an unknown thread."""
        check_page(offset, limit)
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT seq, body::text FROM {self._s}.messages "
                "WHERE user_id = %s AND thread_id = %s AND seq >= %s ORDER BY seq LIMIT %s",
                (key.user_id, key.thread_id, offset, limit),
            )
            rows = await cursor.fetchall()
        return decode_message_page(key, rows)

    @on_io_loop
    async def alist_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """The tenant's threads, most recently updated first, whose metadata ``@>`` the filter.

        Without a filter every row is read, so a damaged one is left out and
        logged rather than hidden (see ``_listing.list_threads``).
        """
        check_id("user_id", user_id)
        check_page(offset, limit)
        params: tuple[Any, ...] = (user_id,)
        contains = ""
        if metadata:
            contains = "AND metadata @> %s::jsonb "
            params += (encode_json("the metadata filter", dict(metadata)),)
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "SELECT thread_id, version, log_length, metadata::text, created_at, updated_at "
                f"FROM {self._s}.threads WHERE user_id = %s {contains}"
                'ORDER BY updated_at DESC, thread_id COLLATE "C" OFFSET %s LIMIT %s',
                (*params, offset, limit),
            )
            rows = await cursor.fetchall()
        return list_threads(user_id, rows)

    @on_io_loop
    @_retried
    async def athread_info(self, key: ThreadKey) -> ThreadInfo | None:
        """One thread's listing line, by its key (one indexed row).

        Retried through an outage as a load is: a run's start reads it (does
        its thread exist, is it tagged with the graph).
        """
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "SELECT thread_id, version, log_length, metadata::text, created_at, updated_at "
                f"FROM {self._s}.threads WHERE user_id = %s AND thread_id = %s",
                (key.user_id, key.thread_id),
            )
            rows = await cursor.fetchall()
        found = list_threads(key.user_id, rows)
        return found[0] if found else None

    @on_io_loop
    async def alist_tenants(self) -> dict[str, int]:
        """Each user_id holding threads, with how many (one grouped query)."""
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT user_id, COUNT(*) FROM {self._s}.threads GROUP BY user_id ORDER BY user_id"
            )
            rows = await cursor.fetchall()
        return {str(user): int(count) for user, count in rows}

    async def adelete_thread(self, key: ThreadKey) -> bool:
        """Delete the state row, the log and the checkpoints in one transaction, then evict.

        With ``media``, the media only this thread referenced are deleted after it.
        """
        return await delete_with_media(self, self.media, key, self._delete)

    @on_io_loop
    async def _delete(self, key: ThreadKey) -> bool:
        where = (key.user_id, key.thread_id)
        async with self._db.connection(transaction=True) as conn:
            for table in ("messages", "checkpoints", "threads"):
                cursor = await conn.execute(
                    f"DELETE FROM {self._s}.{table} WHERE user_id = %s AND thread_id = %s", where
                )
            deleted = cursor.rowcount > 0
        if self._cache is not None:
            await self._cache.evict(key)
        return deleted

    @on_io_loop
    @_retried
    async def alist_checkpoints(
        self, key: ThreadKey, *, limit: int | None = None
    ) -> Sequence[Checkpoint]:
        """The thread's checkpoints, newest first."""
        check_limit(limit)
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_CHECKPOINT_ROW} FROM {self._s}.checkpoints "
                "WHERE user_id = %s AND thread_id = %s ORDER BY version DESC LIMIT %s",
                (key.user_id, key.thread_id, limit),
            )
            rows = await cursor.fetchall()
        return [decode_checkpoint(key, *row) for row in rows]

    @on_io_loop
    @_retried
    async def aget_checkpoint(self, key: ThreadKey, version: int) -> Checkpoint | None:
        """Checkpoint ``version``: one row by its primary key."""
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_CHECKPOINT_ROW} FROM {self._s}.checkpoints "
                "WHERE user_id = %s AND thread_id = %s AND version = %s",
                (key.user_id, key.thread_id, version),
            )
            row = await cursor.fetchone()
        return None if row is None else decode_checkpoint(key, *row)

    @on_io_loop
    @_retried
    async def aload_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        """The log messages of ``window``, in window order."""
        async with self._db.connection(snapshot=True) as conn:
            cursor = await conn.execute(
                f"SELECT log_length FROM {self._s}.threads WHERE user_id = %s AND thread_id = %s",
                (key.user_id, key.thread_id),
            )
            row = await cursor.fetchone()
            if row is None:
                raise thread_not_found(key)
            check_window(key, window, int(row[0]))
            rows = await self._window_rows(conn, key, window)
        return decode_window_messages(key, window, rows)

    async def aclose(self) -> None:
        """Close the pool and Redis client if this checkpointer made them; later calls reopen."""
        await self._db.aclose()

    async def _close_cache(self) -> None:
        if self._cache is not None:
            await self._cache.aclose()
