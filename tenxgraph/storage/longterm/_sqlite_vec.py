"""The ``sqlite-vec`` index of a ``SqliteMemoryStore``: nearest vectors without a Python scan.

Python's ``sqlite3`` often cannot load extensions (this machine's cannot),
so the index is opened through ``apsw`` (extra ``vectors``), which bundles
its own SQLite. Two SQLite libraries must never open one file in one
process (POSIX locks are per process: closing the file in one releases the
other's locks, and a concurrent writer can corrupt it), and the store's file
is often the checkpointer's too. So the index lives in a file of its own
beside the store's (``app.db`` -> ``app.db.vec``), opened only by apsw.

**The items stay the truth.** Each item's vector is still stored in
``memory_items`` (the same transaction as the item); this file is derived
from them: written after the item commits, and brought up to date with
them (missing rows added, stale ones replaced, gone ones dropped) when a
store first opens it. A search asks the index for the nearest rowids, then
reads those items from the store's file, checking tenant, prefix and expiry
again, so an index row that outlived its item is never returned. What a
crash between the two writes leaves (an item without its index row) is
repaired at the next open.

Layout: one ``vec0`` table per vector length (``vectors_256``...):
``user_id`` is the partition key (a search reads its tenant's chunks
only); ``expires_at`` (``inf``: never) and ``p1``, ``p2``, ``p3`` (a 64-bit
hash of the namespace's first one, two, three parts; 0 where it has fewer)
are metadata columns that KNN filters on; ``updated_at`` is an auxiliary
column that orders concurrent writes (an older write never replaces a
newer one). vec0 compares long text metadata only for equality, hence
hashes rather than a range over the namespace text; a prefix of more than
``DEPTH`` parts is left to the brute-force scan. Chunks hold 64 vectors:
a chunk is allocated per tenant, and most tenants have few memories.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tenxgraph.errors import ConfigError, StorageError

if TYPE_CHECKING:
    import apsw

__all__ = [
    "IndexRow",
    "VecIndex",
    "available",
    "check_available",
    "covers",
    "index_path",
    "prefix_hashes",
]

IndexRow = tuple[int, str, str, float | None, float, bytes]
"""rowid, user_id, namespace, expires_at, updated_at, packed vector."""

CHUNK = 64
"""Vectors per vec0 chunk (a multiple of 8)."""

DEPTH = 3
"""The longest namespace prefix the index filters on (parts)."""


def available() -> str | None:
    """None if ``sqlite-vec`` and ``apsw`` import; else what is missing."""
    try:
        import apsw  # noqa: F401
        import sqlite_vec  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install 'tenxgraph[vectors]')"
    return None


def index_path(path: str) -> str:
    """The index file beside the store's (``:memory:`` stays in memory)."""
    return path if path == ":memory:" else path + ".vec"


def _hash(prefix: str) -> int:
    return int.from_bytes(
        hashlib.blake2b(prefix.encode(), digest_size=8).digest(), "big", signed=True
    )


def prefix_hashes(namespace: str) -> list[int]:
    """``p1..p3`` of a stored namespace: hashes of its first parts (0 past its length)."""
    parts = namespace.split("/")
    return [_hash("/".join(parts[:depth])) if depth <= len(parts) else 0 for depth in (1, 2, 3)]


def covers(prefix: str) -> bool:
    """Whether the index can filter on this stored prefix text."""
    return not prefix or prefix.count("/") < DEPTH


