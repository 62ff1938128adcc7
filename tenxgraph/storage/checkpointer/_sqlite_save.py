"""The SQLite checkpointer's save: one transaction, and what an instance remembers of it.

A save is ``BEGIN IMMEDIATE``, the compare-and-swap of the state row (the
lease's fence folded into it), the log's new rows, the checkpoint's row and
``COMMIT``. The state row's CAS needs the thread's row id and log length for
the rows after it: a first save reads them back (``RETURNING``), found
through the ``(user_id, thread_id)`` index. ``SqliteSaves`` remembers them
with the stamp the save left, so the instance's next save of that thread,
made from that stamp, updates the row by its id and counts the changed rows
instead (about half the statement's cost). That statement still compares the
stored incarnation, version and log length, so for a thread changed by
anyone else since (another process, a rewind, a delete) it changes nothing,
and the save goes on with the first form, which fails or succeeds as before.
"""

from __future__ import annotations

import sqlite3
import time

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer import _sqlite_leases as leases
from tenxgraph.storage.checkpointer._codec import (
    EncodedWrite,
    check_window,
    conflict,
    stamp_of,
)
from tenxgraph.storage.checkpointer._sqlite_rows import pack_values, pack_window
from tenxgraph.storage.checkpointer.base import ThreadStamp, ThreadWrite

__all__ = ["SqliteSaves", "stored_stamp"]

_INSERT_THREAD = (
    "INSERT INTO threads (user_id, thread_id, incarnation, version, log_length, "
    '"values", "window", metadata, created_at, updated_at) '
    "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id, log_length"
)

_INSERT_THREAD_FENCED = (
    "INSERT INTO threads (user_id, thread_id, incarnation, version, log_length, "
    '"values", "window", metadata, created_at, updated_at) '
    "SELECT ?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, ?9 WHERE EXISTS "
    "(SELECT 1 FROM leases WHERE user_id = ?1 AND thread_id = ?2 AND owner = ?10) "
    "ON CONFLICT DO NOTHING RETURNING id, log_length"
)
"""Create the thread if the lease is still the write's (WHERE: not a join's ON CONFLICT)."""

_SET = (
    "UPDATE threads SET version = version + 1, log_length = log_length + ?, "
    '"values" = ?, "window" = ?, metadata = coalesce(?, metadata), updated_at = ? '
)
_FENCE = "AND EXISTS (SELECT 1 FROM leases WHERE user_id = ? AND thread_id = ? AND owner = ?) "
"""A lease fencing the CAS: a lost lease fails it as a lost race does."""
_CAS = _SET + "WHERE user_id = ? AND thread_id = ? AND incarnation = ? AND version = ? "
_UPDATE_THREAD = _CAS + "RETURNING id, log_length"
_UPDATE_THREAD_FENCED = _CAS + _FENCE + "RETURNING id, log_length"
_CAS_BY_ID = _SET + "WHERE id = ? AND incarnation = ? AND version = ? AND log_length = ? "
_CAS_BY_ID_FENCED = _CAS_BY_ID + _FENCE
"""The CAS of a row whose id and log length the instance remembers: no index search, no
``RETURNING`` (the changed-row count says whether it won)."""

