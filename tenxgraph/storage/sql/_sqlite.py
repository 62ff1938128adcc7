"""``SqliteDatabase``: one SQLite file in WAL mode, one connection per instance behind a lock.

The connection is opened on first use with a busy timeout (how long a write
waits for another process's lock), switched to WAL, and brought up to date:
every component's migrations run in one ``BEGIN IMMEDIATE`` transaction, so
two processes opening a fresh file take turns. Callers run the blocking
calls in a worker thread (``asyncio.to_thread``), one at a time per instance.

``synchronous=NORMAL`` (the usual WAL setting): a committed transaction
survives a killed process; after a power cut the last few commits may be
lost. The WAL is folded into the file every 256 pages and truncated to 1 MB,
so the files stay small while open. sqlite3 errors surface as
``StorageError`` naming the file; the original is the cause.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

from tenxgraph.errors import StorageError
from tenxgraph.storage.sql._migrations import Component, Steps, migrate, prepare, sqlite_dialect

__all__ = ["SqliteDatabase"]


class SqliteDatabase:
    """One SQLite file: a locked connection, transactions, and the components' migrations."""

    def __init__(
        self, path: str | os.PathLike[str], *, components: Sequence[Component], timeout: float
    ) -> None:
        """Use (and create on first use) the file at ``path``, with a ``timeout`` s busy wait."""
        self.path = os.fspath(path)
        self.components = tuple(components)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """The instance's connection, held exclusively; opened and migrated on first use."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._open()
                yield self._conn
            except sqlite3.Error as exc:
                raise StorageError(f"sqlite ({self.path}): {exc}") from exc

    @contextmanager
    def transaction(
        self, mode: Literal["DEFERRED", "IMMEDIATE"] = "DEFERRED"
    ) -> Iterator[sqlite3.Connection]:
        """The connection inside one transaction (``IMMEDIATE``: the write lock from the start)."""
        with self.connection() as conn, transaction(conn, mode):
            yield conn

    def close(self) -> None:
        """Close the connection (after the call in progress); a later call opens it again."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            _enable_wal(conn, self.timeout)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=256")
            conn.execute("PRAGMA journal_size_limit=1048576")
            dialect = sqlite_dialect(f"sqlite ({self.path})")
            with transaction(conn, "IMMEDIATE"):
                run_sync(conn, prepare(dialect, self.components))
                for component in self.components:
                    run_sync(conn, migrate(dialect, component))
        except BaseException:
            conn.close()
            raise
        return conn


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL, retrying while another process does the same.

    On a fresh file SQLite can answer a concurrent journal-mode change with
    "database is locked" at once, without waiting for the busy timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextmanager
def transaction(conn: sqlite3.Connection, mode: str) -> Iterator[None]:
    """``BEGIN mode`` ... ``COMMIT``, rolled back on any exception."""
    conn.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def run_sync(conn: sqlite3.Connection, steps: Steps) -> None:
    """Drive a migration runner on ``conn``."""
    try:
        query = next(steps)
        while True:
            query = steps.send(conn.execute(*query).fetchall())
    except StopIteration:
        return