class VecIndex:
    """The nearest-vector index of one store: a vec0 table in a file of its own, behind a lock."""

    def __init__(self, path: str, dimensions: int, timeout: float) -> None:
        """Open nothing yet: the file is opened (and created) on first use."""
        self.path = path
        self.dimensions = dimensions
        self.timeout = timeout
        self._table = f"vectors_{dimensions}"
        self._lock = threading.Lock()
        self._conn: apsw.Connection | None = None

    @contextmanager
    def _connection(self) -> Iterator[apsw.Connection]:
        import apsw

        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._open()
                yield self._conn
            except apsw.Error as exc:
                raise StorageError(f"sqlite-vec ({self.path}): {exc}") from exc

    def _open(self) -> apsw.Connection:
        import apsw
        import sqlite_vec

        conn = apsw.Connection(self.path)
        try:
            conn.set_busy_timeout(int(self.timeout * 1000))
            conn.enable_load_extension(True)
            conn.load_extension(sqlite_vec.loadable_path())
            conn.enable_load_extension(False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # derived data: a lost tail is repaired
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._table} USING vec0("
                "user_id text partition key, expires_at float, p1 integer, p2 integer, "
                "p3 integer, "
                f"embedding float[{self.dimensions}] distance_metric=cosine, "
                f"+updated_at float, chunk_size={CHUNK})"
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def sync(
        self,
        items: Iterable[tuple[int, float, float | None]],
        fetch: Callable[[list[int]], list[IndexRow]],
    ) -> int:
        """Bring the index up to ``(rowid, updated_at, expires_at)`` of the items with a vector.

        The expiry is compared too: a read that restarted an item's ttl changes
        it without a new ``updated_at``. ``fetch(rowids)`` returns their
        ``IndexRow``s. Returns the rows changed.
        """
        wanted = {rowid: (at, math.inf if ends is None else ends) for rowid, at, ends in items}
        with self._connection() as conn:
            rows = conn.execute(f"SELECT rowid, updated_at, expires_at FROM {self._table}")
            held = {int(r[0]): (float(r[1]), float(r[2])) for r in rows}
        gone = [rowid for rowid in held if rowid not in wanted]
        stale = [rowid for rowid, stamp in wanted.items() if held.get(rowid) != stamp]
        with self._connection() as conn, conn:
            for rowid in gone:
                conn.execute(f"DELETE FROM {self._table} WHERE rowid = ?", (rowid,))
        for start in range(0, len(stale), 500):
            self.write(fetch(stale[start : start + 500]))
        return len(gone) + len(stale)

    def write(self, rows: Iterable[IndexRow]) -> None:
        """Insert or replace each row, unless the index holds a newer write of it."""
        with self._connection() as conn, conn:
            for rowid, user_id, namespace, expires_at, updated_at, vector in rows:
                held = conn.execute(
                    f"SELECT updated_at FROM {self._table} WHERE rowid = ?", (rowid,)
                ).fetchall()
                if held and float(held[0][0]) > updated_at:  # type: ignore[arg-type]
                    continue
                if held:
                    conn.execute(f"DELETE FROM {self._table} WHERE rowid = ?", (rowid,))
                expiry = math.inf if expires_at is None else expires_at
                conn.execute(
                    f"INSERT INTO {self._table} (rowid, user_id, expires_at, p1, p2, p3, "
                    "embedding, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (rowid, user_id, expiry, *prefix_hashes(namespace), vector, updated_at),
                )

    def expire(self, rows: Iterable[tuple[int, float]]) -> None:
        """Set each ``(rowid, expires_at)``: a read started the item's ttl again."""
        with self._connection() as conn, conn:
            for rowid, expires_at in rows:
                conn.execute(
                    f"UPDATE {self._table} SET expires_at = ? WHERE rowid = ?", (expires_at, rowid)
                )

    def remove(self, rows: Iterable[tuple[int, float]]) -> None:
        """Drop each ``(rowid, updated_at)`` unless a newer write of the rowid replaced it."""
        with self._connection() as conn, conn:
            for rowid, updated_at in rows:
                conn.execute(
                    f"DELETE FROM {self._table} WHERE rowid = ? AND updated_at <= ?",
                    (rowid, updated_at),
                )

    def nearest(
        self, user_id: str, prefix: str, now: float, query: bytes, k: int
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest live rows of the tenant under the prefix: ``(rowid, cosine)``.

        The prefix must be one the index ``covers``; a hash may collide, so
        the caller checks the prefix again on the items.
        """
        where, params = "", []
        if prefix:
            where, params = f" AND p{prefix.count('/') + 1} = ?", [_hash(prefix)]
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT rowid, distance FROM {self._table} WHERE embedding MATCH ? AND k = ? "
                f"AND user_id = ? AND expires_at > ?{where}",
                (query, k, user_id, now, *params),
            ).fetchall()
        return [(int(rowid), 1.0 - float(distance)) for rowid, distance in rows]  # type: ignore[arg-type]

    def close(self) -> None:
        """Close the file (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def check_available(wanted: bool | None) -> bool:
    """Whether to use the index: ``None`` when installed, ``True`` must be, ``False`` never."""
    missing = available()
    if wanted and missing is not None:
        raise ConfigError(f"vector_index=True needs sqlite-vec: {missing}")
    return bool(wanted is not False and missing is None)
