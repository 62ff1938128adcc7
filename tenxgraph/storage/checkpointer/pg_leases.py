"""The PostgreSQL lease rows' statements (and the rewind's), run on the caller's connection.

Kept apart from ``postgres.py`` so the backend's save and load path reads in
one sitting, and public so that a store sharing the database can take,
release or stop a thread's lease inside its own transaction: the run queue
(``tenxgraph.runs``) marks a run ``running`` in the transaction that takes
its thread's lease, and asks for ``free(...)`` in its claim. The table is
``{schema}.leases`` of the ``threads`` component (``postgres.THREADS``),
whose migrations create it. Lease times are the database's clock (``clock_timestamp()`` as
epoch seconds), so processes on several machines agree on when a lease
expires whatever their own clocks say.

A fenced save (``_pg_schema.LEASE_HELD``) or rewind reads the lease row
``FOR SHARE``: a run taking the thread waits for a save that already checked
the old owner to commit, and a save after the take sees the new owner, so
once ``atake_lease`` returns, the run it displaced writes nothing more.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer._codec import (
    lease_lost,
    missing_checkpoint,
    rewind_conflict,
    stamp_of,
)
from tenxgraph.storage.checkpointer.base import ThreadStamp

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "NOW",
    "check_lease",
    "free",
    "release",
    "renew",
    "renew_many",
    "request_stop",
    "rewind",
    "stamp",
    "take",
    "take_many",
]

NOW = "extract(epoch from clock_timestamp())"
"""The database clock as epoch seconds (``clock_timestamp``: not frozen at transaction start)."""


_TAKEN = (
    "ON CONFLICT (user_id, thread_id) DO UPDATE "
    "SET owner = excluded.owner, expires_at = excluded.expires_at, stop = NULL "
    f"WHERE held.owner = excluded.owner OR held.expires_at < {NOW}"
)
"""How a take treats an existing lease row: taken over only when it is the taker's or expired."""


async def take(
    conn: AsyncConnection[Any], s: str, key: ThreadKey, owner: str, seconds: float
) -> str | None:
    """Take the lease if free, expired or ``owner``'s; else return the holder."""
    while True:  # again only when the holder that refused the take released it meanwhile
        cursor = await conn.execute(
            f"INSERT INTO {s}.leases AS held (user_id, thread_id, owner, expires_at, stop) "
            f"VALUES (%s, %s, %s, {NOW} + %s, NULL) {_TAKEN} RETURNING owner",
            (key.user_id, key.thread_id, owner, seconds),
        )
        if await cursor.fetchone() is not None:
            return None
        cursor = await conn.execute(
            f"SELECT owner FROM {s}.leases WHERE user_id = %s AND thread_id = %s",
            (key.user_id, key.thread_id),
        )
        row = await cursor.fetchone()
        if row is not None:
            return str(row[0])


async def take_many(
    conn: AsyncConnection[Any], s: str, wanted: list[tuple[ThreadKey, str]], seconds: float
) -> set[ThreadKey]:
    """Take each ``(thread, owner)`` lease that is free, expired or its owner's, in one statement.

    Returns the threads taken; a thread held by someone else is left as it
    is (no holder is named, unlike ``take``). ``wanted`` names each thread
    once.
    """
    if not wanted:
        return set()
    cursor = await conn.execute(
        f"INSERT INTO {s}.leases AS held (user_id, thread_id, owner, expires_at, stop) "
        f"SELECT w.user_id, w.thread_id, w.owner, {NOW} + %s, NULL "
        "FROM unnest(%s::text[], %s::text[], %s::text[]) AS w(user_id, thread_id, owner) "
        f"{_TAKEN} RETURNING user_id, thread_id",
        (
            seconds,
            [key.user_id for key, _ in wanted],
            [key.thread_id for key, _ in wanted],
            [owner for _, owner in wanted],
        ),
    )
    return {ThreadKey(thread_id, user_id) for user_id, thread_id in await cursor.fetchall()}


def free(s: str, user_id: str, thread_id: str) -> str:
    """SQL true when the thread named by the columns ``user_id``/``thread_id`` has no live lease.

    ``s`` is the quoted schema; the column expressions come from the caller's
    query (e.g. ``"r.user_id"``), so a claim can filter its rows by it.
    """
    return (
        f"NOT EXISTS (SELECT FROM {s}.leases l WHERE l.user_id = {user_id} "
        f"AND l.thread_id = {thread_id} AND l.expires_at >= {NOW})"
    )


async def stamp(conn: AsyncConnection[Any], s: str, key: ThreadKey) -> ThreadStamp | None:
    """The thread's stamp (incarnation and version), None when it does not exist."""
    cursor = await conn.execute(
        f"SELECT incarnation, version FROM {s}.threads WHERE user_id = %s AND thread_id = %s",
        (key.user_id, key.thread_id),
    )
    return stamp_of(key, await cursor.fetchone())


async def renew(
    conn: AsyncConnection[Any], s: str, key: ThreadKey, owner: str, seconds: float
) -> str | None:
    """Extend ``owner``'s lease and return its stop request; ``ThreadBusyError`` if lost."""
    cursor = await conn.execute(
        f"UPDATE {s}.leases SET expires_at = {NOW} + %s "
        "WHERE user_id = %s AND thread_id = %s AND owner = %s RETURNING stop",
        (seconds, key.user_id, key.thread_id, owner),
    )
    row = await cursor.fetchone()
    if row is None:
        raise lease_lost(key, owner)
    return None if row[0] is None else str(row[0])