_INSERT_MESSAGE = "INSERT INTO messages (tid, seq, mid, ts, body) VALUES (?, ?, ?, ?, ?)"
_INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (tid, version, node, step, log_length, "
    '"values", "window", created_at, parent_version) '
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

REMEMBERED = 1_024
"""Threads whose row id and log length an instance remembers (the least recently saved go)."""


class SqliteSaves:
    """Writes an instance's saves; remembers each saved thread's row id and log length."""

    def __init__(self, keep_checkpoints: int | None) -> None:
        self.keep = keep_checkpoints
        self._rows: dict[tuple[str, str], tuple[str, int, int, int]] = {}
        """By (user_id, thread_id): the incarnation and version a save left, with the row's
        id and log length then. Read and written only inside a save (the instance's lock)."""

    def write(
        self, conn: sqlite3.Connection, key: ThreadKey, write: ThreadWrite, encoded: EncodedWrite
    ) -> ThreadStamp:
        """CAS the state row, append, record the checkpoint: one transaction.

        Three statements between ``BEGIN`` and ``COMMIT`` (one more to take the lease,
        one to give it up), whether it creates the thread or updates it; the lease
        and the stamp are read apart only when the write fails, to say why.
        """
        added = len(encoded.messages)
        version = write.expected_version + 1
        now = time.time()
        lease = write.lease
        conn.execute("BEGIN IMMEDIATE")  # a failure is rolled back by the database's _run
        if lease is not None and write.take_lease is not None:
            leases.take_for_write(conn, key, lease, write.take_lease)
        if write.expected_version == 0:
            row = self._create(conn, key, encoded, added, now, lease)
        else:
            row = self._update(conn, key, write, encoded, added, now)
        if row is None:
            leases.check_lease(conn, key, lease)
            raise conflict(key, write, encoded.incarnation, stored_stamp(conn, key))
        tid, length = row
        check_window(key, write.window, length)
        base = length - added
        if added == 1:  # the usual save: one row, without executemany's iterator
            conn.execute(_INSERT_MESSAGE, (tid, base, *encoded.messages[0].body))
        else:
            conn.executemany(
                _INSERT_MESSAGE,
                [(tid, base + index, *r.body) for index, r in enumerate(encoded.messages)],
            )
        checkpoint = (tid, version, write.node, write.step, length, pack_values(encoded.values))
        window = pack_window(encoded.window, write.window, length)
        conn.execute(_INSERT_CHECKPOINT, (*checkpoint, window, now, encoded.parent))
        if self.keep is not None:
            conn.execute(
                "DELETE FROM checkpoints WHERE tid = ? AND version <= ?", (tid, version - self.keep)
            )
        if write.release_lease and lease is not None:
            leases.release(conn, key, lease)
        conn.execute("COMMIT")
        self._remember(key, (encoded.incarnation, version, tid, length))
        return ThreadStamp(encoded.incarnation, version)

    def _create(
        self,
        conn: sqlite3.Connection,
        key: ThreadKey,
        encoded: EncodedWrite,
        added: int,
        now: float,
        lease: str | None,
    ) -> tuple[int, int] | None:
        columns = (key.user_id, key.thread_id, encoded.incarnation, added, encoded.values)
        more = (encoded.window, encoded.metadata or "{}", now, now)
        params = (*columns, *more) if lease is None else (*columns, *more, lease)
        statement = _INSERT_THREAD if lease is None else _INSERT_THREAD_FENCED
        row: tuple[int, int] | None = conn.execute(statement, params).fetchone()
        return row

    def _update(
        self,
        conn: sqlite3.Connection,
        key: ThreadKey,
        write: ThreadWrite,
        encoded: EncodedWrite,
        added: int,
        now: float,
    ) -> tuple[int, int] | None:
        incarnation, expected, lease = encoded.incarnation, write.expected_version, write.lease
        values = (added, encoded.values, encoded.window, encoded.metadata, now)
        fence = () if lease is None else (key.user_id, key.thread_id, lease)
        held = (key.user_id, key.thread_id)
        known = self._rows.get(held)
        if known is not None and known[0] == incarnation and known[1] == expected:
            tid, length = known[2], known[3]
            statement = _CAS_BY_ID if lease is None else _CAS_BY_ID_FENCED
            where_id = (tid, incarnation, expected, length)
            if conn.execute(statement, (*values, *where_id, *fence)).rowcount == 1:
                return tid, length + added
            del self._rows[held]  # the statement below fails (or not) as it always did
        statement = _UPDATE_THREAD if lease is None else _UPDATE_THREAD_FENCED
        where = (key.user_id, key.thread_id, incarnation, expected)
        row: tuple[int, int] | None = conn.execute(statement, (*values, *where, *fence)).fetchone()
        return row

    def _remember(self, key: ThreadKey, row: tuple[str, int, int, int]) -> None:
        rows, held = self._rows, (key.user_id, key.thread_id)
        if rows.pop(held, None) is None and len(rows) >= REMEMBERED:
            del rows[next(iter(rows))]  # the least recently saved
        rows[held] = row


def stored_stamp(conn: sqlite3.Connection, key: ThreadKey) -> ThreadStamp | None:
    """The thread's stored stamp (None: no thread), read in the caller's transaction."""
    return stamp_of(
        key,
        conn.execute(
            "SELECT incarnation, version FROM threads WHERE user_id = ? AND thread_id = ?",
            (key.user_id, key.thread_id),
        ).fetchone(),
    )
