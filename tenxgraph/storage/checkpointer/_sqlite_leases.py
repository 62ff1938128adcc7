"""The SQLite checkpointer's lease and rewind statements, each run inside the caller's transaction.

Kept apart from ``sqlite.py`` so the backend's save and load path reads in
one sitting. Lease times are ``time.time()`` seconds: a SQLite file is shared
only by processes of one machine, so they share its clock.
"""

from __future__ import annotations

import sqlite3
import time

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ThreadBusyError
from tenxgraph.storage.checkpointer._codec import (
    lease_lost,
    missing_checkpoint,
    rewind_conflict,
    stamp_of,
)
from tenxgraph.storage.checkpointer._sqlite_rows import inflate_values, inflate_window
from tenxgraph.storage.checkpointer.base import ThreadStamp

__all__ = [
    "LEASES_TABLE",
    "TAKE",
    "TAKE_THREAD",
    "check_lease",
    "delete_log",
    "release",
    "renew",
    "request_stop",
    "rewind",
    "take",
    "take_for_write",
]

LEASES_TABLE = """CREATE TABLE leases (
    user_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires_at REAL NOT NULL,
    stop TEXT,
    PRIMARY KEY (user_id, thread_id)
)"""


TAKE = (
    "INSERT INTO leases (user_id, thread_id, owner, expires_at, stop) "
    "VALUES (?1, ?2, ?3, ?4, NULL) ON CONFLICT (user_id, thread_id) DO UPDATE SET "
    "owner = excluded.owner, expires_at = excluded.expires_at, stop = NULL "
    "WHERE leases.owner = excluded.owner OR leases.expires_at < ?5"
)
"""Take the lease if free, expired or already the owner's (user, thread, owner, expiry, now)."""

TAKE_THREAD = (
    TAKE + " RETURNING "
    "(SELECT incarnation FROM threads WHERE user_id = ?1 AND thread_id = ?2), "
    "(SELECT version FROM threads WHERE user_id = ?1 AND thread_id = ?2)"
)
"""``TAKE`` returning the thread's stamp (no row when the lease is held), in one statement."""


def take(conn: sqlite3.Connection, key: ThreadKey, owner: str, seconds: float) -> str | None:
    """Take the lease if free, expired or ``owner``'s; else return the holder."""
    now = time.time()
    taken = conn.execute(TAKE, (key.user_id, key.thread_id, owner, now + seconds, now)).rowcount
    if taken:
        return None
    row = conn.execute(
        "SELECT owner FROM leases WHERE user_id = ? AND thread_id = ?",
        (key.user_id, key.thread_id),
    ).fetchone()
    return str(row[0])


def take_for_write(conn: sqlite3.Connection, key: ThreadKey, owner: str, seconds: float) -> None:
    """Take the lease inside a save's transaction; ``ThreadBusyError`` if another run holds it."""
    holder = take(conn, key, owner, seconds)
    if holder is not None:
        raise ThreadBusyError(key.thread_id, f"run {holder}; this save, to take it, wrote nothing")


def renew(conn: sqlite3.Connection, key: ThreadKey, owner: str, seconds: float) -> str | None:
    """Extend ``owner``'s lease and return its stop request; ``ThreadBusyError`` if lost."""
    row = conn.execute(
        "UPDATE leases SET expires_at = ? WHERE user_id = ? AND thread_id = ? AND owner = ? "
        "RETURNING stop",
        (time.time() + seconds, key.user_id, key.thread_id, owner),
    ).fetchone()
    if row is None:
        raise lease_lost(key, owner)
    return None if row[0] is None else str(row[0])


def release(conn: sqlite3.Connection, key: ThreadKey, owner: str) -> None:
    conn.execute(
        "DELETE FROM leases WHERE user_id = ? AND thread_id = ? AND owner = ?",
        (key.user_id, key.thread_id, owner),
    )


def request_stop(
    conn: sqlite3.Connection, key: ThreadKey, request: str, owner_prefix: str | None = None
) -> str | None:
    """Mark the unexpired lease with ``request``; return its holder (None: no one holds it).

    With ``owner_prefix``, only a lease whose owner starts with it is marked.
    """
    prefix = owner_prefix or ""
    row = conn.execute(
        "UPDATE leases SET stop = ? WHERE user_id = ? AND thread_id = ? AND expires_at >= ? "
        "AND substr(owner, 1, ?) = ? RETURNING owner",
        (request, key.user_id, key.thread_id, time.time(), len(prefix), prefix),
    ).fetchone()
    return None if row is None else str(row[0])


def check_lease(conn: sqlite3.Connection, key: ThreadKey, owner: str | None) -> None:
    """Refuse a write fenced by a lease that ``owner`` no longer holds."""
    if owner is None:
        return
    row = conn.execute(
        "SELECT 1 FROM leases WHERE user_id = ? AND thread_id = ? AND owner = ?",
        (key.user_id, key.thread_id, owner),
    ).fetchone()
    if row is None:
        raise lease_lost(key, owner)


def delete_log(conn: sqlite3.Connection, tid: int) -> None:
    """Delete the messages and checkpoints of the thread row ``tid``."""
    conn.execute("DELETE FROM messages WHERE tid = ?", (tid,))
    conn.execute("DELETE FROM checkpoints WHERE tid = ?", (tid,))


def rewind(
    conn: sqlite3.Connection,
    key: ThreadKey,
    stamp: ThreadStamp,
    to_version: int,
    lease: str | None,
) -> ThreadStamp | None:
    """Cut the thread back to checkpoint ``to_version`` as version ``stamp.version + 1``."""
    check_lease(conn, key, lease)
    row = conn.execute(
        "SELECT incarnation, version, id FROM threads WHERE user_id = ? AND thread_id = ?",
        (key.user_id, key.thread_id),
    ).fetchone()
    found = stamp_of(key, row)
    if found != stamp:
        raise rewind_conflict(key, stamp, found)
    tid = row[2]
    if to_version == 0:
        delete_log(conn, tid)
        conn.execute("DELETE FROM threads WHERE id = ?", (tid,))
        return None
    target = conn.execute(
        'SELECT step, log_length, "values", "window" FROM checkpoints '
        "WHERE tid = ? AND version = ?",
        (tid, to_version),
    ).fetchone()
    if target is None:
        raise missing_checkpoint(key, to_version)
    step, log_length, values, window = target
    version, now = stamp.version + 1, time.time()
    state_values, state_window = inflate_values(key, values), inflate_window(window, log_length)
    conn.execute("DELETE FROM messages WHERE tid = ? AND seq >= ?", (tid, log_length))
    conn.execute("DELETE FROM checkpoints WHERE tid = ? AND version > ?", (tid, to_version))
    conn.execute(
        'UPDATE threads SET version = ?, log_length = ?, "values" = ?, "window" = ?, '
        "updated_at = ? WHERE id = ?",
        (version, log_length, state_values, state_window, now, tid),
    )
    conn.execute(
        "INSERT INTO checkpoints (tid, version, node, step, log_length, "
        '"values", "window", created_at, parent_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        (tid, version, "__rollback__", step, log_length, values, window, now, to_version),
    )
    return ThreadStamp(stamp.incarnation, version)