async def renew_many(
    conn: AsyncConnection[Any], s: str, held: list[tuple[ThreadKey, str]], seconds: float
) -> dict[str, str | None]:
    """Extend each ``(thread, owner)`` lease still held, in one statement.

    Returns each renewed owner's stop request (None: none); an owner missing
    from the answer lost its lease.
    """
    if not held:
        return {}
    cursor = await conn.execute(
        f"UPDATE {s}.leases AS l SET expires_at = {NOW} + %s "
        "FROM unnest(%s::text[], %s::text[], %s::text[]) AS w(user_id, thread_id, owner) "
        "WHERE l.user_id = w.user_id AND l.thread_id = w.thread_id AND l.owner = w.owner "
        "RETURNING l.owner, l.stop",
        (
            seconds,
            [key.user_id for key, _ in held],
            [key.thread_id for key, _ in held],
            [owner for _, owner in held],
        ),
    )
    return {str(owner): stop for owner, stop in await cursor.fetchall()}


async def release(conn: AsyncConnection[Any], s: str, key: ThreadKey, owner: str) -> None:
    """Drop the lease if ``owner`` still holds it."""
    await conn.execute(
        f"DELETE FROM {s}.leases WHERE user_id = %s AND thread_id = %s AND owner = %s",
        (key.user_id, key.thread_id, owner),
    )


async def request_stop(
    conn: AsyncConnection[Any],
    s: str,
    key: ThreadKey,
    request: str,
    owner_prefix: str | None = None,
) -> str | None:
    """Mark the unexpired lease with ``request``; return its holder (None: no one holds it).

    With ``owner_prefix``, only a lease whose owner starts with it is marked.
    """
    cursor = await conn.execute(
        f"UPDATE {s}.leases SET stop = %s WHERE user_id = %s AND thread_id = %s "
        f"AND expires_at >= {NOW} AND starts_with(owner, %s) RETURNING owner",
        (request, key.user_id, key.thread_id, owner_prefix or ""),
    )
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def check_lease(
    conn: AsyncConnection[Any], s: str, key: ThreadKey, owner: str | None
) -> None:
    """Refuse a write fenced by a lease that ``owner`` no longer holds (row locked to commit)."""
    if owner is None:
        return
    cursor = await conn.execute(
        f"SELECT FROM {s}.leases WHERE user_id = %s AND thread_id = %s AND owner = %s FOR SHARE",
        (key.user_id, key.thread_id, owner),
    )
    if await cursor.fetchone() is None:
        raise lease_lost(key, owner)


_REWIND = """
WITH target AS (
    SELECT step, log_length, "values", "window" FROM {s}.checkpoints
    WHERE user_id = %(user)s AND thread_id = %(thread)s AND version = %(to)s
),
cut AS (
    DELETE FROM {s}.messages WHERE user_id = %(user)s AND thread_id = %(thread)s
        AND seq >= (SELECT log_length FROM target)
),
dropped AS (
    DELETE FROM {s}.checkpoints WHERE user_id = %(user)s AND thread_id = %(thread)s
        AND version > %(to)s AND EXISTS (SELECT FROM target)
),
moved AS (
    UPDATE {s}.threads AS t SET version = %(version)s, log_length = target.log_length,
        "values" = target."values", "window" = target."window", updated_at = %(now)s
    FROM target WHERE t.user_id = %(user)s AND t.thread_id = %(thread)s
),
recorded AS (
    INSERT INTO {s}.checkpoints (user_id, thread_id, version, node, step, log_length,
        "values", "window", created_at, parent_version)
    SELECT %(user)s, %(thread)s, %(version)s, '__rollback__', step, log_length,
        "values", "window", %(now)s, %(to)s
    FROM target
)
SELECT FROM target"""
"""The rewind's writes as one statement, all reading checkpoint ``%(to)s``: none when it is gone."""


async def rewind(
    conn: AsyncConnection[Any],
    s: str,
    key: ThreadKey,
    stamp: ThreadStamp,
    to_version: int,
    lease: str | None,
) -> ThreadStamp | None:
    """Cut the thread back to checkpoint ``to_version`` as version ``stamp.version + 1``.

    Run inside a transaction: the thread row stays locked from the stamp
    check to the commit.
    """
    await check_lease(conn, s, key, lease)
    where = (key.user_id, key.thread_id)
    cursor = await conn.execute(
        f"SELECT incarnation, version FROM {s}.threads "
        "WHERE user_id = %s AND thread_id = %s FOR UPDATE",
        where,
    )
    found = stamp_of(key, await cursor.fetchone())
    if found != stamp:
        raise rewind_conflict(key, stamp, found)
    if to_version == 0:
        for table in ("messages", "checkpoints", "threads"):
            await conn.execute(
                f"DELETE FROM {s}.{table} WHERE user_id = %s AND thread_id = %s", where
            )
        return None
    version = stamp.version + 1
    cursor = await conn.execute(
        _REWIND.format(s=s),
        {
            "user": key.user_id,
            "thread": key.thread_id,
            "to": to_version,
            "version": version,
            "now": time.time(),
        },
    )
    if await cursor.fetchone() is None:
        raise missing_checkpoint(key, to_version)
    return ThreadStamp(stamp.incarnation, version)
